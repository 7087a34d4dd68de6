#include "hw/preset_catalog.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "hw/yaml_document.h"
#include "sim/error.h"
#include "sim/parsed_file_cache.h"

namespace gpusim::hw {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

PresetInfo parse_preset_info(const std::filesystem::path& file, const std::string& text) {
  const YamlDocument doc = YamlDocument::from_string(text, file.string());
  if (!doc.root().IsMap()) doc.fail(doc.root(), "(document)", "expected a mapping");
  PresetInfo info{file.stem().string(), {}, {}, file};
  if (const YAML::Node d = doc.root()["description"]; d.IsDefined()) {
    info.description = scalar_text(doc, d, "description");
  }
  if (const YAML::Node a = doc.root()["aliases"]; a.IsDefined()) {
    if (!a.IsSequence()) doc.fail(a, "aliases", "expected a list of short names");
    for (std::size_t i = 0; i < a.size(); ++i) {
      info.aliases.push_back(scalar_text(doc, a[i], "aliases[" + std::to_string(i) + "]"));
    }
  }
  // For listings only (load_hardware validates): how many GPUs a system file says it has.
  if (const YAML::Node y = doc.root()["system"]; y.IsDefined() && y.IsMap()) {
    int gpus = 1, nodes = 1;
    if (const YAML::Node g = y["gpus"]; g.IsDefined() && g.IsScalar()) gpus = std::max(1, g.as<int>(1));
    if (const YAML::Node n = y["nodes"]; n.IsDefined() && n.IsScalar()) nodes = std::max(1, n.as<int>(1));
    info.gpus = gpus * nodes;
  }
  return info;
}

// Every command lists the presets to resolve a name; parsing them all was most of a short call's
// time, so each file's entry is kept while its text is unchanged.
PresetInfo preset_info(const std::filesystem::path& file) {
  static ParsedFileCache<PresetInfo> cache;
  return *cache.get(file, [&file](const std::string& text) { return parse_preset_info(file, text); });
}

}  // namespace

PresetCatalog::PresetCatalog(std::filesystem::path dir) : PresetCatalog(std::vector{std::move(dir)}) {}

PresetCatalog::PresetCatalog(std::vector<std::filesystem::path> dirs) : dir_(dirs.at(0)) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec)) {
    throw ConfigError(dir_.string(), 0, "", "hardware preset folder not found");
  }
  for (const auto& dir : dirs) {
    if (!std::filesystem::is_directory(dir, ec)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    for (const auto& f : files) presets_.push_back(preset_info(f));
  }
  std::sort(presets_.begin(), presets_.end(),
            [](const PresetInfo& a, const PresetInfo& b) { return a.name < b.name; });

  std::map<std::string, std::string> owner;  // lower-cased name or alias -> preset
  for (const auto& p : presets_) {
    if (const auto [it, inserted] = owner.emplace(lower(p.name), p.name); !inserted) {
      throw ConfigError(p.file.string(), 0, "name", "'" + p.name + "' is also the name of another preset");
    }
  }
  for (const auto& p : presets_) {
    for (const auto& alias : p.aliases) {
      const auto [it, inserted] = owner.emplace(lower(alias), p.name);
      if (!inserted) {
        throw ConfigError(p.file.string(), 0, "aliases",
                          "'" + alias + "' already names preset " + it->second);
      }
    }
  }
}

const PresetInfo* PresetCatalog::find(std::string_view name_or_alias) const {
  const std::string key = lower(name_or_alias);
  for (const auto& p : presets_) {
    if (lower(p.name) == key) return &p;
    for (const auto& alias : p.aliases) {
      if (lower(alias) == key) return &p;
    }
  }
  return nullptr;
}

std::string PresetCatalog::summary() const {
  std::string out;
  for (const auto& p : presets_) {
    out += (out.empty() ? "" : ", ") + p.name;
    if (!p.aliases.empty()) {
      std::string a;
      for (const auto& alias : p.aliases) a += (a.empty() ? "" : ", ") + alias;
      out += " (" + a + ")";
    }
  }
  return out;
}

}  // namespace gpusim::hw
