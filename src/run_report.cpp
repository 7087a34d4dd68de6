#include "src/run_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpusim::cli {
namespace {

// Seconds each pipe would need at full chip rate for the whole kernel.
double busiest_pipe_seconds(const hw::HardwareSpec& hw, const hw::Launch& l, double clock_hz) {
  double tensor = 0, fp32 = 0, sfu = 0;
  const double chip = hw.sm_count * clock_hz;
  for (const auto& c : l.ctas) {
    const double n = static_cast<double>(c.count);
    const double rate = hw.tensor_flops_per_cycle(c.work.tensor_dtype);
    if (rate > 0) tensor += n * c.work.tensor_flops / (rate * chip);
    fp32 += n * c.work.fp32_flops / (c.work.fp32_efficiency * hw.throughput.fp32 * chip);
    sfu += n * c.work.sfu_ops / (hw.throughput.sfu * chip);
  }
  return std::max({tensor, fp32, sfu});
}

// Which limit the kernel sits against, from its utilization of compute and DRAM.
std::string classify(double sm_pct, double dram_pct) {
  if (std::max(sm_pct, dram_pct) < 30) return "latency";
  if (dram_pct >= 1.25 * sm_pct) return "memory";
  if (sm_pct >= 1.25 * dram_pct) return "compute";
  return "balanced";
}

}  // namespace

RunReport make_report(const hw::HardwareSpec& hw, const std::string& workload, hw::LaunchMode mode,
                      const std::vector<hw::KernelNode>& nodes, const hw::EngineResult& result) {
  RunReport r;
  r.hw = hw.name;
  r.workload = workload;
  r.mode = mode == hw::LaunchMode::kGraph ? "graph" : "eager";
  r.total_us = result.end.us();
  r.events = result.events;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const hw::Launch& l = nodes[i].launch;
    const hw::KernelResult& k = result.kernels[i];
    KernelReport out;
    out.name = k.name;
    out.op = k.op;
    out.family = k.family;
    out.start_us = k.start.us();
    out.duration_us = k.duration().us();
    out.grid = l.grid;
    out.block = l.block;
    out.regs = l.regs_per_thread;
    out.smem = l.smem_per_cta;
    out.flops = k.tensor_flops + k.fp32_flops;
    out.dram_bytes = k.dram_read_bytes + k.dram_write_bytes;
    out.l2_bytes = k.l2_bytes;
    out.achieved_occupancy = k.achieved_occupancy;
    out.theoretical_occupancy = k.theoretical_occupancy;
    out.waves = k.waves;
    out.clock_mhz = k.clock_hz / 1e6;
    const double seconds = k.duration().seconds();
    if (seconds > 0) {
      out.sm_throughput_pct = 100 * busiest_pipe_seconds(hw, l, k.clock_hz) / seconds;
      out.dram_throughput_pct = 100 * out.dram_bytes / (hw.dram.bandwidth * seconds);
    }
    out.l2_hit_rate = k.l2_bytes > 0 ? std::clamp(1.0 - out.dram_bytes / k.l2_bytes, 0.0, 1.0) : 0.0;
    out.l2_input_hit_rate = k.l2_read_hit_rate;
    out.bound = classify(out.sm_throughput_pct, out.dram_throughput_pct);
    r.kernel_time_us += out.duration_us;
    r.kernels.push_back(std::move(out));
  }
  return r;
}

RunReport make_model_report(const hw::HardwareSpec& hw, const workloads::ModelWorkload& w,
                            hw::LaunchMode mode, const workloads::ModelRun& run) {
  RunReport r;
  r.hw = hw.name;
  r.workload = w.name;
  r.mode = mode == hw::LaunchMode::kGraph ? "graph" : "eager";
  r.memory = run.memory;
  double clock = 0;
  std::vector<std::string> listed;
  std::int64_t decode_index = 0;
  for (const auto& step : run.steps) {
    if (r.phases.empty() || r.phases.back().name != step.phase) r.phases.push_back({step.phase});
    PhaseReport& p = r.phases.back();
    ++p.steps;
    p.kernels += step.kernels;
    p.total_us += step.total_us;
    p.kernel_time_us += step.kernel_time_us;
    const std::string label = step.phase == "decode" && run.steps.size() > 1
                                  ? fmt::format("decode[{}]", decode_index)
                                  : step.phase;
    if (step.phase == "decode") ++decode_index;
    if (step.detail) {
      RunReport one = make_report(hw, w.name, mode, step.detail->nodes, step.detail->result);
      for (auto& k : one.kernels) {
        k.start_us += clock;
        if (run.steps.size() > 1) k.op = label + " " + k.op;
        r.kernels.push_back(std::move(k));
      }
      listed.push_back(label);
    }
    clock += step.total_us;
    r.total_us += step.total_us;
    r.kernel_time_us += step.kernel_time_us;
    r.events += step.events;
  }
  if (listed.size() < run.steps.size()) {
    std::string steps;
    for (const auto& l : listed) steps += (steps.empty() ? "" : ", ") + l;
    r.kernels_scope = fmt::format("kernels of steps {} of {} (totals cover every step)", steps, run.steps.size());
  }
  if (w.phase == workloads::Phase::kGenerate) {
    GenerationReport g;
    g.output_tokens = w.output_len.value_or(1);
    g.total_us = r.total_us;
    g.ttft_us = r.phases.front().total_us;
    if (r.phases.size() > 1) g.tpot_us = r.phases.back().total_us / static_cast<double>(r.phases.back().steps);
    g.tokens_per_s = static_cast<double>(w.batch * g.output_tokens) / (r.total_us * 1e-6);
    r.generation = g;
  }
  return r;
}

}  // namespace gpusim::cli
