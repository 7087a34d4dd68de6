// The Markdown of `gpusim report`: a profiling paper in the shape of seed 000 (hardware and
// software, peak memory, time to first token, decode throughput, kernel-level profile,
// roofline, bottlenecks by regime, reproduction), written from numbers computed beforehand.
// Simulation lives in src/report_grid.h; this file only turns figures into text, so the text
// is testable on hand-made figures and identical whenever the figures are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/dtype.h"
#include "hw/hardware_spec.h"
#include "src/run_report.h"
#include "workloads/memory_footprint.h"
#include "workloads/workload.h"

namespace gpusim::cli {

// Kernel time of one bound class in a step, with the sums its evidence is made of.
struct BoundTotals {
  std::string bound;  // memory | compute | balanced | latency
  std::int64_t kernels = 0;
  double time_us = 0, share_pct = 0;
  double dram_bytes = 0, flops = 0, tensor_flops = 0;
};

// An op category with the bound class that holds most of its time.
struct CategoryRow {
  KernelGroup group;
  std::string main_bound;
  double main_bound_share_pct = 0;  // of the category's time
};

// Identical launches (same kernel name, grid and block) merged.
struct TopKernel {
  std::string name, op, category, bound;  // bound of the first launch
  std::int64_t launches = 0;
  double time_us = 0, share_pct = 0;
  double sm_throughput_pct = 0, dram_throughput_pct = 0;  // of the first launch
};

// One simulated run reduced to what the report prints.
struct StepProfile {
  double total_us = 0;        // first launch to last kernel end, gaps included
  double kernel_time_us = 0;  // summed kernel durations
  std::int64_t kernels = 0;
  double achieved_warps_per_sm = 0;  // weighted by kernel duration
  double dram_bytes = 0, flops = 0, tensor_flops = 0;
  std::vector<CategoryRow> categories;  // costliest first
  std::vector<KernelGroup> by_bound;    // costliest first
  std::vector<BoundTotals> bounds;      // same order as by_bound
  std::vector<TopKernel> top;           // up to 10, costliest first
  std::int64_t roofline_points = 0;     // kernels with FLOPs and bytes (placed on the roofline)
  // The 80% prediction band of total_us (src/run_bands.h); empty source: none.
  std::string band_source;
  double total_low_us = 0, total_high_us = 0;
  std::int64_t kernels_outside_bands = 0;
};

// One cell of the batch x sequence grid, or one decode step.
struct GridCell {
  enum class Status {
    kSimulated,
    kOutOfMemory,  // more than the device holds: not simulated
    kTooLong,      // more tokens than the model has positions for: neither sized nor simulated
  };
  std::int64_t batch = 0, seq_len = 0;
  Status status = Status::kSimulated;
  workloads::MemoryFootprint memory;   // not for kTooLong
  std::optional<StepProfile> profile;  // kSimulated only
};

struct ReportGrid {
  std::vector<std::int64_t> batches, seq_lens;
  bool training = false;            // cells are training steps (phase train); no decode row
  std::vector<std::string> models;  // rows by model (training), each at batches[row]; else by batch
  std::vector<GridCell> prefill;  // row-major: batches x seq_lens
  std::int64_t decode_seq_len = 0;
  std::vector<GridCell> decode;  // one per batch, KV length decode_seq_len

  const GridCell& prefill_cell(std::size_t batch_index, std::size_t seq_index) const {
    return prefill[batch_index * seq_lens.size() + seq_index];
  }
};

// Model workloads: the grid and what describes the model.
struct ModelSection {
  workloads::ModelWorkload workload;
  std::int64_t parameters = 0;
  ReportGrid grid;
};

// Whether the roofline image was drawn, and the roofs it shows.
struct RooflineInfo {
  bool drawn = false;
  std::string
      missing_reason;  // one line when not drawn, e.g. "python3 with matplotlib was not found"
  double dram_bytes_per_s = 0;    // achievable DRAM bandwidth
  double tensor_flops_per_s = 0;  // tensor peak of the workload dtype, sustained tensor clock
  double fp32_flops_per_s = 0;    // FP32 peak, sustained clock
};

struct ReportData {
  hw::HardwareSpec hw;
  std::string mode;                    // graph | eager
  std::string workload_name;           // as results name it
  std::string workload_text;           // describe_workload: one line per op, or the model in words
  hw::DType dtype = hw::DType::kBf16;  // of the profile's FLOP/s peak
  std::optional<ModelSection> model;   // absent for op workloads
  StepProfile run;                     // the workload as given, as `gpusim run` simulates it
  std::string run_scope;               // which steps `run` lists, when not all (generate)
  RooflineInfo roofline;
  std::vector<std::string> commands;  // reproduction: exact command lines
};

std::string render_markdown(const ReportData& data);

// Peak tensor FLOP/s of `dtype` at the boost clock (the datasheet's "theoretical" figure);
// for fp32, which has no tensor-core path, the FP32 (CUDA-core) peak at the boost clock.
double peak_flops_at_boost(const hw::HardwareSpec& hw, hw::DType dtype);

}  // namespace gpusim::cli
