#include "src/report_writers.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "src/output_files.h"

#include "src/number_format.h"

namespace gpusim::cli {
namespace {

std::string dims(const hw::Dim3& d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

std::string shorten(const std::string& name, std::size_t width) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

std::string bound_name(const KernelReport& k) { return std::string(hw::name(k.metrics.bound)); }

nlohmann::ordered_json groups_json(const std::vector<KernelGroup>& groups) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& g : groups) {
    out.push_back({{"name", g.name},
                   {"kernels", g.kernels},
                   {"time_us", g.time_us},
                   {"time_share_pct", g.time_share_pct},
                   {"mean_duration_us", g.mean_duration_us},
                   {"mean_sm_throughput_pct", g.mean_sm_throughput_pct},
                   {"mean_dram_throughput_pct", g.mean_dram_throughput_pct},
                   {"mean_memory_throughput_pct", g.mean_memory_throughput_pct},
                   {"mean_achieved_occupancy", g.mean_achieved_occupancy},
                   {"mean_l2_hit_rate", g.mean_l2_hit_rate}});
  }
  return out;
}

std::string gigabytes(std::int64_t b) {
  const double v = static_cast<double>(b);
  return v >= 1e9 ? fmt::format("{:.2f} GB", v / 1e9) : fmt::format("{:.1f} MB", v / 1e6);
}

void write_model_summary(const RunReport& r, std::ostream& out) {
  for (const auto& p : r.phases) {
    out << fmt::format("phase {:<8} {:>5} step{}  total {:.2f} us   kernel time {:.2f} us   {} kernels\n",
                       p.name, p.steps, p.steps == 1 ? " " : "s", p.total_us, p.kernel_time_us, p.kernels);
  }
  if (r.training) {
    const auto& t = *r.training;
    out << fmt::format("train: {:.0f} tokens/s   MFU {:.1f}% ({:.3g} model FLOPs)   GEMMs {:.1f}% of kernel time\n",
                       t.tokens_per_s, t.mfu_pct, t.model_flops, t.gemm_share_pct);
  }
  if (r.generation) {
    const auto& g = *r.generation;
    out << fmt::format("generate: TTFT {:.1f} us   TPOT {:.1f} us   {:.1f} tokens/s   total {:.1f} us\n",
                       g.ttft_us, g.tpot_us, g.tokens_per_s, g.total_us);
  }
  if (r.memory) {
    const auto& m = *r.memory;
    out << fmt::format("memory{}: weights {}  KV cache {} ({} tokens/seq)  activations {}  total {} of {}  {}\n",
                       m.gpus > 1 ? fmt::format(" per GPU ({} GPUs)", m.gpus) : std::string(), gigabytes(m.weights_bytes), gigabytes(m.kv_cache_bytes), m.kv_cache_tokens,
                       gigabytes(m.activation_peak_bytes), gigabytes(m.total_bytes),
                       gigabytes(m.capacity_bytes), m.fits ? "fits" : "DOES NOT FIT");
    if (m.gradients_bytes > 0) {
      out << fmt::format("training: gradients {} (within the activations)  optimizer state {}\n",
                         gigabytes(m.gradients_bytes), gigabytes(m.optimizer_state_bytes));
    }
    if (!m.fits) {
      out << fmt::format("WARNING: the real device would run out of memory ({} needed, {} available); "
                         "the latency below assumes it did not.\n",
                         gigabytes(m.total_bytes), gigabytes(m.capacity_bytes));
    }
  }
  if (!r.pipeline.empty()) {
    out << fmt::format("pipeline: {} stages x {} micro-batches{} (kernels listed for one GPU of each stage)\n",
                       r.pipeline.size(), r.micro_batches,
                       r.gpus_per_stage > 1 ? fmt::format(", {} GPUs a stage", r.gpus_per_stage) : std::string());
    for (const auto& st : r.pipeline) {
      const double span = st.busy_us + st.idle_us;
      out << fmt::format("  stage {:<2} layers {:>3}-{:<3}  busy {:.2f} us  idle {:.2f} us ({:.1f}% bubble)  "
                         "kernel time {:.2f} us  {} kernels\n",
                         st.stage, st.first_layer, st.first_layer + st.layers - 1, st.busy_us, st.idle_us,
                         span > 0 ? 100 * st.idle_us / span : 0.0, st.kernel_time_us, st.kernels);
    }
  }
  if (!r.kernels_scope.empty()) out << "kernels listed: " << r.kernels_scope << "\n";
  if (!r.phases.empty()) out << "\n";
}

void write_groups(const std::string& title, const std::vector<KernelGroup>& groups, std::ostream& out) {
  out << title << "\n";
  out << fmt::format("  {:<12} {:>7} {:>11} {:>6} {:>9} {:>6} {:>6} {:>6} {:>7}\n", "", "kernels",
                     "time(us)", "share", "mean(us)", "SM%", "DRAM%", "occ%", "L2hit%");
  for (const auto& g : groups) {
    out << fmt::format("  {:<12} {:>7} {:>11.2f} {:>5.1f}% {:>9.2f} {:>6.1f} {:>6.1f} {:>6.1f} {:>7.1f}\n",
                       g.name, g.kernels, g.time_us, g.time_share_pct, g.mean_duration_us,
                       g.mean_sm_throughput_pct, g.mean_dram_throughput_pct,
                       100 * g.mean_achieved_occupancy, 100 * g.mean_l2_hit_rate);
  }
  out << "\n";
}

void write_top_kernels(const RunReport& r, std::ostream& out, int top) {
  const auto merged = merge_identical_launches(r.kernels);
  const std::size_t shown = top > 0 ? std::min<std::size_t>(merged.size(), static_cast<std::size_t>(top))
                                    : merged.size();
  out << fmt::format("Top {} of {} kernels by time (identical launches merged; csv/json list every launch)\n",
                     shown, merged.size());
  out << fmt::format("{:>3} {:>5} {:>10} {:>6} {:>9}  {:<8} {:>5} {:>5} {:>5} {:>5} {:>12} {:>9}  {}\n", "#",
                     "runs", "time(us)", "share", "each(us)", "bound", "SM%", "DRAM%", "occ%", "L2%",
                     "grid", "block", "kernel (first op)");
  for (std::size_t i = 0; i < shown; ++i) {
    const MergedLaunches& g = merged[i];
    const KernelReport& k = *g.first;
    const auto& m = k.metrics;
    out << fmt::format("{:>3} {:>5} {:>10.2f} {:>5.1f}% {:>9.2f}  {:<8} {:>5.1f} {:>5.1f} {:>5.1f} {:>5.1f} {:>12} {:>9}  {} ({})\n",
                       i, g.launches, g.time_us, r.kernel_time_us > 0 ? 100 * g.time_us / r.kernel_time_us : 0,
                       g.time_us / static_cast<double>(g.launches), bound_name(k), m.sm_throughput_pct,
                       m.dram_throughput_pct, 100 * m.achieved_occupancy, 100 * m.l2_hit_rate, dims(k.grid),
                       dims(k.block), shorten(k.name, 60), shorten(k.op, 40));
  }
}

std::string csv_quoted(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

namespace {
nlohmann::ordered_json kernel_metrics_json(const KernelReport& k);
}  // namespace

nlohmann::ordered_json kernel_json(const KernelReport& k) {
  nlohmann::ordered_json j = kernel_metrics_json(k);
  if (k.band_high_us > 0) {
    j["band_us"] = {k.band_low_us, k.band_high_us};
    j["band_calibrated"] = k.band_calibrated;
  }
  round_numbers(j);  // the trace writer's kernel args too
  return j;
}

namespace {
nlohmann::ordered_json kernel_metrics_json(const KernelReport& k) {
  const hw::KernelMetrics& m = k.metrics;
  return {{"name", k.name},
          {"op", k.op},
          {"family", k.family},
          {"category", k.category},
          {"stream", k.stream},
          {"start_us", k.start_us},
          {"duration_us", m.duration_us},
          {"grid", {k.grid.x, k.grid.y, k.grid.z}},
          {"block", {k.block.x, k.block.y, k.block.z}},
          {"regs", k.regs},
          {"smem", k.smem},
          {"flops", m.flops},
          {"tensor_flops", m.tensor_flops},
          {"dram_bytes", m.dram_bytes},
          {"l2_bytes", m.l2_bytes},
          {"arithmetic_intensity", m.arithmetic_intensity},
          {"ridge_point", m.ridge_point},
          {"flops_per_s", m.flops_per_s},
          {"dram_bytes_per_s", m.dram_bytes_per_s},
          {"ctas", m.ctas},
          {"ctas_per_sm", m.ctas_per_sm},
          {"waves", m.waves},
          {"theoretical_occupancy", m.theoretical_occupancy},
          {"achieved_occupancy", m.achieved_occupancy},
          {"achieved_warps_per_sm", m.achieved_warps_per_sm},
          {"achieved_occupancy_active", m.achieved_occupancy_active},
          {"sm_throughput_pct", m.sm_throughput_pct},
          {"dram_throughput_pct", m.dram_throughput_pct},
          {"memory_throughput_pct", m.memory_throughput_pct},
          {"l2_hit_rate", m.l2_hit_rate},
          {"l2_input_hit_rate", m.l2_input_hit_rate},
          {"clock_mhz", m.clock_mhz},
          {"bound", bound_name(k)}};
}
}  // namespace

void write_table(const RunReport& r, std::ostream& out, int top) {
  out << fmt::format("hw {}  |  workload {}  |  mode {}\n", r.hw, r.workload, r.mode);
  out << fmt::format("total {:.2f} us   kernel time {:.2f} us   {} kernels\n", r.total_us,
                     r.kernel_time_us, r.kernels.size());
  if (!r.band_source.empty()) {
    out << fmt::format("80% band: total {:.2f}-{:.2f} us, kernel time {:.2f}-{:.2f} us (kernel families' "
                       "measured/simulated spread on {}{})\n",
                       r.total_low_us, r.total_high_us, r.kernel_time_low_us, r.kernel_time_high_us,
                       r.band_source,
                       r.kernels_outside_bands > 0
                           ? fmt::format("; {} kernels outside their family's calibrated range take the "
                                         "pooled band", r.kernels_outside_bands)
                           : "");
  }
  out << "\n";
  out << r.description;
  write_model_summary(r, out);
  write_groups("Kernel time by op category", r.by_category, out);
  write_groups("Kernel time by bound class (memory / compute: intensity against the ridge point and the "
               "busier roof; balanced: neither; latency: low use of both in a short or narrow kernel)",
               r.by_bound, out);
  write_top_kernels(r, out, top);
}

nlohmann::ordered_json report_json(const RunReport& r) {
  nlohmann::ordered_json j;
  j["hw"] = r.hw;
  j["workload"] = r.workload;
  j["mode"] = r.mode;
  if (!r.dtype.empty()) j["dtype"] = r.dtype;
  if (!r.dtype_default.empty()) j["dtype_default"] = r.dtype_default;
  j["total_us"] = r.total_us;
  j["kernel_time_us"] = r.kernel_time_us;
  if (!r.band_source.empty()) {
    j["bands"] = {{"coverage", 0.8},
                  {"source", r.band_source},
                  {"total_us", {r.total_low_us, r.total_high_us}},
                  {"kernel_time_us", {r.kernel_time_low_us, r.kernel_time_high_us}},
                  {"kernels_outside_calibration", r.kernels_outside_bands}};
  }
  if (!r.phases.empty()) {
    j["phases"] = nlohmann::ordered_json::array();
    for (const auto& p : r.phases) {
      j["phases"].push_back({{"name", p.name}, {"steps", p.steps}, {"total_us", p.total_us},
                             {"kernel_time_us", p.kernel_time_us}, {"kernels", p.kernels}});
    }
  }
  if (r.training) {
    const auto& t = *r.training;
    j["training"] = {{"tokens", t.tokens}, {"tokens_per_s", t.tokens_per_s}, {"model_flops", t.model_flops},
                     {"mfu_pct", t.mfu_pct}, {"gemm_share_pct", t.gemm_share_pct}};
  }
  if (r.generation) {
    const auto& g = *r.generation;
    j["generation"] = {{"output_tokens", g.output_tokens}, {"ttft_us", g.ttft_us}, {"tpot_us", g.tpot_us},
                       {"tokens_per_s", g.tokens_per_s}, {"total_us", g.total_us}};
  }
  if (r.memory) {
    const auto& m = *r.memory;
    j["memory"] = {{"weights_bytes", m.weights_bytes}, {"kv_cache_bytes", m.kv_cache_bytes},
                   {"kv_cache_tokens", m.kv_cache_tokens}, {"activation_peak_bytes", m.activation_peak_bytes},
                   {"total_bytes", m.total_bytes}, {"capacity_bytes", m.capacity_bytes}, {"fits", m.fits},
                   {"gpus", m.gpus}};  // every byte figure is one GPU's
    if (m.gradients_bytes > 0) {
      // A training step: its gradients and optimizer state (0 with optimizer: none), and its
      // peak (= total_bytes).
      j["memory"]["gradients_bytes"] = m.gradients_bytes;
      j["memory"]["optimizer_state_bytes"] = m.optimizer_state_bytes;
      j["memory"]["peak_bytes"] = m.total_bytes;
    }
  }
  if (!r.pipeline.empty()) {
    // Every stage's GPU (one of its group); the step's kernel time is theirs summed.
    auto& pj = j["pipeline"];
    pj["stages"] = r.pipeline.size();
    pj["micro_batches"] = r.micro_batches;
    pj["gpus_per_stage"] = r.gpus_per_stage;
    pj["stage"] = nlohmann::ordered_json::array();
    for (const auto& st : r.pipeline) {
      pj["stage"].push_back({{"stage", st.stage}, {"first_layer", st.first_layer}, {"layers", st.layers},
                             {"busy_us", st.busy_us}, {"idle_us", st.idle_us}, {"kernels", st.kernels},
                             {"kernel_time_us", st.kernel_time_us}});
    }
  }
  if (!r.kernels_scope.empty()) j["kernels_scope"] = r.kernels_scope;
  j["by_category"] = groups_json(r.by_category);
  j["by_bound"] = groups_json(r.by_bound);
  j["kernels"] = nlohmann::ordered_json::array();
  for (const auto& k : r.kernels) {
    j["kernels"].push_back(kernel_json(k));
    if (!r.pipeline.empty()) j["kernels"].back()["stage"] = k.stage;
  }
  j["simulation"] = {{"events", r.events}};
  round_numbers(j);
  return j;
}

void write_json(const RunReport& report, std::ostream& out) { out << dump_json(report_json(report), 2) << "\n"; }

void write_csv(const RunReport& r, std::ostream& out) {
  out << "index,op,name,family,category,stream,start_us,duration_us,grid_x,grid_y,grid_z,block_x,"
         "block_y,block_z,regs,smem,flops,tensor_flops,dram_bytes,l2_bytes,arithmetic_intensity,"
         "ridge_point,flops_per_s,dram_bytes_per_s,ctas,ctas_per_sm,waves,theoretical_occupancy,achieved_occupancy,"
         "achieved_warps_per_sm,sm_throughput_pct,dram_throughput_pct,l2_hit_rate,l2_input_hit_rate,"
         "clock_mhz,bound,achieved_occupancy_active,memory_throughput_pct\n";
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelReport& k = r.kernels[i];
    const hw::KernelMetrics& m = k.metrics;
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},", i, csv_quoted(k.op),
                       csv_quoted(k.name), k.family, csv_quoted(k.category), k.stream, number(k.start_us),
                       number(m.duration_us), k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z,
                       k.regs, k.smem);
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                       number(m.flops), number(m.tensor_flops), number(m.dram_bytes), number(m.l2_bytes),
                       number(m.arithmetic_intensity), number(m.ridge_point), number(m.flops_per_s),
                       number(m.dram_bytes_per_s), m.ctas, m.ctas_per_sm, number(m.waves),
                       number(m.theoretical_occupancy), number(m.achieved_occupancy),
                       number(m.achieved_warps_per_sm), number(m.sm_throughput_pct),
                       number(m.dram_throughput_pct), number(m.l2_hit_rate), number(m.l2_input_hit_rate),
                       number(m.clock_mhz), bound_name(k), number(m.achieved_occupancy_active),
                       number(m.memory_throughput_pct));
  }
}

void write_run_folder(const RunReport& report, const std::filesystem::path& dir, int top) {
  std::filesystem::create_directories(dir);
  std::ostringstream table, json, csv, trace;
  write_table(report, table, top);
  write_json(report, json);
  write_csv(report, csv);
  write_chrome_trace(report, trace);
  write_file(dir / "summary.txt", table.str());
  write_file(dir / "result.json", json.str());
  write_file(dir / "kernels.csv", csv.str());
  write_file(dir / "trace.json", trace.str());
}

}  // namespace gpusim::cli
