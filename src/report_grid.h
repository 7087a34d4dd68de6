// The simulations behind `gpusim report`: a model's prefill step over a batch x sequence grid
// and its decode step per batch (a training workload: its training step over batch, or model,
// x sequence), each cell sized first (MemoryFootprint) and simulated only
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
  std::vector<std::int64_t> batches, seq_lens;  // prefill (training: train step) grid
  // Training grids by model (seed 002's model x sequence table): one row per workload, each at
  // its own batch; `batches` is then unused.
  std::vector<workloads::ModelWorkload> model_rows;
  std::int64_t decode_seq_len = 0;              // KV length of the decode steps
  hw::LaunchMode mode = hw::LaunchMode::kGraph;
  bool reuse = true;  // cells share kernel outcomes (hw/kernel_outcome_cache.h); off: from scratch
  // Called once per finished cell with (done, total); calls are serialized, never concurrent.
  std::function<void(std::size_t done, std::size_t total)> on_cell;
};

// `base` gives the model, dtype, lowering and attention; phase, batch and sequence length come
// from the grid. A training workload (phase train) gets a grid of training steps and no decode
// row.
ReportGrid run_report_grid(const workloads::ModelWorkload& base, const hw::HardwareSpec& hw,
                           const models::KernelModelRegistry& models, const GridOptions& options);

// One cell alone (the grid's unit of work): sized, then simulated when it fits.
GridCell run_grid_cell(const workloads::ModelWorkload& base, workloads::Phase phase,
                       std::int64_t batch, std::int64_t seq_len, const hw::HardwareSpec& hw,
                       hw::LaunchMode mode, const models::KernelModelRegistry& models,
                       const workloads::SimulateOptions& simulate = {});

}  // namespace gpusim::cli
