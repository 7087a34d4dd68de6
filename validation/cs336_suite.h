// The cs336 suites: forward passes of the cs336_basics model structure measured on a GPU
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

// Forward+backward steps of the same model (validation/measure/cs336_train.py ->
// validation/data/cs336_train_<gpu>.json: fp32, no optimizer step), each simulated as a
// cs336-basics training step with `optimizer: none` and compared per phase (the forward with
// the loss, the backward: kernel time; families "cs336-train-forward", "cs336-train-backward"),
// on the step's kernel time ("cs336-train-step") and on memory above the persistent state
// (MiB, "cs336-train-memory"): the step's peak, and what is allocated when the backward starts
// (autograd's saved activations and the loss).
std::vector<Comparison> compare_cs336_train_steps(const std::filesystem::path& json,
                                                  const std::filesystem::path& models_dir, const hw::HardwareSpec& hw,
                                                  const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
