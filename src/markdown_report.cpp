#include "src/markdown_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/markdown_format.h"
#include "src/markdown_training.h"

namespace gpusim::cli {
namespace {

// The run's 80% prediction band (src/run_bands.h), as a sentence; empty without bands.
std::string band_sentence(const StepProfile& run) {
  if (run.band_source.empty()) return "";
  return fmt::format(
      " Judged by how far measured kernel times strayed from gpusim's for each kernel family on {}, "
      "the time lies in {}-{} ms with 80% confidence{}.",
      run.band_source, ms(run.total_low_us), ms(run.total_high_us),
      run.kernels_outside_bands > 0
          ? fmt::format(" ({} kernels lie outside the range their family was calibrated on)", run.kernels_outside_bands)
          : "");
}

std::string flops_rate(double f) {
  if (f >= 1e15) return fmt::format("{:.2f} PFLOP/s", f / 1e15);
  if (f >= 1e12) return fmt::format("{} TFLOP/s", num(f / 1e12));
  return fmt::format("{} GFLOP/s", num(f / 1e9));
}

std::string bytes_rate(double b) {
  if (b >= 1e12) return fmt::format("{:.2f} TB/s", b / 1e12);
  return fmt::format("{} GB/s", num(b / 1e9));
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// A kernel or op name inside a table cell: code span, pipes escaped, long names cut.
std::string cell_code(std::string s, std::size_t width = 80) {
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  std::string out = "`";
  for (const char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '`')
      out += '\'';
    else
      out += c;
  }
  return out + "`";
}

double mhz(double hz) {
  return hz / 1e6;
}

// ---- words for the workload ----

std::string lowering_text(const workloads::ModelWorkload& w) {
  const std::string attention = w.attention == workloads::Attention::kSdpa
                                    ? "fused sdpa attention"
                                    : "hand-written attention (matmul, softmax, matmul)";
  if (w.lowering == workloads::Lowering::kHfEager) {
    return "the kernels Hugging Face transformers 5.17 launches in eager mode (hf-eager "
           "lowering, " +
           attention + ")";
  }
  return "the fused kernels of an idealized serving engine (fused lowering, " + attention + ")";
}

std::string mode_text(const std::string& mode) {
  return mode == "eager" ? "eager mode: each kernel launched from the host, as eager PyTorch does"
                         : "graph mode: kernels replayed from a CUDA graph";
}

// For the abstract: how the kernels reach the GPU, as a trailing clause.
std::string launch_phrase(const std::string& mode) {
  return mode == "eager" ? "each launched from the host (eager mode)"
                         : "replayed from a CUDA graph (graph mode)";
}

std::string phase_text(const workloads::ModelWorkload& w) {
  switch (w.phase) {
    case workloads::Phase::kPrefill:
      return fmt::format("a prefill of {} tokens at batch {}", w.seq_len, w.batch);
    case workloads::Phase::kDecode:
      return fmt::format("one decode step at batch {} against a KV cache of {} tokens", w.batch,
                         w.seq_len);
    case workloads::Phase::kGenerate:
      return fmt::format("generating {} tokens after a {}-token prompt at batch {}",
                         w.output_len.value_or(1), w.seq_len, w.batch);
    case workloads::Phase::kTrain:
      return fmt::format("one training step ({}) over {} sequences of {} tokens",
                         workloads::name(w.optimizer), w.batch, w.seq_len);
  }
  return {};
}

std::string workload_phrase(const ReportData& d) {
  return d.model
             ? fmt::format("{}: {}", d.model->workload.model.name, phase_text(d.model->workload))
             : fmt::format("the op-level workload {}", d.workload_name);
}

// ---- bound classes ----

std::string limiting_resource(const std::string& bound, hw::DType dtype) {
  if (bound == "memory") return "DRAM bandwidth";
  if (bound == "compute")
    return dtype == hw::DType::kFp32 ? "FP32 pipes (CUDA cores)" : "tensor cores";
  if (bound == "latency") return "launch and memory latency";
  return "neither: low use of both";
}

std::string remedy(const std::string& bound, hw::DType dtype) {
  if (bound == "memory")
    return "more DRAM bandwidth, or fewer bytes moved (fusion, fp8 weights, a larger batch per "
           "weight read)";
  if (bound == "compute") {
    return dtype == hw::DType::kFp32
               ? "tensor-core math (tf32 or bf16) instead of the FP32 pipes, or more SMs"
               : "more tensor throughput (SMs, a higher sustained clock) or a lower-precision "
                 "format";
  }
  if (bound == "latency") return "fewer, larger kernels (fusion, a larger batch)";
  return "better tiling or occupancy, since it uses neither roof well";
}

// "memory-bound", "compute-bound", "latency-bound", but plain "balanced".
std::string bound_word(const std::string& bound) {
  return bound == "balanced" ? bound : bound + "-bound";
}

// Hardware parameters as written in hardware files: 50, 0.1, 6.2 (no padding zeros).
std::string param(double v) {
  return fmt::format("{:g}", v);
}

std::string compute_peak_name(hw::DType dtype) {
  return dtype == hw::DType::kFp32 ? "FP32" : upper(std::string(hw::name(dtype))) + " tensor";
}

// The bound class holding most kernel time, with the evidence for it.
struct Verdict {
  std::string bound, evidence;
};

Verdict verdict(const StepProfile& p, const hw::HardwareSpec& hw, hw::DType dtype) {
  if (p.bounds.empty() || p.kernel_time_us <= 0) return {"balanced", "no kernel time"};
  const BoundTotals& b = p.bounds.front();
  const double seconds = b.time_us * 1e-6;
  std::string e =
      fmt::format("{} kernels hold {}% of kernel time", bound_word(b.bound), pct(b.share_pct));
  if (b.bound == "memory") {
    e += fmt::format("; their DRAM throughput averages {}% of the {} peak",
                     pct(100 * b.dram_bytes / seconds / hw.dram.bandwidth),
                     bytes_rate(hw.dram.bandwidth));
  } else if (b.bound == "compute") {
    const double peak = peak_flops_at_boost(hw, dtype);
    const double done = dtype == hw::DType::kFp32 ? b.flops : b.tensor_flops;
    e += fmt::format("; they reach {}% of the {} peak ({})",
                     pct(peak > 0 ? 100 * done / seconds / peak : 0), compute_peak_name(dtype),
                     flops_rate(peak));
  } else if (b.bound == "latency") {
    e += fmt::format(
        "; {} kernels of {} us on average against a kernel overhead of {} us", p.kernels,
        num(p.kernel_time_us / static_cast<double>(std::max<std::int64_t>(p.kernels, 1))),
        param(hw.launch.kernel_overhead.us()));
    if (p.total_us > p.kernel_time_us) {
      e += fmt::format("; launch gaps add {}% to the step",
                       pct(100 * (p.total_us - p.kernel_time_us) / p.kernel_time_us));
    }
  } else {
    const auto& g = p.by_bound.front();
    e += fmt::format("; mean SM throughput {}%, mean DRAM throughput {}%",
                     pct(g.mean_sm_throughput_pct), pct(g.mean_dram_throughput_pct));
  }
  return {b.bound, e};
}

// ---- sections ----

void title_and_abstract(const ReportData& d, std::string& out) {
  const auto& hw = d.hw;
  const auto& run = d.run;
  const std::string main_bound = run.bounds.empty() ? "balanced" : run.bounds.front().bound;
  const double main_share = run.bounds.empty() ? 0 : run.bounds.front().share_pct;
  if (d.model) {
    out += fmt::format("# {} inference on the {}: a simulated profile\n\n",
                       d.model->workload.model.name, hw.name);
  } else {
    out += fmt::format("# {} on the {}: a simulated kernel profile\n\n", d.workload_name, hw.name);
  }
  out += fmt::format(
      "*Every figure in this report is simulated by gpusim {}, a discrete-event model of the GPU; "
      "none is a measurement.*\n\n",
      GPUSIM_VERSION);
  out += "## Abstract\n\n";
  if (d.model) {
    const auto& m = *d.model;
    const auto& w = m.workload;
    out += fmt::format(
        "We simulate {} ({:.2f} B parameters, {}) on the {}: {}, {}. "
        "The workload as given, {}, takes {} ms ({} kernels, {} ms of kernel time); "
        "{} kernels hold {}% of that kernel time.",
        w.model.name, static_cast<double>(m.parameters) / 1e9, hw::name(w.dtype), hw.description,
        lowering_text(w), launch_phrase(d.mode), phase_text(w), ms(run.total_us),
        grouped(run.kernels), ms(run.kernel_time_us), bound_word(main_bound), pct(main_share));
    out += band_sentence(run);
    if (m.grid.training) {
      out += training_grid_summary(d) + "\n\n";
      return;
    }
    const GridCell* fastest = nullptr;
    const GridCell* slowest = nullptr;
    int oom = 0;
    for (const auto& c : m.grid.prefill) {
      if (c.status == GridCell::Status::kOutOfMemory) ++oom;
      if (!c.profile) continue;
      if (!fastest || c.profile->total_us < fastest->profile->total_us) fastest = &c;
      if (!slowest || c.profile->total_us > slowest->profile->total_us) slowest = &c;
    }
    if (fastest) {
      out += fmt::format(
          " Time to first token ranges from {} ms (batch {}, {} tokens) to {} ms (batch {}, {} "
          "tokens)",
          ms(fastest->profile->total_us), fastest->batch, fastest->seq_len,
          ms(slowest->profile->total_us), slowest->batch, slowest->seq_len);
      out += oom > 0
                 ? fmt::format("; {} of the {} prefill shapes do not fit in the device's {} MiB.",
                               oom, m.grid.prefill.size(), mib(hw.dram.capacity))
                 : ".";
    }
    const GridCell* best = nullptr;
    for (const auto& c : m.grid.decode) {
      if (c.profile &&
          (!best || c.batch / c.profile->total_us > best->batch / best->profile->total_us))
        best = &c;
    }
    if (best) {
      out += fmt::format(
          " Decoding against a {}-token KV cache peaks at {} tokens/s (batch {}, {} ms per token).",
          m.grid.decode_seq_len,
          grouped(
              std::llround(static_cast<double>(best->batch) / (best->profile->total_us * 1e-6))),
          best->batch, ms(best->profile->total_us));
    }
  } else {
    out += fmt::format(
        "We simulate the op-level workload {} on the {}, its kernels {}: they run in {} ms ({} "
        "kernels, {} ms of kernel "
        "time), and {} kernels hold {}% of that kernel time. Memory, time-to-first-token and "
        "decode "
        "tables need a model workload.",
        d.workload_name, hw.description, launch_phrase(d.mode), ms(run.total_us),
        grouped(run.kernels), ms(run.kernel_time_us), bound_word(main_bound), pct(main_share));
    out += band_sentence(run);
  }
  out += "\n\n";
}

void environment(const ReportData& d, std::string& out) {
  const auto& hw = d.hw;
  out += "## 1. Profiling environment\n\n";
  out += "The hardware is the simulator's description of the device (`gpusim hw show " + hw.name +
         "` lists every value with its source). Nothing ran on a GPU: there is no driver, CUDA or "
         "PyTorch "
         "version to report.\n\n";
  out += "| Item | Value |\n|---|---|\n";
  out += fmt::format("| GPU | `{}`: {} |\n", hw.name, hw.description);
  out += fmt::format("| Architecture | {}, {} SMs |\n", hw.arch, hw.sm_count);
  out += fmt::format(
      "| SM clock | {:.0f} MHz boost; sustained {:.0f} MHz under tensor-core load, {:.0f} MHz "
      "otherwise |\n",
      mhz(hw.clocks.boost_hz), mhz(hw.clocks.sustained_tensor_hz),
      mhz(hw.clocks.sustained_other_hz));
  out += fmt::format(
      "| Per SM | {} warps ({} threads), {} CTAs, {} registers, {} KiB shared memory |\n",
      hw.sm.max_warps, hw.sm.max_threads, hw.sm.max_ctas, grouped(hw.sm.registers),
      hw.sm.shared_memory / 1024);
  out += fmt::format("| L2 cache | {} MiB, {} for hits |\n",
                     param(static_cast<double>(hw.l2.size) / kMiB), bytes_rate(hw.l2.bandwidth));
  out += fmt::format("| DRAM | {}, {}-bit, {} peak ({} achievable, {}%), {} MiB ({:.1f} GiB) |\n",
                     hw.dram.kind, hw.dram.bus_width_bits, bytes_rate(hw.dram.bandwidth),
                     bytes_rate(hw.dram.achievable_bandwidth()), pct(100 * hw.dram.efficiency),
                     mib(hw.dram.capacity), static_cast<double>(hw.dram.capacity) / (kMiB * 1024));
  std::string tensor;
  for (const auto dt : {hw::DType::kFp16, hw::DType::kBf16, hw::DType::kTf32, hw::DType::kFp8}) {
    if (hw.tensor_flops_per_cycle(dt) <= 0) continue;
    tensor += fmt::format("{}{} {}", tensor.empty() ? "" : "; ", hw::name(dt),
                          flops_rate(peak_flops_at_boost(hw, dt)));
  }
  out += fmt::format("| Peak tensor FLOP/s (dense, boost clock) | {} |\n",
                     tensor.empty() ? "no tensor cores" : tensor);
  out += fmt::format("| Peak FP32 FLOP/s (CUDA cores, boost clock) | {} |\n",
                     flops_rate(peak_flops_at_boost(hw, hw::DType::kFp32)));
  out += fmt::format(
      "| Kernel launch | {} us device overhead per kernel; gap between dependent kernels {} us "
      "(CUDA graph), {} us (eager) |\n",
      param(hw.launch.kernel_overhead.us()), param(hw.launch.graph_gap.us()),
      param(hw.launch.eager_gap.us()));
  out += fmt::format("| Simulator | gpusim {}; {} |\n", GPUSIM_VERSION, mode_text(d.mode));
  if (d.model) out += fmt::format("| Kernels | {} |\n", lowering_text(d.model->workload));
  out += "\nThe workload as given:\n\n```\n" + d.workload_text + "```\n\n";
}

bool any_too_long(const std::vector<GridCell>& cells) {
  return std::any_of(cells.begin(), cells.end(),
                     [](const GridCell& c) { return c.status == GridCell::Status::kTooLong; });
}

void too_long_note(const ModelSection& m, const std::vector<GridCell>& cells, std::string& out) {
  if (any_too_long(cells)) {
    out +=
        fmt::format("n/a: longer than the {} positions model {} has (learned position table).\n\n",
                    m.workload.model.max_positions.value_or(0), m.workload.model.name);
  }
}

void memory_section(const ReportData& d, std::string& out) {
  const auto& m = *d.model;
  const auto& g = m.grid;
  out += "### 2.1 Peak memory\n\n";
  std::int64_t weights = 0;
  for (const auto& c : g.prefill) {
    if (c.status != GridCell::Status::kTooLong) weights = c.memory.weights_bytes;
  }
  out += fmt::format(
      "Peak device memory of one prefill step: the weights ({} MiB), the KV cache of the prompt "
      "and the "
      "activation peak of the step's kernels (tensors alive from their first writer to their last "
      "reader), "
      "the figure `torch.cuda.max_memory_allocated()` reports. OOM marks a shape that needs more "
      "than the "
      "device's {} MiB; it is not simulated. The CUDA context and allocator slack are not "
      "counted.\n\n",
      mib(weights), mib(d.hw.dram.capacity));
  out += fmt::format("Peak memory (MiB), prefill, {}\n\n", hw::name(m.workload.dtype));
  out += grid_table(g, [](const GridCell& c) {
    return c.status == GridCell::Status::kSimulated ? mib(c.memory.total_bytes) : status_text(c);
  });
  out += "\n";
  too_long_note(m, g.prefill, out);
}

void ttft_section(const ReportData& d, std::string& out) {
  const auto& m = *d.model;
  const auto& g = m.grid;
  out += "### 2.2 Time to first token (TTFT)\n\n";
  out += fmt::format(
      "TTFT is the simulated prefill step from the first kernel launch to the end of the last "
      "kernel, "
      "launch gaps included ({}). The simulator is deterministic, so each cell is one run: there "
      "are no "
      "warm-up runs or medians.\n\n",
      mode_text(d.mode));
  out += fmt::format("Time to first token (ms), {}\n\n", hw::name(m.workload.dtype));
  out += grid_table(
      g, [](const GridCell& c) { return c.profile ? ms(c.profile->total_us) : status_text(c); });
  out += "\n";
  too_long_note(m, g.prefill, out);
  // Growth along the sequence at the smallest batch, and the best prompt throughput.
  if (!g.batches.empty()) {
    const GridCell* first = nullptr;
    const GridCell* last = nullptr;
    for (std::size_t s = 0; s < g.seq_lens.size(); ++s) {
      const GridCell& c = g.prefill_cell(0, s);
      if (!c.profile) continue;
      if (!first) first = &c;
      last = &c;
    }
    if (first && last != first) {
      out += fmt::format("At batch {}, TTFT grows {:.1f}x from {} to {} tokens ({}x the tokens).",
                         first->batch, last->profile->total_us / first->profile->total_us,
                         first->seq_len, last->seq_len, last->seq_len / first->seq_len);
    }
    const GridCell* best = nullptr;
    auto rate = [](const GridCell& c) {
      return static_cast<double>(c.batch * c.seq_len) / c.profile->total_us;
    };
    for (const auto& c : g.prefill) {
      if (c.profile && (!best || rate(c) > rate(*best))) best = &c;
    }
    if (best) {
      out += fmt::format(" The best prompt throughput is {} tokens/s, at batch {} with {} tokens.",
                         grouped(std::llround(rate(*best) * 1e6)), best->batch, best->seq_len);
    }
    out += "\n\n";
  }
}

void decode_section(const ReportData& d, std::string& out) {
  const auto& m = *d.model;
  const auto& g = m.grid;
  out += "### 2.3 Decode throughput\n\n";
  out += fmt::format(
      "One decode step per batch size: one new token per sequence against a KV cache of {} tokens. "
      "The time per output token (TPOT) is the step's time, launch gaps included; tokens/s = batch "
      "/ TPOT.\n\n",
      g.decode_seq_len);
  out += fmt::format("Decode step, KV length {}, {}\n\n", g.decode_seq_len,
                     hw::name(m.workload.dtype));
  out += "| Batch size | Peak memory (MiB) | TPOT (ms) | Tokens/s | Kernels | Main bound class |\n";
  out += "|---:|---:|---:|---:|---:|---|\n";
  for (const auto& c : g.decode) {
    if (!c.profile) {
      const std::string s = status_text(c);
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", c.batch, s, s, s, s, s);
      continue;
    }
    const auto& p = *c.profile;
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", c.batch, mib(c.memory.total_bytes),
                       ms(p.total_us),
                       grouped(std::llround(static_cast<double>(c.batch) / (p.total_us * 1e-6))),
                       grouped(p.kernels), p.bounds.empty() ? "-" : p.bounds.front().bound);
  }
  out += "\n";
  too_long_note(m, g.decode, out);
}

void group_row(const KernelGroup& g, std::string& out) {
  out += fmt::format("{} | {} | {} | {} | {} | {} | {} | {} |\n", grouped(g.kernels),
                     num(g.time_us), pct(g.time_share_pct), num(g.mean_duration_us),
                     pct(g.mean_sm_throughput_pct), pct(g.mean_dram_throughput_pct),
                     pct(100 * g.mean_achieved_occupancy), pct(100 * g.mean_l2_hit_rate));
}

void kernel_section(const ReportData& d, std::string& out) {
  const auto& hw = d.hw;
  const auto& p = d.run;
  out += "### 2.4 Kernel-level profiling\n\n";
  out += fmt::format(
      "The workload as given ({}), simulated exactly as `gpusim run` does: {} kernels, {} ms of "
      "kernel "
      "time in {} ms.",
      workload_phrase(d), grouped(p.kernels), ms(p.kernel_time_us), ms(p.total_us));
  if (!d.run_scope.empty()) out += " Kernel figures cover the " + d.run_scope + ".";
  out += "\n\n";
  // Kernel time is what a profiler's kernel rows add up to; the rates below are over it.
  const double listed_seconds = [&p] {
    double t = 0;
    for (const auto& b : p.bounds) t += b.time_us;
    return t * 1e-6;
  }();
  const double warps = p.achieved_warps_per_sm;
  const double dram = listed_seconds > 0 ? p.dram_bytes / listed_seconds : 0;
  const double peak = peak_flops_at_boost(hw, d.dtype);
  const double flops =
      listed_seconds > 0 ? (d.dtype == hw::DType::kFp32 ? p.flops : p.tensor_flops) / listed_seconds
                         : 0;
  out += fmt::format("Nsight Compute metrics (simulated): {}, {}\n\n", workload_phrase(d),
                     upper(std::string(hw::name(d.dtype))));
  out +=
      "| Metric | Simulated value | Peak theoretical | Utilization (%) |\n|---|---:|---:|---:|\n";
  out += fmt::format("| SM occupancy | {:.1f} warps/SM | {} warps/SM | {} |\n", warps,
                     hw.sm.max_warps, pct(100 * warps / hw.sm.max_warps));
  out += fmt::format("| DRAM bandwidth ({}) | {} | {} (datasheet) | {} |\n", hw.dram.kind,
                     bytes_rate(dram), bytes_rate(hw.dram.bandwidth),
                     pct(100 * dram / hw.dram.bandwidth));
  out += fmt::format("| FLOP/s ({}) | {} | {} (at {:.0f} MHz) | {} |\n", compute_peak_name(d.dtype),
                     flops_rate(flops), flops_rate(peak), mhz(hw.clocks.boost_hz),
                     pct(peak > 0 ? 100 * flops / peak : 0));
  out +=
      "\nEach figure is averaged over kernel time (a kernel counts in proportion to its duration): "
      "achieved "
      "warps per SM over all SMs, DRAM bytes read and written over kernel time, ";
  out += d.dtype == hw::DType::kFp32 ? "all FLOPs over kernel time (fp32 has no tensor-core path). "
                                     : "tensor-core FLOPs over kernel time. ";
  out += "Launch gaps between kernels are not in kernel time.\n\n";

  out += "Kernel time by op category\n\n";
  out +=
      "| Category | Kernels | Time (us) | Share (%) | Mean duration (us) | SM throughput (%) | "
      "DRAM throughput (%) | "
      "Occupancy (%) | L2 hit rate (%) | Main bound class |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& c : p.categories) {
    out += fmt::format("| {} | ", c.group.name);
    group_row(c.group, out);
    out.pop_back();
    out += fmt::format(" {} ({}%) |\n", c.main_bound, pct(c.main_bound_share_pct));
  }
  out += "\nKernel time by bound class\n\n";
  out +=
      "| Bound class | Kernels | Time (us) | Share (%) | Mean duration (us) | SM throughput (%) | "
      "DRAM throughput (%) | "
      "Occupancy (%) | L2 hit rate (%) |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& g : p.by_bound) {
    out += fmt::format("| {} | ", g.name);
    group_row(g, out);
  }
  out +=
      "\nThroughputs, occupancy and hit rates in these two tables are plain means over the "
      "kernels, as "
      "seed 003 averages them. Classes: memory and compute compare the kernel's arithmetic "
      "intensity "
      "with the ridge point and need the matching roof to be the busier one; latency marks kernels "
      "too "
      "short or too narrow to load either; balanced is the rest.\n\n";

  out += fmt::format("Top {} kernels by time (identical launches merged)\n\n", p.top.size());
  out +=
      "| # | Kernel | First op | Launches | Time (us) | Share (%) | SM throughput (%) | DRAM "
      "throughput (%) | Bound class |\n";
  out += "|---:|---|---|---:|---:|---:|---:|---:|---|\n";
  for (std::size_t i = 0; i < p.top.size(); ++i) {
    const auto& k = p.top[i];
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", i + 1, cell_code(k.name),
                       cell_code(k.op, 48), k.launches, num(k.time_us), pct(k.share_pct),
                       pct(k.sm_throughput_pct), pct(k.dram_throughput_pct), k.bound);
  }
  out += "\n";
}

void roofline_section(const ReportData& d, std::string& out) {
  const auto& r = d.roofline;
  const auto& p = d.run;
  out += "### 3.1 Roofline analysis\n\n";
  out += fmt::format(
      "Each kernel with FLOPs ({} of {}) sits at its arithmetic intensity (FLOPs per DRAM byte) "
      "and its achieved "
      "FLOP/s; kernels without FLOPs (copies, fills) have no place on it. The memory roof is the "
      "achievable DRAM "
      "bandwidth, {} ({}% of the datasheet peak: what a large copy reaches); ",
      grouped(p.roofline_points), grouped(p.kernels), bytes_rate(r.dram_bytes_per_s),
      pct(100 * d.hw.dram.efficiency));
  if (r.tensor_flops_per_s > 0) {
    out += fmt::format(
        "the compute roofs are the {} peak, {} at the sustained tensor clock ({:.0f} MHz; ridge "
        "point {} FLOP/B), "
        "and the FP32 peak, {} at {:.0f} MHz (ridge point {} FLOP/B).",
        compute_peak_name(d.dtype), flops_rate(r.tensor_flops_per_s),
        mhz(d.hw.clocks.sustained_tensor_hz), num(r.tensor_flops_per_s / r.dram_bytes_per_s),
        flops_rate(r.fp32_flops_per_s), mhz(d.hw.clocks.sustained_other_hz),
        num(r.fp32_flops_per_s / r.dram_bytes_per_s));
  } else {
    out +=
        fmt::format("the compute roof is the FP32 peak, {} at {:.0f} MHz (ridge point {} FLOP/B).",
                    flops_rate(r.fp32_flops_per_s), mhz(d.hw.clocks.sustained_other_hz),
                    num(r.fp32_flops_per_s / r.dram_bytes_per_s));
  }
  out += " Colours mark the bound class.\n\n";
  if (r.drawn) {
    out += fmt::format("![Roofline: {} on the {}](roofline.png)\n\n", d.workload_name, d.hw.name);
    out += fmt::format(
        "*Roofline model: {} on the {}, {}. Data: `kernels.csv`; script: "
        "`scripts/plot_roofline.py`.*\n\n",
        d.workload_name, d.hw.name, hw::name(d.dtype));
  } else {
    out += "The roofline image was not drawn: " + r.missing_reason +
           ". Its points are in `kernels.csv`.\n\n";
  }
}

void regime_row(const std::string& regime, const StepProfile& p, const ReportData& d,
                std::string& out) {
  const Verdict v = verdict(p, d.hw, d.dtype);
  out += fmt::format("| {} | {} | {} | {} |\n", regime, upper(bound_word(v.bound)),
                     limiting_resource(v.bound, d.dtype), v.evidence);
}

void bottleneck_section(const ReportData& d, std::string& out) {
  out += "### 3.2 Identified bottlenecks\n\n";
  out +=
      "The bound class holding the most kernel time in each regime, the resource that limits it, "
      "and the evidence.\n\n";
  out += "Bottleneck classification by operating regime\n\n";
  out += "| Regime | Class | Limiting resource | Evidence |\n|---|---|---|---|\n";
  if (d.model) {
    const auto& g = d.model->grid;
    // Batch 1 (the grid's first row): the longest simulated sequence of each regime.
    const GridCell* short_cell = nullptr;
    const GridCell* long_cell = nullptr;
    for (std::size_t s = 0; s < g.seq_lens.size() && !g.batches.empty(); ++s) {
      const GridCell& c = g.prefill_cell(0, s);
      if (!c.profile) continue;
      if (c.seq_len <= 512) short_cell = &c;
      if (c.seq_len >= 4096) long_cell = &c;
    }
    const char* step = g.training ? "training step" : "prefill";
    if (short_cell) {
      regime_row(fmt::format("Short seq (N ≤ 512): {}, batch {}, N = {}", step, short_cell->batch,
                             short_cell->seq_len),
                 *short_cell->profile, d, out);
    }
    if (long_cell) {
      regime_row(fmt::format("Long seq (N ≥ 4096): {}, batch {}, N = {}", step, long_cell->batch,
                             long_cell->seq_len),
                 *long_cell->profile, d, out);
    }
    for (const auto& c : g.decode) {
      if (!c.profile) continue;
      regime_row(fmt::format("Decode: batch {}, KV length {}", c.batch, c.seq_len), *c.profile, d,
                 out);
      break;  // the smallest batch that fits
    }
  }
  regime_row("The workload as given", d.run, d, out);
  out += "\n";

  out += "### 3.3 Optimization hypotheses\n\n";
  const auto& p = d.run;
  const std::size_t n = std::min<std::size_t>(3, p.categories.size());
  if (n > 0) {
    out += fmt::format(
        "The {} costliest op categories of the workload as given, and what would help each:\n\n",
        n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& c = p.categories[i];
      out += fmt::format("- **{}**: {}% of kernel time, {}% of it {}. What would help: {}.\n",
                         c.group.name, pct(c.group.time_share_pct), pct(c.main_bound_share_pct),
                         bound_word(c.main_bound), remedy(c.main_bound, d.dtype));
    }
    out += "\n";
  }
  if (!p.top.empty()) {
    const std::size_t k = std::min<std::size_t>(3, p.top.size());
    out += "The costliest kernels:\n\n";
    for (std::size_t i = 0; i < k; ++i) {
      const auto& t = p.top[i];
      out += fmt::format("{}. {}: {} launch{}, {}% of kernel time, {}.\n", i + 1, cell_code(t.name),
                         t.launches, t.launches == 1 ? "" : "es", pct(t.share_pct),
                         bound_word(t.bound));
    }
    out += "\n";
  }
  if (p.total_us > p.kernel_time_us && p.total_us > 0) {
    out += fmt::format(
        "Launch gaps and idle time take {}% of the {} ms wall time in {} mode{}.\n\n",
        pct(100 * (p.total_us - p.kernel_time_us) / p.total_us), ms(p.total_us), d.mode,
        d.mode == "graph" ? "; eager launches (`--mode eager`) would add host-bound gaps" : "");
  }
}

void reproduction(const ReportData& d, std::string& out) {
  out += "## 4. Reproduction\n\n";
  out +=
      "The simulator is deterministic: these commands give the same numbers on any "
      "machine.\n\n```sh\n";
  for (const auto& c : d.commands) out += c + "\n";
  out += "```\n\n";
  out += "Files next to this report: `kernels.csv` (every kernel of section 2.4, one row each)";
  out += d.roofline.drawn ? " and `roofline.png`.\n" : ".\n";
}

}  // namespace

double peak_flops_at_boost(const hw::HardwareSpec& hw, hw::DType dtype) {
  const double per_cycle =
      dtype == hw::DType::kFp32 ? hw.throughput.fp32 : hw.tensor_flops_per_cycle(dtype);
  return per_cycle * hw.sm_count * hw.clocks.boost_hz;
}

std::string render_markdown(const ReportData& d) {
  std::string out;
  title_and_abstract(d, out);
  environment(d, out);
  out += "## 2. Hardware profiling\n\n";
  if (d.model && d.model->grid.training) {
    training_sections(d, out);
  } else if (d.model) {
    memory_section(d, out);
    ttft_section(d, out);
    decode_section(d, out);
  } else {
    out +=
        "Peak memory, time-to-first-token and decode-throughput tables need a model workload "
        "(`model:`); "
        "this one lists ops, so this section has the kernel-level profile only.\n\n";
  }
  kernel_section(d, out);
  out += "## 3. Architectural bottlenecks\n\n";
  roofline_section(d, out);
  bottleneck_section(d, out);
  reproduction(d, out);
  return out;
}

}  // namespace gpusim::cli
