// The serving-request suite: request mixes served by Hugging Face transformers' continuous
// batching (paged|sdpa, CUDA graphs) on a GPU, recorded by validation/measure/serve_requests.py
// and compacted by compact_serve_requests.py, against `gpusim serve` running the same requests
// through the engine preset configs/engines/hf-paged-sdpa-graphs.yaml: p50 and p90 time to first
// token and time per output token, and the share of step time that is GPU work.
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// Four latency rows per measured run; ConfigError on a malformed file. `config_dir` holds the
// engine and model presets (configs/).
std::vector<Comparison> compare_serve_requests(const std::filesystem::path& file,
                                               const std::filesystem::path& config_dir, const hw::HardwareSpec& hw,
                                               const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
