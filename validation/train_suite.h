// The training suites: Hugging Face training steps measured on a GPU
// (validation/measure/hf_train.py -> validation/data/hf_train_<gpu>.json), each simulated as a
// `phase: train` workload from the case's own config (validation/data/hf_configs/train_<id>.json)
// and compared per phase (forward with the loss, backward, optimizer: kernel time), on the whole
// step's kernel time, and on the step's memory peak above the persistent state (activations and
// gradients: gpusim's activation peak).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// Cases gpusim does not lower yet (mixed precision, GPT-2's LayerNorm and GELU) are counted in
// `not_modeled`, not compared. ConfigError on a malformed file.
std::vector<Comparison> compare_train_steps(const std::filesystem::path& json, const hw::HardwareSpec& hw,
                                            const models::KernelModelRegistry& models, int& not_modeled);

// Eager wall time of the same steps (`--mode eager`: the host section's forward, backward and
// optimizer costs beside the GPU) against each case's measured wall time (CUDA events around an
// unprofiled step, host included), over one GPU's measurement files.
std::vector<Comparison> compare_train_walls(const std::vector<std::filesystem::path>& files,
                                            const hw::HardwareSpec& hw, const models::KernelModelRegistry& models,
                                            int& not_modeled);

}  // namespace gpusim::validation
