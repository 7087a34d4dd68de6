// The model suite: Hugging Face transformers models measured on a real GPU, one forward step
// (prefill or decode) or a whole greedy generate call per case
// (validation/measure/hf_models.py -> validation/data/hf_models_<gpu>.json). Each case is
// simulated from its config.json with the hf-eager lowering and compared on kernel_time_us,
// the sum of kernel durations over the case. A MoE case with a recorded `routing` (tokens per
// expert, per MoE layer) is simulated with it as its routing trace (expert_weights_by_layer).
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// Reads the cases of `json` (config paths relative to its folder), simulates each in graph
// mode and compares. Family: "<model type> <phase>". ConfigError on a malformed file.
std::vector<Comparison> compare_measured_models(const std::filesystem::path& json,
                                                const hw::HardwareSpec& hw,
                                                const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
