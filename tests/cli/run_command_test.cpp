// `gpusim run` on op-level workloads: formats, files, determinism and what-if overrides.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <fmt/format.h>

#include "src/cli.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::TempDir;

using Result = gpusim::testing::CliResult;

Result run(const std::vector<std::string>& args) { return gpusim::testing::run_gpusim(args); }

using gpusim::testing::run_json;

std::string ops_yaml() { return (config_dir() / "workloads" / "ops.yaml").string(); }

using gpusim::testing::read_file;

TEST(RunCommand, JsonCarriesTheDesignFields) {
  const auto j = run_json(ops_yaml(), "h100");
  EXPECT_EQ(j["hw"], "h100-sxm5");
  EXPECT_EQ(j["mode"], "graph");
  ASSERT_GT(j["kernels"].size(), 8u);  // at least one kernel per op
  double sum = 0;
  for (const auto& k : j["kernels"]) {
    for (const char* key : {"name", "op", "start_us", "duration_us", "grid", "block", "regs", "smem",
                            "flops", "dram_bytes", "achieved_occupancy", "sm_throughput_pct",
                            "dram_throughput_pct", "memory_throughput_pct", "l2_hit_rate",
                            "bound"}) {
      EXPECT_TRUE(k.contains(key)) << key;
    }
    EXPECT_GT(k["duration_us"].get<double>(), 0);
    sum += k["duration_us"].get<double>();
  }
  EXPECT_NEAR(j["kernel_time_us"].get<double>(), sum, 1e-6);
  EXPECT_GE(j["total_us"].get<double>(), j["kernel_time_us"].get<double>());
}

TEST(RunCommand, OutputIsByteIdenticalAcrossRuns) {
  const Result a = run({"run", ops_yaml(), "--hw", "h100", "--format", "json"});
  const Result b = run({"run", ops_yaml(), "--hw", "h100", "--format", "json"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(RunCommand, RunsOnEveryPreset) {
  for (const char* hw : {"h100", "h200", "rtx5090", "a100"}) {
    const Result r = run({"run", ops_yaml(), "--hw", hw});
    EXPECT_EQ(r.status, 0) << hw << ": " << r.err;
    EXPECT_NE(r.out.find("kernel time"), std::string::npos) << r.out;
  }
}

TEST(RunCommand, WhatIfOverridesChangeTheAnswer) {
  const double base = run_json(ops_yaml(), "h100")["kernel_time_us"];
  const double fewer_sms = run_json(ops_yaml(), "h100", {"--set", "hw.sm_count=66"})["kernel_time_us"];
  const double less_bw = run_json(ops_yaml(), "h100", {"--set", "hw.dram.bandwidth=1.5TB/s"})["kernel_time_us"];
  EXPECT_GT(fewer_sms, base * 1.05);
  EXPECT_GT(less_bw, base * 1.05);
}

TEST(RunCommand, BiggerL2KeepsMoreOfTheSoftmaxInputResident) {
  // Naive attention writes S x S scores (4 x 12 x 1024^2 fp32 = 192 MiB) that the scale and
  // softmax kernels read next while writing as much: a 512 MiB L2 keeps most of them between the
  // kernels, a 50 MiB one almost none (hw::L2ReuseCurve: 400 MB of traffic lies between).
  TempDir dir;
  const auto file = dir.write("naive.yaml",
                              "name: naive\nops:\n  - {op: naive_attention, B: 4, H: 12, S: 1024, "
                              "D: 64, dtype: fp32}\n").string();
  auto softmax_hit = [&](const std::vector<std::string>& extra) {
    const nlohmann::json result = run_json(file, "h100", extra);  // keep it alive for the loop
    for (const auto& k : result["kernels"]) {
      if (k["name"].get<std::string>().find("softmax") != std::string::npos) {
        return k["l2_input_hit_rate"].get<double>();
      }
    }
    ADD_FAILURE() << "no softmax kernel";
    return -1.0;
  };
  const double small = softmax_hit({});
  const double big = softmax_hit({"--set", "hw.l2.size=512MiB"});
  EXPECT_LT(small, 0.1);
  EXPECT_GT(big, 0.8);
}

TEST(RunCommand, EagerModeAddsHostGapsToSmallKernels) {
  TempDir dir;
  std::string yaml = "name: tiny-adds\ndtype: bf16\nops:\n";
  for (int i = 0; i < 20; ++i) yaml += "  - {op: add, n: 4096}\n";
  const auto file = dir.write("tiny.yaml", yaml).string();
  const auto graph = run_json(file, "h100");
  const auto eager = run_json(file, "h100", {"--mode", "eager"});
  EXPECT_EQ(eager["mode"], "eager");
  // Host-bound: one launch per eager_gap (6.2 us) against kernels of about 2 us.
  EXPECT_GT(eager["total_us"].get<double>(), 19 * 6.2);
  EXPECT_LT(graph["total_us"].get<double>(), eager["total_us"].get<double>() / 2);
  EXPECT_DOUBLE_EQ(graph["kernel_time_us"].get<double>(), eager["kernel_time_us"].get<double>());
}

TEST(RunCommand, OutWritesEveryFormatAndTraceIsChromeFormat) {
  TempDir dir;
  const auto out = dir.path() / "results";
  const auto trace = dir.path() / "trace.json";
  const Result r = run({"run", ops_yaml(), "--hw", "h100", "--out", out.string(), "--trace",
                        trace.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"summary.txt", "result.json", "kernels.csv", "trace.json"}) {
    EXPECT_TRUE(std::filesystem::exists(out / f)) << f;
  }
  const auto result = nlohmann::json::parse(read_file(out / "result.json"));
  const auto t = nlohmann::json::parse(read_file(trace));
  ASSERT_TRUE(t.contains("traceEvents"));
  std::size_t spans = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const auto& k = result["kernels"][spans];
    EXPECT_EQ(e["name"], k["name"]);
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), k["start_us"].get<double>());
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), k["duration_us"].get<double>());
    ++spans;
  }
  EXPECT_EQ(spans, result["kernels"].size());
  // CSV: a header and one row per kernel; memory throughput is the last column (added after the
  // others, which keep their places), equal to the JSON's.
  std::istringstream csv(read_file(out / "kernels.csv"));
  std::size_t lines = 0;
  for (std::string line; std::getline(csv, line);) {
    const std::string last = line.substr(line.rfind(',') + 1);
    if (lines == 0) {
      EXPECT_EQ(last, "memory_throughput_pct");
      EXPECT_NE(line.find(",sm_throughput_pct,dram_throughput_pct,"), std::string::npos) << line;
    } else if (lines <= result["kernels"].size()) {
      const auto& k = result["kernels"][lines - 1];
      EXPECT_DOUBLE_EQ(std::stod(last), k["memory_throughput_pct"].get<double>());
    }
    ++lines;
  }
  EXPECT_EQ(lines, result["kernels"].size() + 1);
}

TEST(RunCommand, BadOptionsAreBadInput) {
  EXPECT_EQ(run({"run", ops_yaml(), "--hw", "h100", "--mode", "lazy"}).status, 2);
  EXPECT_EQ(run({"run", ops_yaml(), "--hw", "h100", "--format", "xml"}).status, 2);
  EXPECT_EQ(run({"run", ops_yaml()}).status, 2);
  EXPECT_EQ(run({"run", "/nonexistent.yaml", "--hw", "h100"}).status, 2);
  EXPECT_EQ(run({"run", ops_yaml(), "--hw", "h100", "--top", "-1"}).status, 2);
  const Result ctas = run({"run", ops_yaml(), "--hw", "h100", "--trace-ctas"});
  EXPECT_EQ(ctas.status, 2);
  EXPECT_NE(ctas.err.find("--trace"), std::string::npos) << ctas.err;
}

TEST(RunCommand, JsonAggregatesByCategoryAndBoundClass) {
  const auto j = run_json(ops_yaml(), "h100");
  for (const char* key : {"by_category", "by_bound"}) {
    double share = 0, time = 0;
    std::int64_t kernels = 0;
    for (const auto& g : j[key]) {
      share += g["time_share_pct"].get<double>();
      time += g["time_us"].get<double>();
      kernels += g["kernels"].get<std::int64_t>();
    }
    EXPECT_NEAR(share, 100.0, 1e-6) << key;
    EXPECT_NEAR(time, j["kernel_time_us"].get<double>(), 1e-6) << key;
    EXPECT_EQ(kernels, static_cast<std::int64_t>(j["kernels"].size())) << key;
  }
  // The 2048^3 GEMM is compute-bound, the 1 x 11008 x 4096 GEMV memory-bound.
  for (const auto& k : j["kernels"]) {
    if (k["op"].get<std::string>().rfind("matmul", 0) == 0 && k["family"] == "gemm") {
      EXPECT_EQ(k["bound"], "compute");
    }
    if (k["op"].get<std::string>().rfind("linear", 0) == 0 && (k["family"] == "gemm" || k["family"] == "gemv")) {
      EXPECT_EQ(k["bound"], "memory") << k.dump();
    }
    const double ai = k["arithmetic_intensity"], ridge = k["ridge_point"];
    EXPECT_GT(ridge, 0);
    if (k["bound"] == "memory") {
      EXPECT_LT(ai, ridge);
    } else if (k["bound"] == "compute") {
      EXPECT_GE(ai, ridge);
    }
  }
}

TEST(RunCommand, TableSummarizesTheCostliestKernels) {
  const Result r = run({"run", ops_yaml(), "--hw", "h100", "--top", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Kernel time by op category"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Kernel time by bound class"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Top 3 of"), std::string::npos) << r.out;
  const Result all = run({"run", ops_yaml(), "--hw", "h100", "--top", "0"});
  const auto j = run_json(ops_yaml(), "h100");
  // --top 0: every distinct launch; ops.yaml launches no two identical kernels.
  EXPECT_NE(all.out.find(fmt::format("Top {0} of {0}", j["kernels"].size())), std::string::npos) << all.out;
}

}  // namespace
}  // namespace gpusim::cli
