// The serving-step suite: continuous-batching steps (ragged batches of prefill chunks and
// decodes) measured on a GPU by validation/measure/serve_steps.py (a minimal serving engine in
// PyTorch: Inductor-fused norms, RoPE and activation, cuBLAS GEMMs, FlashAttention-2's varlen
// forward), against the fused lowering's ragged step (workloads/ragged_attention.h) as
// `gpusim serve` times it, kernel time against kernel time.
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// One row per measured case; ConfigError on a malformed file.
std::vector<Comparison> compare_serve_steps(const std::filesystem::path& file, const hw::HardwareSpec& hw,
                                            const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
