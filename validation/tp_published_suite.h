// Published tensor-parallel serving figures (validation/data/published_multi_gpu.json,
// `tp_decode`: vLLM, NVIDIA NIM, TensorRT-LLM and Azure's TensorRT-LLM runs of 70B Llama models on
// 2-8 H100 or H200) against gpusim model workloads set up as each entry says: the model preset,
// batch, prompt and output lengths, precision and TP degree, the fused lowering (a serving
// engine's kernels), CUDA-graph launches, on dgx-h100 (H100 entries) or hgx-h200 (H200). Every
// row is held out: nothing was fitted to these figures. Entries whose setup gpusim cannot
// reproduce say so in their label (approximate) or are listed as not simulated, with the reason.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

struct PublishedTpComparison {
  std::vector<Comparison> rows;
  std::vector<std::string> not_simulated;  // "<entry>: <why>", one per entry left out
};

PublishedTpComparison compare_published_tp(const std::filesystem::path& json, const std::filesystem::path& models_dir,
                                           const hw::HardwareSpec& h100_system, const hw::HardwareSpec& h200_system,
                                           const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
