// The ncu suite: Nsight Compute kernel metrics (validation/data/ncu_h100.csv) against
// hw::kernel_metrics of the same ops simulated alone.
#include "validation/ncu_suite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hw/gpu_engine.h"
#include "hw/hardware_loader.h"
#include "sim/error.h"
#include "src/cli.h"
#include "tests/support/temp_files.h"
#include "validation/csv.h"

namespace gpusim::validation {
namespace {

using gpusim::testing::TempDir;

const char* kHeader =
    "op,family,dtype,shape,params_json,held_out,list_index,kernel_index,kernel_name,grid,block,"
    "op_kernel_time_us_median,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,"
    "sm__warps_active.avg.per_cycle_elapsed,sm__maximum_warps_per_active_cycle_pct,"
    "dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,"
    "lts__t_sector_hit_rate.pct,lts__t_bytes.sum,lts__t_sectors_srcunit_tex.sum,"
    "sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second\n";

// One kernel row; `warps` is warps per elapsed cycle, `ns` the duration.
std::string kernel_row(const std::string& op, const std::string& dtype, const std::string& shape,
                       const std::string& params, int held_out, int index, const std::string& name,
                       double warps, double ns) {
  std::ostringstream s;
  s << op << ",f," << dtype << "," << shape << ",\"" << params << "\"," << held_out << ",0," << index << ","
    << name << ",1x1x1,128x1x1,10," << ns << ",40," << warps << ",75,50,1000,500,35,3000,64,10,1.9e9\n";
  return s.str();
}

const hw::HardwareSpec& h100() {
  static const hw::HardwareSpec spec =
      hw::load_hardware("h100", hw::PresetCatalog(gpusim::testing::config_dir() / "hw"));
  return spec;
}

TEST(NcuSuite, ReadsKernelsInOrderAndConvertsUnits) {
  TempDir dir;
  const auto csv = dir.write(
      "ncu.csv", std::string(kHeader) +
                     kernel_row("add", "bf16", "n=4096", "{\"\"n\"\":4096}", 1, 0, "k0", 32, 2500) +
                     kernel_row("matmul", "bf16", "M=256 N=256 K=256", "{\"\"M\"\":256,\"\"N\"\":256,\"\"K\"\":256}",
                                0, 0, "g0", 8, 9000) +
                     kernel_row("matmul", "bf16", "M=256 N=256 K=256", "{\"\"M\"\":256,\"\"N\"\":256,\"\"K\"\":256}",
                                0, 1, "g1", 4, 1000));
  const auto ops = read_ncu_ops(csv, 64);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_TRUE(ops[0].op.held_out);
  ASSERT_EQ(ops[0].kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(ops[0].kernels[0].duration_us, 2.5);
  EXPECT_DOUBLE_EQ(ops[0].kernels[0].occupancy_pct, 50.0);  // 32 warps per cycle of 64
  EXPECT_DOUBLE_EQ(ops[0].kernels[0].occupancy_active_pct, 40.0);
  EXPECT_DOUBLE_EQ(ops[0].kernels[0].dram_bytes, 1500.0);
  EXPECT_DOUBLE_EQ(ops[0].kernels[0].l2_sm_bytes, 64.0 * 32);
  EXPECT_DOUBLE_EQ(ops[0].kernels[0].clock_mhz, 1900.0);
  EXPECT_DOUBLE_EQ(ops[0].kernels[0].sm_throughput_pct, 10.0);
  ASSERT_EQ(ops[1].kernels.size(), 2u);
  EXPECT_EQ(ops[1].kernels[1].name, "g1");

  // Kernel indices must run 0, 1, 2, ... per op.
  const auto bad = dir.write("bad.csv", std::string(kHeader) +
                                            kernel_row("add", "bf16", "n=4096", "{\"\"n\"\":4096}", 1, 1, "k", 1, 1));
  EXPECT_THROW(read_ncu_ops(bad, 64), ConfigError);
}

TEST(NcuSuite, EveryOpIsComparedOrSkippedWithAReason) {
  TempDir dir;
  const std::string mm = "{\"\"M\"\":256,\"\"N\"\":256,\"\"K\"\":256}";
  const auto csv = dir.write(
      "ncu.csv", std::string(kHeader) + kernel_row("add", "bf16", "n=1048576", "{\"\"n\"\":1048576}", 1, 0, "k", 10, 4000) +
                     // three kernels where gpusim launches fewer: skipped, and the skip says so
                     kernel_row("matmul", "bf16", "M=256 N=256 K=256", mm, 0, 0, "a", 1, 3000) +
                     kernel_row("matmul", "bf16", "M=256 N=256 K=256", mm, 0, 1, "b", 1, 3000) +
                     kernel_row("matmul", "bf16", "M=256 N=256 K=256", mm, 0, 2, "c", 1, 3000) +
                     // a forced backend gpusim does not model
                     kernel_row("sdpa", "bf16", "x", "{\"\"B\"\":1,\"\"H\"\":2,\"\"S\"\":64,\"\"D\"\":64,\"\"causal\"\":0,\"\"backend\"\":\"\"FLASH\"\"}",
                                0, 0, "f", 1, 3000));
  const auto ops = read_ncu_ops(csv, 64);
  const NcuSuiteResult r = compare_ncu(ops, h100(), models::default_kernel_models());
  ASSERT_EQ(r.pairs.size(), 1u);
  EXPECT_EQ(r.rows.size(), ncu_metric_families().size());
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_NE(r.skipped[0].find("3 kernels measured"), std::string::npos) << r.skipped[0];
  EXPECT_NE(r.skipped[1].find("forced SDPA backend"), std::string::npos) << r.skipped[1];
}

// Simulates `op` as the suite does and returns the metrics of its non-memset kernels.
std::vector<hw::KernelMetrics> simulate(const models::Op& op) {
  const auto models = models::default_kernel_models();
  std::vector<hw::KernelNode> nodes;
  for (auto& l : models.lower(op, h100(), "op")) nodes.push_back({std::move(l), "op", 0, {}, std::nullopt});
  const auto result = hw::run_engine(h100(), hw::LaunchMode::kGraph, nodes, nullptr, nullptr,
                                     hw::L2DirtyLines::Start::kClean);  // as ncu's cache control
  std::vector<hw::KernelMetrics> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].launch.family != "memset") out.push_back(hw::kernel_metrics(h100(), nodes[i].launch, result.kernels[i]));
  }
  return out;
}

TEST(NcuSuite, TheShippedDataComparesEveryKernelWithKernelMetrics) {
  const auto csv = gpusim::testing::repo_dir() / "validation" / "data" / "ncu_h100.csv";
  const auto ops = read_ncu_ops(csv, h100().sm.max_warps);
  EXPECT_EQ(ops.size(), 28u);
  std::size_t kernels = 0;
  int held_out = 0;
  for (const auto& op : ops) {
    kernels += op.kernels.size();
    held_out += op.op.held_out ? 1 : 0;
    ASSERT_TRUE(op.op.op.has_value()) << op.op.label;  // every instance is a default-path op
  }
  EXPECT_EQ(kernels, 31u);
  EXPECT_EQ(held_out, 14);  // every other instance of each op's list

  const NcuSuiteResult r = compare_ncu(ops, h100(), models::default_kernel_models());
  // Every op is compared or skipped with a reason; a compared op has all its kernels matched.
  std::set<std::string> compared;
  for (const auto& p : r.pairs) compared.insert(p.op_label);
  EXPECT_EQ(compared.size() + r.skipped.size(), ops.size());
  for (const auto& s : r.skipped) EXPECT_NE(s.find(": "), std::string::npos) << s;
  EXPECT_EQ(r.rows.size(), r.pairs.size() * ncu_metric_families().size());
  EXPECT_GE(r.pairs.size(), 25u);

  // The simulated values are kernel_metrics' own, the measured ones the CSV's, the errors their
  // difference: points for percentages, relative for the duration.
  std::size_t row = 0;
  for (const auto& op : ops) {
    if (!compared.count(op.op.label)) continue;
    const auto sim = simulate(*op.op.op);
    ASSERT_EQ(sim.size(), op.kernels.size()) << op.op.label;
    for (std::size_t k = 0; k < sim.size(); ++k) {
      const double simulated[] = {100 * sim[k].achieved_occupancy, 100 * sim[k].achieved_occupancy_active,
                                  100 * sim[k].theoretical_occupancy, sim[k].dram_throughput_pct,
                                  100 * sim[k].l2_hit_rate, sim[k].duration_us,
                                  sim[k].sm_throughput_pct};
      const NcuKernel& m = op.kernels[k];
      const double measured[] = {m.occupancy_pct, m.occupancy_active_pct, m.theoretical_occupancy_pct,
                                 m.dram_throughput_pct, m.l2_hit_rate_pct, m.duration_us,
                                 m.sm_throughput_pct};
      for (std::size_t f = 0; f < ncu_metric_families().size(); ++f, ++row) {
        const Comparison& c = r.rows.at(row);
        EXPECT_EQ(c.reference.family, ncu_metric_families()[f]);
        EXPECT_DOUBLE_EQ(c.simulated_us, simulated[f]) << c.reference.label;
        EXPECT_DOUBLE_EQ(c.reference.measured_us, measured[f]) << c.reference.label;
        EXPECT_EQ(c.reference.held_out, op.op.held_out);
        if (c.reference.family == "duration") {
          EXPECT_EQ(c.error_kind, ErrorKind::kRelative);
          EXPECT_NEAR(c.error_pct, 100 * (simulated[f] - measured[f]) / measured[f], 1e-9);
        } else {
          EXPECT_EQ(c.error_kind, ErrorKind::kPoints);
          EXPECT_NEAR(c.error_pct, simulated[f] - measured[f], 1e-9);
        }
      }
    }
  }
  EXPECT_EQ(row, r.rows.size());
}

// `gpusim validate --suite ncu-h100` in a copy of the repository layout (presets, thresholds,
// data), with the data as shipped and with one measured metric changed.
int validate_copy(const std::filesystem::path& root, const std::string& csv_text, std::string& out_text) {
  namespace fs = std::filesystem;
  const fs::path repo = gpusim::testing::repo_dir();
  fs::create_directories(root / "configs");
  fs::copy(repo / "configs" / "hw", root / "configs" / "hw",
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::create_directories(root / "validation" / "data");
  fs::copy_file(repo / "validation" / "thresholds.yaml", root / "validation" / "thresholds.yaml",
                fs::copy_options::overwrite_existing);
  std::ofstream(root / "validation" / "data" / "ncu_h100.csv") << csv_text;
  std::ostringstream out, err;
  const int status = cli::run_cli({"validate", "--suite", "ncu-h100", "--doc", (root / "v.md").string()},
                                  cli::Environment{root / "configs"}, out, err);
  out_text = out.str() + err.str();
  return status;
}

TEST(NcuSuite, ValidatePassesOnTheShippedDataAndFailsWhenAMeasuredMetricMoves) {
  TempDir dir;
  const auto shipped = gpusim::testing::repo_dir() / "validation" / "data" / "ncu_h100.csv";
  std::stringstream text;
  text << std::ifstream(shipped).rdbuf();
  std::string out;
  ASSERT_EQ(validate_copy(dir.path() / "shipped", text.str(), out), 0) << out;
  EXPECT_NE(out.find("threshold (held-out achieved-occupancy)"), std::string::npos) << out;
  EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;

  // Every held-out kernel's measured occupancy set to 0: the held-out occupancy error passes its
  // threshold.
  const CsvTable t = CsvTable::read(shipped);
  std::size_t column = 0;
  while (t.header()[column] != "sm__warps_active.avg.per_cycle_elapsed") ++column;
  std::ostringstream mutated;
  for (std::size_t i = 0; i < t.header().size(); ++i) mutated << (i ? "," : "") << t.header()[i];
  mutated << "\n";
  for (std::size_t row = 0; row < t.rows(); ++row) {
    for (std::size_t i = 0; i < t.header().size(); ++i) {
      std::string cell = t.at(row, t.header()[i]);
      if (i == column && t.at(row, "held_out") == "1") cell = "0";
      if (cell.find_first_of(",\"") != std::string::npos) {
        std::string quoted = "\"";
        for (char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
        cell = quoted + "\"";
      }
      mutated << (i ? "," : "") << cell;
    }
    mutated << "\n";
  }
  EXPECT_EQ(validate_copy(dir.path() / "mutated", mutated.str(), out), 1) << out;
  EXPECT_NE(out.find("threshold (held-out achieved-occupancy): 7.5 pt -> FAILED"), std::string::npos) << out;
}

}  // namespace
}  // namespace gpusim::validation
