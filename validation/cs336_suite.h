// The cs336 suite: forward passes of the cs336_basics model structure measured on a GPU
// (validation/measure/cs336_forward.py -> validation/data/cs336_forward_<gpu>.json: fp32, batch
// 4, the small, medium and large models at several lengths), each simulated with the
// cs336-basics lowering and compared on kernel time (the sum of kernel durations of a forward).
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// `models_dir` holds the cs336-* model presets. ConfigError on a malformed file.
std::vector<Comparison> compare_cs336_forwards(const std::filesystem::path& json, const std::filesystem::path& models_dir,
                                               const hw::HardwareSpec& hw, const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
