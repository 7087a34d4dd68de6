// The simulations behind `gpusim report`: a model's prefill step over a batch x sequence grid
// and its decode step per batch, each cell sized first (MemoryFootprint) and simulated only
// when it fits. Cells are independent simulations run side by side with TBB; results are
// stored by cell index, so the grid is identical whatever the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "src/markdown_report.h"
#include "src/run_report.h"
#include "workloads/workload.h"

namespace gpusim::cli {

// A run reduced to the figures the report prints (time-weighted occupancy, byte and FLOP sums,
// classes, categories, the 10 costliest kernels).
StepProfile profile_step(const RunReport& report);

struct GridOptions {
  std::vector<std::int64_t> batches, seq_lens;  // prefill grid
  std::int64_t decode_seq_len = 0;              // KV length of the decode steps
  hw::LaunchMode mode = hw::LaunchMode::kGraph;
  bool reuse = true;  // cells share kernel outcomes (hw/kernel_outcome_cache.h); off: from scratch
  // Called once per finished cell with (done, total); calls are serialized, never concurrent.
  std::function<void(std::size_t done, std::size_t total)> on_cell;
};

// `base` gives the model, dtype, lowering and attention; phase, batch and sequence length come
// from the grid.
ReportGrid run_report_grid(const workloads::ModelWorkload& base, const hw::HardwareSpec& hw,
                           const models::KernelModelRegistry& models, const GridOptions& options);

// One cell alone (the grid's unit of work): sized, then simulated when it fits.
GridCell run_grid_cell(const workloads::ModelWorkload& base, workloads::Phase phase,
                       std::int64_t batch, std::int64_t seq_len, const hw::HardwareSpec& hw,
                       hw::LaunchMode mode, const models::KernelModelRegistry& models,
                       const workloads::SimulateOptions& simulate = {});

}  // namespace gpusim::cli
