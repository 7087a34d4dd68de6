// The tensor-parallel step suite (issue 20): Megatron-split Llama-3-8B- and 70B-shaped layers
// measured on 1, 2 and 4 H100s by validation/measure/tp_steps.py (validation/data/
// tp_steps_h100_tp{1,2,4}.json), reproduced as op-level workloads of that script's own layer
// (its ops in its order, bf16) on a system preset with the measured TP degree. Per case two
// rows: the CUDA-graph step (`graph_step_us`, every rank's median, the slowest rank) against the
// simulated graph step, and rank 0's compute kernels (every kernel but NCCL's, whose profiled
// time includes waiting for the other ranks' eager launches) against the simulated ones.
// Split, fixed before any comparison was seen: TP 1 and 2 calibration, TP 4 held out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"
#include "workloads/workload.h"

namespace gpusim::validation {

// tp_steps.py's layer, `layers` times, for one case: `model` "llama3-8b" or "llama3-70b",
// `phase` "prefill" (batch x length tokens, causal) or "decode" (one token against a cache of
// `length`), split over `tp` GPUs. ConfigError for another model or phase.
workloads::OpWorkload tp_layer_workload(const std::string& model, const std::string& phase, std::int64_t batch,
                                        std::int64_t length, int tp, int layers);

// One graph-step row and one compute-kernel row per measured case of `files`. With
// `never_fitted` (files no constant was fitted to, such as the H200's) every row is held out.
std::vector<Comparison> compare_tp_steps(const std::vector<std::filesystem::path>& files, const hw::HardwareSpec& hw,
                                         const models::KernelModelRegistry& models, bool never_fitted = false);

}  // namespace gpusim::validation
