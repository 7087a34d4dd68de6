#include "src/report_writers.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

namespace gpusim::cli {
namespace {

std::string dims(const hw::Dim3& d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

std::string shorten(const std::string& name, std::size_t width) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

nlohmann::ordered_json kernel_json(const KernelReport& k) {
  return {{"name", k.name},
          {"op", k.op},
          {"family", k.family},
          {"start_us", k.start_us},
          {"duration_us", k.duration_us},
          {"grid", {k.grid.x, k.grid.y, k.grid.z}},
          {"block", {k.block.x, k.block.y, k.block.z}},
          {"regs", k.regs},
          {"smem", k.smem},
          {"flops", k.flops},
          {"dram_bytes", k.dram_bytes},
          {"l2_bytes", k.l2_bytes},
          {"waves", k.waves},
          {"theoretical_occupancy", k.theoretical_occupancy},
          {"achieved_occupancy", k.achieved_occupancy},
          {"sm_throughput_pct", k.sm_throughput_pct},
          {"dram_throughput_pct", k.dram_throughput_pct},
          {"l2_hit_rate", k.l2_hit_rate},
          {"l2_input_hit_rate", k.l2_input_hit_rate},
          {"clock_mhz", k.clock_mhz},
          {"bound", k.bound}};
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
  if (r.generation) {
    const auto& g = *r.generation;
    out << fmt::format("generate: TTFT {:.1f} us   TPOT {:.1f} us   {:.1f} tokens/s   total {:.1f} us\n",
                       g.ttft_us, g.tpot_us, g.tokens_per_s, g.total_us);
  }
  if (r.memory) {
    const auto& m = *r.memory;
    out << fmt::format("memory: weights {}  KV cache {} ({} tokens/seq)  activations {}  total {} of {}  {}\n",
                       gigabytes(m.weights_bytes), gigabytes(m.kv_cache_bytes), m.kv_cache_tokens,
                       gigabytes(m.activation_peak_bytes), gigabytes(m.total_bytes),
                       gigabytes(m.capacity_bytes), m.fits ? "fits" : "DOES NOT FIT");
    if (!m.fits) {
      out << fmt::format("WARNING: the real device would run out of memory ({} needed, {} available); "
                         "the latency below assumes it did not.\n",
                         gigabytes(m.total_bytes), gigabytes(m.capacity_bytes));
    }
  }
  if (!r.kernels_scope.empty()) out << "kernels listed: " << r.kernels_scope << "\n";
  if (!r.phases.empty()) out << "\n";
}

}  // namespace

void write_table(const RunReport& r, std::ostream& out) {
  out << fmt::format("hw {}  |  workload {}  |  mode {}\n", r.hw, r.workload, r.mode);
  out << fmt::format("total {:.2f} us   kernel time {:.2f} us   {} kernels\n\n", r.total_us,
                     r.kernel_time_us, r.kernels.size());
  out << r.description;
  write_model_summary(r, out);
  out << fmt::format("{:>3}  {:<22} {:<44} {:>13} {:>9} {:>10} {:>6} {:>6}  {}\n", "#", "op",
                     "kernel", "grid", "block", "time(us)", "SM%", "DRAM%", "bound");
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelReport& k = r.kernels[i];
    out << fmt::format("{:>3}  {:<22} {:<44} {:>13} {:>9} {:>10.2f} {:>6.1f} {:>6.1f}  {}\n", i,
                       shorten(k.op, 22), shorten(k.name, 44), dims(k.grid), dims(k.block),
                       k.duration_us, k.sm_throughput_pct, k.dram_throughput_pct, k.bound);
  }
}

void write_json(const RunReport& r, std::ostream& out) {
  nlohmann::ordered_json j;
  j["hw"] = r.hw;
  j["workload"] = r.workload;
  j["mode"] = r.mode;
  j["total_us"] = r.total_us;
  j["kernel_time_us"] = r.kernel_time_us;
  if (!r.phases.empty()) {
    j["phases"] = nlohmann::ordered_json::array();
    for (const auto& p : r.phases) {
      j["phases"].push_back({{"name", p.name}, {"steps", p.steps}, {"total_us", p.total_us},
                             {"kernel_time_us", p.kernel_time_us}, {"kernels", p.kernels}});
    }
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
                   {"total_bytes", m.total_bytes}, {"capacity_bytes", m.capacity_bytes}, {"fits", m.fits}};
  }
  if (!r.kernels_scope.empty()) j["kernels_scope"] = r.kernels_scope;
  j["kernels"] = nlohmann::ordered_json::array();
  for (const auto& k : r.kernels) j["kernels"].push_back(kernel_json(k));
  j["simulation"] = {{"events", r.events}};
  out << j.dump(2) << "\n";
}

void write_csv(const RunReport& r, std::ostream& out) {
  out << "index,op,name,family,start_us,duration_us,grid_x,grid_y,grid_z,block_x,block_y,block_z,"
         "regs,smem,flops,dram_bytes,l2_bytes,waves,theoretical_occupancy,achieved_occupancy,"
         "sm_throughput_pct,dram_throughput_pct,l2_hit_rate,l2_input_hit_rate,clock_mhz,bound\n";
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelReport& k = r.kernels[i];
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i,
                       quoted(k.op), quoted(k.name), k.family, k.start_us, k.duration_us, k.grid.x,
                       k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, k.regs, k.smem,
                       k.flops, k.dram_bytes, k.l2_bytes, k.waves, k.theoretical_occupancy,
                       k.achieved_occupancy, k.sm_throughput_pct, k.dram_throughput_pct,
                       k.l2_hit_rate, k.l2_input_hit_rate, k.clock_mhz, k.bound);
  }
}

void write_chrome_trace(const RunReport& r, std::ostream& out) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0},
                    {"args", {{"name", r.hw + " (simulated)"}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0},
                    {"args", {{"name", "stream 0"}}}});
  for (const auto& k : r.kernels) {
    events.push_back({{"name", k.name},
                      {"cat", k.family},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", 0},
                      {"ts", k.start_us},
                      {"dur", k.duration_us},
                      {"args", kernel_json(k)}});
  }
  nlohmann::ordered_json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ns";
  out << j.dump() << "\n";
}

}  // namespace gpusim::cli
