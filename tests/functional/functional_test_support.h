// Helpers for the functional-kernel tests: the h100 preset, random inputs with fixed seeds.
#pragma once

#include <filesystem>

#include "hw/hardware_loader.h"
#include "hw/preset_catalog.h"
#include "validation/functional/tensor.h"

namespace gpusim::functional::testing {

inline const hw::HardwareSpec& preset(const std::string& name) {
  static const hw::HardwareSpec h100 = hw::load_hardware(
      "h100", hw::PresetCatalog(std::filesystem::path(GPUSIM_REPO_DIR) / "configs" / "hw"));
  static const hw::HardwareSpec a100 = hw::load_hardware(
      "a100", hw::PresetCatalog(std::filesystem::path(GPUSIM_REPO_DIR) / "configs" / "hw"));
  return name == "a100" ? a100 : h100;
}
inline const hw::HardwareSpec& h100() { return preset("h100"); }

// fp32 accumulation of well-scaled inputs stays far below this; see each test for exceptions.
constexpr double kFp32Tolerance = 1e-5;
constexpr std::int64_t kBf16 = 2;  // storage bytes the byte counts use (the modeled dtype)

}  // namespace gpusim::functional::testing
