// Loads a HardwareSpec: resolves `--hw` (preset name, alias or YAML path), follows `base:`
// inheritance, applies `--set hw.KEY=VALUE` overrides, and validates every key.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "hw/hardware_spec.h"
#include "hw/preset_catalog.h"

namespace gpusim::hw {

// One `--set hw.KEY=VALUE`, with the "hw." prefix removed: {"l2.size", "128MiB"}.
struct HardwareOverride {
  std::string key;
  std::string value;
};

// `name_or_path` is a preset name or alias from the catalog, or a path to a YAML file
// (anything containing '/' or ending in .yaml/.yml is taken as a path).
// Bad input of any kind is a ConfigError naming file, line and key path.
HardwareSpec load_hardware(std::string_view name_or_path, const PresetCatalog& catalog,
                           std::span<const HardwareOverride> overrides = {});

}  // namespace gpusim::hw
