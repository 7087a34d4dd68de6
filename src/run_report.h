// A simulated run, summarized the way profilers report one: per kernel its span, launch shape,
// work, throughput as a share of the chip's peaks, L2 hit rate and what bounds it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <optional>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "workloads/model_run.h"

namespace gpusim::cli {

struct KernelReport {
  std::string name, op, family;
  double start_us = 0, duration_us = 0;
  hw::Dim3 grid, block;
  int regs = 0;
  std::int64_t smem = 0;
  double flops = 0;       // tensor + FP32
  double dram_bytes = 0;  // read + write, after L2
  double l2_bytes = 0;
  double achieved_occupancy = 0, theoretical_occupancy = 0, waves = 0;
  double sm_throughput_pct = 0;    // busiest pipe's share of its peak
  double dram_throughput_pct = 0;  // of the datasheet peak
  double l2_hit_rate = 0;        // 1 - DRAM bytes / L2 bytes: all requests, as Nsight counts
  double l2_input_hit_rate = 0;  // share of the kernel's input bytes resident in L2 at its start
  double clock_mhz = 0;
  std::string bound;  // memory | compute | balanced | latency
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

struct RunReport {
  std::string hw, workload, mode;
  double total_us = 0;        // first launch to last kernel end, gaps included
  double kernel_time_us = 0;  // sum of kernel durations
  std::vector<KernelReport> kernels;
  std::string kernels_scope;  // which steps `kernels` lists when not all (generate)
  std::string description;    // the workload in words (model workloads), for the table
  std::uint64_t events = 0;
  std::vector<PhaseReport> phases;                // model workloads
  std::optional<workloads::MemoryFootprint> memory;
  std::optional<GenerationReport> generation;     // phase generate
};

RunReport make_report(const hw::HardwareSpec& hw, const std::string& workload, hw::LaunchMode mode,
                      const std::vector<hw::KernelNode>& nodes, const hw::EngineResult& result);

// A model workload's report: phases, memory, generation figures, and the kernels of the steps
// the run kept in detail (all of them for prefill and decode; for generate the prefill, the
// first decode step and the last), laid end to end in time.
RunReport make_model_report(const hw::HardwareSpec& hw, const workloads::ModelWorkload& w,
                            hw::LaunchMode mode, const workloads::ModelRun& run);

}  // namespace gpusim::cli
