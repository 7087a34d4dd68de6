// `gpusim sweep`: study files, results that match `gpusim run` point by point, independence
// from the thread count, resuming after an interruption, plots, and bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/number_format.h"
#include "src/study.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::run_gpusim;
using gpusim::testing::run_json;
using gpusim::testing::TempDir;

using gpusim::testing::read_file;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A study of two ops on two SM counts and two sizes (4 points).
std::filesystem::path small_study(const TempDir& dir) {
  dir.write("ops.yaml",
            "name: two-ops\ndtype: bf16\nops:\n"
            "  - {op: linear, M: 1, N: 4096, K: 4096}\n"
            "  - {op: add, n: 1048576}\n");
  return dir.write("study.yaml",
                   "name: small\nworkload: ops.yaml\nhw: h100\n"
                   "grid:\n  hw.sm_count: [66, 132]\n  workload.ops[1].n: [1048576, 16777216]\n"
                   "metrics: [total_us, kernel_time_us, kernels, top_bound, top_kernel_ctas]\n");
}

TEST(Sweep, EveryPointMatchesTheSameRun) {
  TempDir dir;
  const auto study = small_study(dir);
  const auto r = run_gpusim({"sweep", study.string(), "--out", (dir.path() / "out").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 points (4 simulated, 0 from an earlier run)"), std::string::npos) << r.out;
  const auto rows = lines(read_file(dir.path() / "out" / "results.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], "point,name,hw.sm_count,workload.ops[1].n,total_us,kernel_time_us,kernels,top_bound,top_kernel_ctas");
  // The first key varies slowest; each row's total is what `gpusim run` gives with the same --set.
  const std::vector<std::pair<std::string, std::string>> expected{
      {"66", "1048576"}, {"66", "16777216"}, {"132", "1048576"}, {"132", "16777216"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto j = run_json((dir.path() / "ops.yaml").string(), "h100",
                            {"--set", "hw.sm_count=" + expected[i].first, "--set", "workload.ops[1].n=" + expected[i].second});
    std::istringstream row(rows[i + 1]);
    std::vector<std::string> f;
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 9u) << rows[i + 1];
    EXPECT_EQ(f[0], std::to_string(i));
    EXPECT_EQ(f[2], expected[i].first);
    EXPECT_EQ(f[3], expected[i].second);
    EXPECT_DOUBLE_EQ(std::stod(f[4]), j["total_us"].get<double>()) << rows[i + 1];
    EXPECT_EQ(f[5], number(j["kernel_time_us"].get<double>()));  // 9 significant digits, as every output
    EXPECT_EQ(f[6], std::to_string(j["kernels"].size()));
  }
}

TEST(Sweep, ResultsDoNotDependOnTheThreadCount) {
  TempDir dir;
  const auto study = small_study(dir);
  ASSERT_EQ(run_gpusim({"sweep", study.string(), "--out", (dir.path() / "one").string(), "--threads", "1"}).status, 0);
  ASSERT_EQ(run_gpusim({"sweep", study.string(), "--out", (dir.path() / "two").string(), "--threads", "2"}).status, 0);
  EXPECT_EQ(read_file(dir.path() / "one" / "results.csv"), read_file(dir.path() / "two" / "results.csv"));
}

TEST(Sweep, ResumesAfterAnInterruptionWithoutRedoingPoints) {
  TempDir dir;
  const auto study = small_study(dir);
  const auto out = dir.path() / "out";
  ASSERT_EQ(run_gpusim({"sweep", study.string(), "--out", out.string()}).status, 0);
  const std::string complete = read_file(out / "results.csv");
  // As if killed part-way: two points finished, a third cut off mid-line, no results.csv yet.
  auto journal = lines(read_file(out / "journal.csv"));
  ASSERT_EQ(journal.size(), 6u);  // fingerprint, header, 4 rows (in completion order)
  std::ofstream cut(out / "journal.csv", std::ios::trunc);
  cut << journal[0] << "\n" << journal[1] << "\n" << journal[2] << "\n" << journal[3] << "\n"
      << journal[4].substr(0, journal[4].size() - 3);
  cut.close();
  std::filesystem::remove(out / "results.csv");
  const auto again = run_gpusim({"sweep", study.string(), "--out", out.string()});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("4 points (2 simulated, 2 from an earlier run)"), std::string::npos) << again.out;
  EXPECT_EQ(read_file(out / "results.csv"), complete);
  // A finished study run again simulates nothing.
  const auto done = run_gpusim({"sweep", study.string(), "--out", out.string()});
  EXPECT_NE(done.out.find("(0 simulated, 4 from an earlier run)"), std::string::npos) << done.out;
  EXPECT_EQ(read_file(out / "results.csv"), complete);
}

TEST(Sweep, AnotherStudysFolderIsRefused) {
  TempDir dir;
  const auto study = small_study(dir);
  const auto out = dir.path() / "out";
  ASSERT_EQ(run_gpusim({"sweep", study.string(), "--out", out.string()}).status, 0);
  const auto other = dir.write("other.yaml", "workload: ops.yaml\nhw: h100\npoints:\n  - {hw: h200}\n");
  const auto r = run_gpusim({"sweep", other.string(), "--out", out.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("another study"), std::string::npos) << r.err;
}

TEST(Sweep, NamedPointsOverPresets) {
  TempDir dir;
  small_study(dir);
  const auto study = dir.write("points.yaml",
                               "name: chips\nworkload: ops.yaml\nhw: h100\npoints:\n"
                               "  - {name: hopper, hw: h100}\n  - {name: blackwell, hw: rtx5090}\n"
                               "  - {name: hopper-half-bw, hw: h100, hw.dram.bandwidth: 1.675TB/s}\n"
                               "metrics: [kernel_time_us]\n");
  const auto r = run_gpusim({"sweep", study.string(), "--out", (dir.path() / "out").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = lines(read_file(dir.path() / "out" / "results.csv"));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], "point,name,hw,hw.dram.bandwidth,kernel_time_us");
  auto time_of = [&](std::size_t i) { return std::stod(rows[i].substr(rows[i].rfind(',') + 1)); };
  EXPECT_GT(time_of(3), time_of(1) * 1.2);  // half the bandwidth for a streaming mix
  EXPECT_NE(rows[2].find("blackwell,rtx5090,"), std::string::npos) << rows[2];
}

TEST(Sweep, BadStudiesNameFileLineAndKey) {
  TempDir dir;
  small_study(dir);
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases{
      {"workload: ops.yaml\nhw: h100\ngrid:\n  l2.size: [1MiB]\n", "study.yaml:4: grid.l2.size"},
      {"workload: ops.yaml\nhw: h100\ngrid:\n  hw.l2.size: [50MiB, lots]\n", "study.yaml:4: hw.l2.size"},
      {"workload: ops.yaml\nhw: h100\ngrid:\n  hw.sm_count: [66]\nmetrics: [speed]\n", "study.yaml:5: metrics[0]"},
      {"workload: ops.yaml\nhw: h100\ngrid:\n  hw.sm_count: [66]\npoints:\n  - {hw: h200}\n", "grid"},
      {"workload: ops.yaml\nhw: h100\ngrid:\n  hw: [h100]\nmetrics: [total_us/hw]\n", "not a number"},
      {"workload: ops.yaml\nhw: h100\ngrid:\n  workload.batch: [4]\n", "workload.batch"},
      {"workload: ops.yaml\nhw: h100\ngrid:\n  hw.sm_count: [66]\nplot: {metric: total_us, x: hw.sm_count}\nmetrics: [kernels]\n",
       "plot.metric"},
      {"workload: missing.yaml\nhw: h100\ngrid:\n  hw.sm_count: [66]\n", "missing.yaml"},
  };
  for (const auto& c : cases) {
    const auto study = dir.write("study.yaml", c.text);
    const auto r = run_gpusim({"sweep", study.string(), "--out", (dir.path() / "bad").string()});
    EXPECT_EQ(r.status, 2) << c.text << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.text << "\n" << r.err;
  }
  EXPECT_EQ(run_gpusim({"sweep", "--threads", "-1", (dir.path() / "study.yaml").string()}).status, 2);
}

TEST(Sweep, ShippedStudiesLoad) {
  EXPECT_EQ(load_study(config_dir() / "studies" / "l2-and-sms.yaml").points.size(), 27u);
  EXPECT_EQ(load_study(config_dir() / "studies" / "npu-vs-gpus.yaml").points.size(), 16u);
  EXPECT_EQ(load_study(config_dir() / "studies" / "sm-fraction.yaml").points.size(), 20u);
  EXPECT_EQ(load_study(config_dir() / "studies" / "decode-1000.yaml").points.size(), 1000u);
  const Study heads = load_study(config_dir() / "studies" / "occupancy-heads.yaml");
  EXPECT_EQ(heads.points.size(), 16u);
  ASSERT_TRUE(heads.plot.has_value());
  EXPECT_EQ(heads.plot->x, "workload.ops[0].H");
}

TEST(Sweep, OccupancyStudyDividesByTheAxis) {
  TempDir dir;
  const auto study = dir.write("heads.yaml",
                               "name: heads\nworkload: " + (config_dir() / "workloads" / "seed001-sdpa.yaml").string() +
                                   "\nhw: h100\ngrid:\n  workload.ops[0].H: [8, 96]\n"
                                   "metrics: [kernel_time_us, \"kernel_time_us/workload.ops[0].H\", top_kernel_ctas]\n");
  const auto r = run_gpusim({"sweep", study.string(), "--out", (dir.path() / "out").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = lines(read_file(dir.path() / "out" / "results.csv"));
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::istringstream row(rows[i]);
    std::vector<std::string> f;
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 6u);
    // Within the outputs' 9 significant digits.
    EXPECT_NEAR(std::stod(f[4]), std::stod(f[3]) / std::stod(f[2]), 1e-8 * std::stod(f[4]));
  }
}

TEST(Sweep, PlotsWhenMatplotlibIsThere) {
  const bool matplotlib = std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0 ||
                          std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
  if (!matplotlib) GTEST_SKIP() << "no matplotlib";
  TempDir dir;
  small_study(dir);
  const auto study = dir.write("plot.yaml",
                               "workload: ops.yaml\nhw: h100\ngrid:\n  hw.sm_count: [33, 66, 132]\n"
                               "metrics: [total_us]\nplot: {metric: total_us, x: hw.sm_count}\n");
  const auto r = run_gpusim({"sweep", study.string(), "--out", (dir.path() / "out").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / "plot.png")) << r.out;
}

}  // namespace
}  // namespace gpusim::cli
