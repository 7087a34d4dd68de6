// Fitting a host to gpusim: the host section of a hardware preset (workloads/host_issue.h) from
// one session's host characterization, a "layers" sweep of validation/measure/host_walls.py
// (or host_costs.py): per model family, forwards with 1, 2 and 4 decoder layers (B=1, 16
// tokens), each with its measured host issue time. Every forward is lowered with gpusim's own
// hf-eager lowering on the given chip, and host time is fitted (least squares) as
//   host_us = forward_fixed + kernels x model_kernel_issue
// over gpusim's kernel counts, so the fitted host drives gpusim's kernels as measured.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "workloads/workload.h"

namespace gpusim::validation {

// One measured forward of the sweep, as a workload gpusim can simulate.
struct HostSample {
  std::string label;        // "llama3.2-1b 2L decode B=1 16 tokens"
  std::string family;       // "<model type> <phase>"
  double host_us = 0;       // host issue time: a synced start to forward's return
  double wall_us = 0;       // CUDA events around the forward
  std::int64_t measured_kernels = 0;
  workloads::ModelWorkload workload;
};

// The "layers" entries of a host_walls / host_costs JSON file (config paths relative to the
// folder above validation/data). ConfigError naming the file and key on malformed input.
std::vector<HostSample> read_host_sweep(const std::filesystem::path& json);
// The same from the file's parsed document (`json` names it in errors and locates the configs).
std::vector<HostSample> read_host_sweep(const nlohmann::json& doc, const std::filesystem::path& json);

struct HostFit {
  double forward_fixed_us = 0;       // not below 0
  double model_kernel_issue_us = 0;
  double host_mape_pct = 0;          // of the fitted line against the samples' host time
  std::size_t samples = 0;
};

// Counts gpusim's kernels of every sample on `hw` and fits the line. ConfigError when fewer
// than two distinct kernel counts make a line.
HostFit fit_host(const std::vector<HostSample>& samples, const hw::HardwareSpec& hw,
                 const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
