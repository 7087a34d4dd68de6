// The hardware presets shipped in configs/hw/ (one YAML file per chip) and configs/systems/ (one
// per system of several chips), found by file name or by one of the short names its `aliases:`
// key lists (h100 -> h100-sxm5).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gpusim::hw {

struct PresetInfo {
  std::string name;  // the file stem
  std::vector<std::string> aliases;
  std::string description;
  std::filesystem::path file;
  int gpus = 1;  // a system file's system.gpus x system.nodes as it writes them (1 for a chip)
};

class PresetCatalog {
 public:
  // Reads the name, aliases and description of every *.yaml in `dir`, sorted by name.
  // Aliases that collide with another preset's name or alias are a ConfigError.
  explicit PresetCatalog(std::filesystem::path dir);
  // Several folders (chips, then systems); names and aliases must be unique over all of them.
  // Folders after the first may be missing.
  explicit PresetCatalog(std::vector<std::filesystem::path> dirs);

  const std::filesystem::path& dir() const { return dir_; }
  const std::vector<PresetInfo>& presets() const { return presets_; }
  // By name or alias, case-insensitively; nullptr when none matches.
  const PresetInfo* find(std::string_view name_or_alias) const;
  // "a100-sxm4-80gb (a100), h100-sxm5 (h100), ...", for messages.
  std::string summary() const;

 private:
  std::filesystem::path dir_;
  std::vector<PresetInfo> presets_;
};

}  // namespace gpusim::hw
