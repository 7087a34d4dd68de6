// A simulated run, summarized the way profilers report one: per kernel its span, launch shape
// and Nsight-style metrics (hw/kernel_metrics.h), aggregates by op category and by bound class
// (seed 003's tables), and for model workloads the phases, generation figures and memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "hw/kernel_metrics.h"
#include "hw/timeline_recorder.h"
#include "workloads/model_run.h"

namespace gpusim::cli {

struct KernelReport {
  std::string name, op, family;
  std::string category;  // seed 003's op categories: gemm, gemv, attention, elementwise, ...
  int stream = 0;
  double start_us = 0;  // on the report's timeline (steps laid end to end)
  hw::Dim3 grid, block;
  int regs = 0;
  std::int64_t smem = 0;
  // pipeline_parallel: the stage whose GPU ran it (every GPU of a tensor- or expert-parallel
  // group runs the same kernels); 0 otherwise.
  int stage = 0;
  hw::KernelMetrics metrics;
  // The 80% prediction band of its duration (src/run_bands.h), and whether its family's band
  // was calibrated on kernels of its duration (false: the pooled band, or outside the range).
  double band_low_us = 0, band_high_us = 0;
  bool band_calibrated = false;
};

// Kernels grouped by op category or by bound class. Means are plain means over the kernels,
// as seed 003 averages them; the share is of the listed kernels' summed duration.
struct KernelGroup {
  std::string name;
  std::int64_t kernels = 0;
  double time_us = 0, time_share_pct = 0;
  double mean_duration_us = 0;
  double mean_sm_throughput_pct = 0, mean_dram_throughput_pct = 0, mean_memory_throughput_pct = 0;
  double mean_achieved_occupancy = 0, mean_l2_hit_rate = 0;
};

struct PhaseReport {
  std::string name;  // prefill | decode
  std::int64_t steps = 0, kernels = 0;
  double total_us = 0, kernel_time_us = 0;
};

struct GenerationReport {
  std::int64_t output_tokens = 0;  // per sequence
  double ttft_us = 0;              // time to first token: the prefill step
  double tpot_us = 0;              // time per output token after the first: mean decode step
  double tokens_per_s = 0;         // batch x output tokens over the total time
  double total_us = 0;
};

// A training step's throughput figures (phase train).
struct TrainingReport {
  std::int64_t tokens = 0;     // batch x seq_len
  double tokens_per_s = 0;     // over the step's total time
  // Model FLOPs of the step, as nanoGPT and PaLM count them: 6 x parameters per token (a MoE
  // model's active ones: top_k routed experts a layer) for the
  // GEMMs of forward and backward, plus 12 x layers x heads x head_dim x seq_len per token for
  // attention's score and value products (causal masking not discounted).
  double model_flops = 0;
  double mfu_pct = 0;          // model FLOPs per second against the chip's dense peak for the
                               // dtype (tensor cores; the FP32 pipes for fp32)
  double gemm_share_pct = 0;   // GEMM kernels' share of the step's kernel time
};

// pipeline_parallel: one stage's GPU over the run (every step's figures summed).
struct PipelineStageReport {
  int stage = 0;
  std::int64_t first_layer = 0, layers = 0;
  double busy_us = 0, idle_us = 0;  // its work and its bubbles, within the steps' totals
  std::int64_t kernels = 0;
  double kernel_time_us = 0;
};

// One engine run's timeline placed on the report's: its kernel i is report kernel
// first_kernel + i, and its times are shifted by offset_us.
struct TimelineSegment {
  double offset_us = 0;
  std::size_t first_kernel = 0;
  hw::Timeline timeline;
};

struct RunReport {
  std::string hw, workload, mode;
  double total_us = 0;        // first launch to last kernel end, gaps included
  double kernel_time_us = 0;  // sum of kernel durations
  std::vector<KernelReport> kernels;
  std::vector<KernelGroup> by_category, by_bound;  // over `kernels`, costliest first
  std::string kernels_scope;  // which steps `kernels` lists when not all (generate)
  std::string description;    // the workload in words (model workloads), for the table
  // A model workload's dtype, and where it came from when the file gives none ("" when it does).
  std::string dtype, dtype_default;
  std::uint64_t events = 0;
  std::vector<PhaseReport> phases;                // model workloads
  std::optional<workloads::MemoryFootprint> memory;
  std::optional<GenerationReport> generation;     // phase generate
  std::optional<TrainingReport> training;         // phase train
  std::vector<TimelineSegment> timelines;         // when the run recorded them (--trace)
  // Several GPUs: the GPUs each stage's group has (tensor or expert parallel ranks, which run the
  // same kernels), and with pipeline_parallel every stage and the micro-batches of a step.
  int gpus_per_stage = 1;
  std::vector<PipelineStageReport> pipeline;
  int micro_batches = 1;
  // Prediction bands (src/run_bands.h): the chip whose residuals gave them, and the 80% bands
  // of the totals. Empty source: no bands attached.
  std::string band_source;
  double total_low_us = 0, total_high_us = 0, kernel_time_low_us = 0, kernel_time_high_us = 0;
  std::int64_t kernels_outside_bands = 0;  // listed kernels without a calibrated band
};

// Identical launches (same kernel, grid and block: one projection in every layer) merged.
struct MergedLaunches {
  const KernelReport* first = nullptr;  // the first launch, whose metrics stand for the group
  std::int64_t launches = 0;
  double time_us = 0;
};
// Costliest first; ties keep first-launch order.
std::vector<MergedLaunches> merge_identical_launches(const std::vector<KernelReport>& kernels);

// Seed 003's op category of a kernel, from its cost-model family.
std::string kernel_category(const std::string& family);

std::vector<KernelGroup> group_kernels(const std::vector<KernelReport>& kernels,
                                       std::string (*key)(const KernelReport&));

RunReport make_report(const hw::HardwareSpec& hw, const std::string& workload, hw::LaunchMode mode,
                      const std::vector<hw::KernelNode>& nodes, const hw::EngineResult& result,
                      std::optional<hw::Timeline> timeline = std::nullopt);

// A model workload's report: phases, memory, generation figures, and the kernels of the steps
// the run kept in detail (all of them for prefill and decode; for generate the prefill, the
// first decode step and the last), laid end to end in time.
RunReport make_model_report(const hw::HardwareSpec& hw, const workloads::ModelWorkload& w,
                            hw::LaunchMode mode, workloads::ModelRun run);

}  // namespace gpusim::cli
