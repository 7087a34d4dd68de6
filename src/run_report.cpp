#include "src/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "workloads/parameter_count.h"

namespace gpusim::cli {
namespace {

std::string by_category_key(const KernelReport& k) { return k.category; }
std::string by_bound_key(const KernelReport& k) { return std::string(hw::name(k.metrics.bound)); }

void add_groups(RunReport& r) {
  r.by_category = group_kernels(r.kernels, by_category_key);
  r.by_bound = group_kernels(r.kernels, by_bound_key);
}

}  // namespace

std::string kernel_category(const std::string& family) {
  static const std::map<std::string, std::string> kCategory{
      {"gemm", "gemm"},
      {"gemm_splitk_reduce", "gemm"},
      {"grouped_gemm", "gemm"},
      {"gemv", "gemv"},
      {"flash_fwd", "attention"},
      {"flash_fwd_splitkv", "attention"},
      {"flash_fwd_splitkv_combine", "attention"},
      {"cudnn_sdpa_fwd", "attention"},
      {"cudnn_sdpa_decode", "attention"},
      {"cudnn_sdpa_reduce", "attention"},
      {"elementwise", "elementwise"},
      {"memcpy", "copy"},
      {"memset", "copy"},
      {"cat", "copy"},
      {"index", "copy"},
      {"rms_norm", "norm/reduce"},
      {"layer_norm", "norm/reduce"},
      {"softmax", "norm/reduce"},
      {"reduce", "norm/reduce"},
      {"topk", "routing"},
      {"sort", "routing"},
      {"histogram", "routing"},
      {"scan", "routing"}};
  const auto it = kCategory.find(family);
  return it == kCategory.end() ? family : it->second;
}

std::vector<MergedLaunches> merge_identical_launches(const std::vector<KernelReport>& kernels) {
  using Key = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t>;
  std::map<Key, std::size_t> index;
  std::vector<MergedLaunches> out;
  for (const auto& k : kernels) {
    const Key key{k.name, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z};
    const auto [it, fresh] = index.try_emplace(key, out.size());
    if (fresh) out.push_back({&k});
    ++out[it->second].launches;
    out[it->second].time_us += k.metrics.duration_us;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const MergedLaunches& a, const MergedLaunches& b) { return a.time_us > b.time_us; });
  return out;
}

std::vector<KernelGroup> group_kernels(const std::vector<KernelReport>& kernels,
                                       std::string (*key)(const KernelReport&)) {
  std::map<std::string, KernelGroup> groups;
  double total = 0;
  for (const auto& k : kernels) {
    KernelGroup& g = groups[key(k)];
    const auto& m = k.metrics;
    ++g.kernels;
    g.time_us += m.duration_us;
    g.mean_sm_throughput_pct += m.sm_throughput_pct;
    g.mean_dram_throughput_pct += m.dram_throughput_pct;
    g.mean_memory_throughput_pct += m.memory_throughput_pct;
    g.mean_achieved_occupancy += m.achieved_occupancy;
    g.mean_l2_hit_rate += m.l2_hit_rate;
    total += m.duration_us;
  }
  std::vector<KernelGroup> out;
  for (auto& [name, g] : groups) {
    const double n = static_cast<double>(g.kernels);
    g.name = name;
    g.time_share_pct = total > 0 ? 100 * g.time_us / total : 0;
    g.mean_duration_us = g.time_us / n;
    g.mean_sm_throughput_pct /= n;
    g.mean_dram_throughput_pct /= n;
    g.mean_memory_throughput_pct /= n;
    g.mean_achieved_occupancy /= n;
    g.mean_l2_hit_rate /= n;
    out.push_back(g);
  }
  // Costliest first; names break ties so the order never depends on the map's.
  std::stable_sort(out.begin(), out.end(), [](const KernelGroup& a, const KernelGroup& b) {
    return a.time_us > b.time_us;
  });
  return out;
}

RunReport make_report(const hw::HardwareSpec& hw, const std::string& workload, hw::LaunchMode mode,
                      const std::vector<hw::KernelNode>& nodes, const hw::EngineResult& result,
                      std::optional<hw::Timeline> timeline) {
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
    out.category = kernel_category(k.family);
    out.stream = nodes[i].stream;
    out.start_us = k.start.us();
    out.grid = l.grid;
    out.block = l.block;
    out.regs = l.regs_per_thread;
    out.smem = l.smem_per_cta;
    out.metrics = hw::kernel_metrics(hw, l, k);
    r.kernel_time_us += out.metrics.duration_us;
    r.kernels.push_back(std::move(out));
  }
  if (timeline) r.timelines.push_back({0.0, 0, std::move(*timeline)});
  add_groups(r);
  return r;
}

namespace {

// A pipeline step's stages: their figures summed into the report's, and the kernels of the
// detailed steps' micro-batch programs placed where the schedule ran each micro-batch (a
// training program's forward and backward kernels at their tasks, its optimizer once).
void add_pipeline_stages(const hw::HardwareSpec& hw, const workloads::ModelWorkload& w, hw::LaunchMode mode,
                         const workloads::StepRun& step, double clock, const std::string& prefix, RunReport& r) {
  for (const auto& sr : step.pipeline) {
    if (r.pipeline.size() <= static_cast<std::size_t>(sr.stage)) r.pipeline.push_back({sr.stage, sr.first_layer, sr.layers});
    PipelineStageReport& out = r.pipeline[static_cast<std::size_t>(sr.stage)];
    out.busy_us += sr.busy_us;
    out.idle_us += sr.idle_us;
    out.kernels += sr.kernels;
    out.kernel_time_us += sr.kernel_time_us;
    if (!sr.detail) continue;
    const RunReport one = make_report(hw, w.name, mode, sr.detail->nodes, sr.detail->result);
    // The program's kernels by phase: [first, last) and the phase's first start.
    struct Range {
      std::string name;
      std::size_t first = 0, last = 0;
      double begin_us = 0;
    };
    std::vector<Range> ranges;
    if (sr.phase_splits.empty()) {
      ranges.push_back({"forward", 0, one.kernels.size(), 0.0});
    } else {
      std::size_t at = 0;
      for (const auto& split : sr.phase_splits) {
        const auto n = static_cast<std::size_t>(split.kernels);
        Range range{split.name, at, std::min(at + n, one.kernels.size()), 0.0};
        if (range.first < range.last) range.begin_us = one.kernels[range.first].start_us;
        for (std::size_t i = range.first; i < range.last; ++i) range.begin_us = std::min(range.begin_us, one.kernels[i].start_us);
        ranges.push_back(range);
        at += n;
      }
    }
    auto place = [&](const Range& range, double start_us, const std::string& what) {
      for (std::size_t i = range.first; i < range.last; ++i) {
        KernelReport k = one.kernels[i];
        k.start_us = clock + start_us + (k.start_us - range.begin_us);
        k.stage = sr.stage;
        k.op = fmt::format("{}stage {} {}{}", prefix, sr.stage, what, k.op);
        r.kernels.push_back(std::move(k));
      }
    };
    for (const auto& task : sr.tasks) {
      for (const auto& range : ranges) {
        if (range.name == (task.backward ? "backward" : "forward")) {
          place(range, task.start_us, fmt::format("micro-batch {} ", task.micro_batch));
        }
      }
    }
    // What runs once a step (the gradients' all-reduce, the optimizer) keeps its place against the
    // end of the last backward, which its program's backward stands for.
    double backward_end = 0;
    for (const auto& split : sr.phase_splits) {
      if (split.name == "backward") backward_end = split.end_us;
    }
    for (const auto& range : ranges) {
      if (range.name == "forward" || range.name == "backward" || range.first == range.last) continue;
      place(range, sr.optimizer_start_us + range.begin_us - backward_end, "");
    }
  }
}

}  // namespace

RunReport make_model_report(const hw::HardwareSpec& hw, const workloads::ModelWorkload& w,
                            hw::LaunchMode mode, workloads::ModelRun run) {
  RunReport r;
  r.gpus_per_stage = std::max(w.parallel.tensor, w.parallel.expert);
  r.micro_batches = w.parallel.micro_batches;
  r.hw = hw.name;
  r.workload = w.name;
  r.mode = mode == hw::LaunchMode::kGraph ? "graph" : "eager";
  r.memory = run.memory;
  double clock = 0;
  std::vector<std::string> listed;
  std::int64_t decode_index = 0;
  for (auto& step : run.steps) {
    // A training step reports its forward, backward and optimizer as the phases.
    for (const auto& split : step.phase_splits) {
      r.phases.push_back({split.name, 1, split.kernels, split.total_us, split.kernel_time_us});
    }
    if (step.phase_splits.empty()) {
      if (r.phases.empty() || r.phases.back().name != step.phase) r.phases.push_back({step.phase});
      PhaseReport& p = r.phases.back();
      ++p.steps;
      p.kernels += step.kernels;
      p.total_us += step.total_us;
      p.kernel_time_us += step.kernel_time_us;
    }
    const std::string label = step.phase == "decode" && run.steps.size() > 1
                                  ? fmt::format("decode[{}]", decode_index)
                                  : step.phase;
    if (step.phase == "decode") ++decode_index;
    add_pipeline_stages(hw, w, mode, step, clock, run.steps.size() > 1 ? label + " " : std::string(), r);
    if (!step.pipeline.empty()) listed.push_back(label);
    if (step.detail) {
      RunReport one = make_report(hw, w.name, mode, step.detail->nodes, step.detail->result);
      if (step.detail->timeline) {
        r.timelines.push_back({clock, r.kernels.size(), std::move(*step.detail->timeline)});
      }
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
  add_groups(r);
  if (w.phase == workloads::Phase::kTrain && r.total_us > 0) {
    const auto& m = w.model;
    TrainingReport t;
    t.tokens = w.batch * w.seq_len * w.accumulation_steps;
    t.tokens_per_s = static_cast<double>(t.tokens) / (r.total_us * 1e-6);
    // A mixture of experts counts the experts each token visits (top_k), as MoE papers count MFU.
    const double per_token = 6.0 * static_cast<double>(workloads::active_parameter_count(m)) +
                             12.0 * static_cast<double>(m.layers * m.heads * m.head_dim * w.seq_len);
    t.model_flops = per_token * static_cast<double>(t.tokens);
    // The matmuls' type (autocast's under mixed precision); fp32 matmuls run on the FP32 pipes
    // (tensor cores take tf32, not fp32): that is their peak.
    const hw::DType math = w.autocast.value_or(w.dtype);
    // Several GPUs: the step's tokens ran on all of them, so the peak is theirs together.
    const double peak = (math == hw::DType::kFp32 ? hw.peak_fp32_flops() : hw.peak_tensor_flops(math)) *
                        w.parallel.gpus();
    t.mfu_pct = peak > 0 ? 100.0 * t.model_flops / (r.total_us * 1e-6) / peak : 0;
    for (const auto& g : r.by_category) {
      if (g.name == "gemm") t.gemm_share_pct = g.time_share_pct;
    }
    r.training = t;
  }
  return r;
}

}  // namespace gpusim::cli
