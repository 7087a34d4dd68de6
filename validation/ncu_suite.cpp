#include "validation/ncu_suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "hw/gpu_engine.h"
#include "sim/error.h"
#include "validation/csv.h"

namespace gpusim::validation {
namespace {

// "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" -> "vectorized_elementwise_kernel"
// (Markdown-safe: no template arguments).
std::string short_name(const std::string& name) {
  std::string s = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
  int depth = 0;
  std::string out;
  for (char c : s) {  // drop template arguments and the parameter list
    if (c == '<' || c == '(') ++depth;
    if (depth == 0) out += c;
    if ((c == '>' || c == ')') && depth > 0) --depth;
  }
  const std::size_t colon = out.rfind("::");
  if (colon != std::string::npos) out = out.substr(colon + 2);
  if (out.size() > 60) out = out.substr(0, 57) + "...";
  return out;
}

Comparison row(const NcuOp& op, const NcuKernel& k, const std::string& family, const std::string& what,
               double measured, double simulated, ErrorKind kind, const std::string& simulated_name) {
  Comparison c;
  c.reference = op.op;
  c.reference.label = fmt::format("{} #{} {}: {}", op.op.label, k.kernel_index, short_name(k.name), what);
  c.reference.family = family;
  c.reference.measured_us = measured;
  c.reference.measured_kernels = {k.name};
  c.simulated_us = simulated;
  c.simulated_kernels = {short_name(simulated_name)};
  c.error_kind = kind;
  c.error_pct = kind == ErrorKind::kPoints ? simulated - measured : 100.0 * (simulated - measured) / measured;
  return c;
}

}  // namespace

const std::vector<std::string>& ncu_metric_families() {
  static const std::vector<std::string> kFamilies{"achieved-occupancy", "achieved-occupancy-active", "theoretical-occ",
                                                  "dram-throughput", "l2-hit-rate", "duration",
                                                  "sm-throughput"};
  return kFamilies;
}

std::vector<NcuOp> read_ncu_ops(const std::filesystem::path& csv, int max_warps_per_sm) {
  const std::vector<MeasuredOp> measured = read_measured_ops(csv);
  std::vector<NcuOp> ops;
  std::map<std::string, std::size_t> index;  // label -> position in ops
  for (const auto& m : measured) {
    index.emplace(m.label, ops.size());
    ops.push_back({m, {}});
  }
  const CsvTable t = CsvTable::read(csv);
  for (std::size_t row = 0; row < t.rows(); ++row) {
    // The label read_measured_ops gives the row's op.
    const std::string label = t.at(row, "op") + " " + t.at(row, "dtype") + " " + t.at(row, "shape");
    NcuOp& op = ops.at(index.at(label));
    NcuKernel k;
    k.kernel_index = static_cast<int>(t.number(row, "kernel_index"));
    if (k.kernel_index != static_cast<int>(op.kernels.size())) {
      throw ConfigError(csv.string(), t.line_of(row), "kernel_index",
                        fmt::format("expected {} for {}", op.kernels.size(), label));
    }
    k.name = t.at(row, "kernel_name");
    k.grid = t.at(row, "grid");
    k.block = t.at(row, "block");
    k.duration_us = t.number(row, "gpu__time_duration.sum") / 1e3;
    k.occupancy_pct = 100.0 * t.number(row, "sm__warps_active.avg.per_cycle_elapsed") / max_warps_per_sm;
    k.occupancy_active_pct = t.number(row, "sm__warps_active.avg.pct_of_peak_sustained_active");
    k.theoretical_occupancy_pct = t.number(row, "sm__maximum_warps_per_active_cycle_pct");
    k.dram_throughput_pct = t.number(row, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
    k.dram_bytes = t.number(row, "dram__bytes_read.sum") + t.number(row, "dram__bytes_write.sum");
    k.l2_hit_rate_pct = t.number(row, "lts__t_sector_hit_rate.pct");
    k.l2_bytes = t.number(row, "lts__t_bytes.sum");
    k.l2_sm_bytes = 32.0 * t.number(row, "lts__t_sectors_srcunit_tex.sum");
    k.sm_throughput_pct = t.number(row, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    k.clock_mhz = t.number(row, "sm__cycles_elapsed.avg.per_second") / 1e6;
    if (k.duration_us <= 0) {
      throw ConfigError(csv.string(), t.line_of(row), "gpu__time_duration.sum", "must be positive");
    }
    op.kernels.push_back(std::move(k));
  }
  return ops;
}

NcuSuiteResult compare_ncu(const std::vector<NcuOp>& ops, const hw::HardwareSpec& hw,
                           const models::KernelModelRegistry& models) {
  NcuSuiteResult out;
  for (const auto& op : ops) {
    if (!op.op.op) {
      out.skipped.push_back(op.op.label + ": " + op.op.skip_reason);
      continue;
    }
    std::vector<hw::KernelNode> nodes;
    for (auto& l : models.lower(*op.op.op, hw, "op")) nodes.push_back({std::move(l), op.op.label, 0, {}, std::nullopt});
    // --cache-control all writes the L2 back and invalidates it before every replay pass.
    const hw::EngineResult r =
        hw::run_engine(hw, hw::LaunchMode::kGraph, nodes, nullptr, nullptr, hw::L2DirtyLines::Start::kClean);
    // Nsight Compute profiles kernels, not cudaMemsetAsync: match the simulated kernels only.
    std::vector<std::size_t> kernels;
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
      if (nodes[i].launch.family != "memset") kernels.push_back(i);
    }
    if (kernels.size() != op.kernels.size()) {
      std::string names;
      for (std::size_t i : kernels) names += (names.empty() ? "" : ", ") + short_name(r.kernels[i].name);
      out.skipped.push_back(fmt::format("{}: {} kernels measured, {} simulated ({}); not matched",
                                        op.op.label, op.kernels.size(), kernels.size(), names));
      continue;
    }
    for (std::size_t j = 0; j < kernels.size(); ++j) {
      const std::size_t i = kernels[j];
      const NcuKernel& k = op.kernels[j];
      const hw::KernelMetrics m = hw::kernel_metrics(hw, nodes[i].launch, r.kernels[i]);
      const std::string& sim_name = r.kernels[i].name;
      out.pairs.push_back({op.op.label, op.op.held_out, k, sim_name, m});
      const double l2_form = k.l2_sm_bytes > 0 ? 100.0 * std::max(0.0, 1.0 - k.dram_bytes / k.l2_sm_bytes) : 0.0;
      out.rows.push_back(row(op, k, "achieved-occupancy",
                             "achieved occupancy % (all SMs over the kernel's span)",
                             k.occupancy_pct, 100.0 * m.achieved_occupancy, ErrorKind::kPoints, sim_name));
      out.rows.push_back(row(op, k, "achieved-occupancy-active",
                             "achieved occupancy % over active SM cycles (Nsight's own)",
                             k.occupancy_active_pct, 100.0 * m.achieved_occupancy_active,
                             ErrorKind::kPoints, sim_name));
      out.rows.push_back(row(op, k, "theoretical-occ", "theoretical occupancy %",
                             k.theoretical_occupancy_pct, 100.0 * m.theoretical_occupancy,
                             ErrorKind::kPoints, sim_name));
      out.rows.push_back(row(op, k, "dram-throughput", "DRAM throughput %", k.dram_throughput_pct,
                             m.dram_throughput_pct, ErrorKind::kPoints, sim_name));
      out.rows.push_back(row(op, k, "l2-hit-rate",
                             fmt::format("L2 hit rate % (measured 1-DRAM/SM-L2 bytes {:.1f})", l2_form),
                             k.l2_hit_rate_pct, 100.0 * m.l2_hit_rate, ErrorKind::kPoints, sim_name));
      out.rows.push_back(row(op, k, "duration", "duration us", k.duration_us, m.duration_us,
                             ErrorKind::kRelative, sim_name));
      out.rows.push_back(row(op, k, "sm-throughput", "SM throughput %", k.sm_throughput_pct,
                             m.sm_throughput_pct, ErrorKind::kPoints, sim_name));
    }
  }
  return out;
}

}  // namespace gpusim::validation
