// `gpusim run --trace`: the Chrome trace event format Perfetto and chrome://tracing read, with
// kernel spans that match the reported kernels, counter tracks, and CTA tracks on request.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::run_gpusim;
using gpusim::testing::TempDir;
using nlohmann::json;

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// Runs the workload with --trace (and extra options) and --format json; both documents.
std::pair<json, json> run_traced(const TempDir& dir, const std::string& workload,
                                 std::vector<std::string> extra = {}) {
  const auto trace = dir.path() / "trace.json";
  std::vector<std::string> args{"run", workload, "--hw", "h100", "--format", "json", "--trace", trace.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_gpusim(args);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return {};
  return {json::parse(r.out), read_json(trace)};
}

// Every event has the fields the format requires for its phase.
void expect_well_formed(const json& trace) {
  ASSERT_TRUE(trace.contains("traceEvents"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("name") && e.contains("pid")) << e.dump();
    const std::string ph = e["ph"];
    ASSERT_TRUE(ph == "X" || ph == "C" || ph == "M") << ph;
    if (ph == "X") {
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e.contains("tid")) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
    }
    if (ph == "C") {
      ASSERT_TRUE(e["ts"].is_number() && e["args"].is_object()) << e.dump();
    }
    if (ph == "M") {
      ASSERT_TRUE(e["args"].is_object()) << e.dump();
    }
  }
}

TEST(Trace, KernelSpansMatchTheReportedKernels) {
  TempDir dir;
  const auto [result, trace] = run_traced(dir, (config_dir() / "workloads" / "ops.yaml").string());
  expect_well_formed(trace);
  std::vector<json> spans;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == 0) spans.push_back(e);
  }
  ASSERT_EQ(spans.size(), result["kernels"].size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const auto& k = result["kernels"][i];
    EXPECT_EQ(spans[i]["name"], k["name"]);
    EXPECT_EQ(spans[i]["tid"], k["stream"]);
    EXPECT_DOUBLE_EQ(spans[i]["ts"].get<double>(), k["start_us"].get<double>());
    EXPECT_DOUBLE_EQ(spans[i]["dur"].get<double>(), k["duration_us"].get<double>());
    EXPECT_EQ(spans[i]["args"]["bound"], k["bound"]);
    EXPECT_DOUBLE_EQ(spans[i]["args"]["achieved_occupancy"].get<double>(), k["achieved_occupancy"].get<double>());
  }
}

TEST(Trace, CounterTracksStayWithinTheChip) {
  TempDir dir;
  const auto [result, trace] = run_traced(dir, (config_dir() / "workloads" / "ops.yaml").string());
  const double end = result["total_us"];
  int dram = 0, warps = 0;
  double peak_dram = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "C") continue;
    const double ts = e["ts"];
    EXPECT_GE(ts, 0);
    EXPECT_LE(ts, end + 1e-6);
    if (e["name"] == "DRAM bandwidth") {
      ++dram;
      const double gbs = e["args"]["GB/s"];
      EXPECT_GE(gbs, 0);
      EXPECT_LE(gbs, 3350.0 * 1.0001);  // never above the datasheet peak
      peak_dram = std::max(peak_dram, gbs);
    } else if (e["name"] == "resident warps") {
      ++warps;
      const int w = e["args"]["warps"];
      EXPECT_GE(w, 0);
      EXPECT_LE(w, 132 * 64);
    }
  }
  EXPECT_GT(dram, 10);
  EXPECT_EQ(dram, warps);
  EXPECT_GT(peak_dram, 1000.0);  // the GEMV streams its weights near the roof
}

TEST(Trace, CtaTracksHoldEveryCtaWithoutOverlap) {
  TempDir dir;
  const auto [result, trace] =
      run_traced(dir, (config_dir() / "workloads" / "ops.yaml").string(), {"--trace-ctas"});
  expect_well_formed(trace);
  std::map<std::string, std::int64_t> ctas_by_op;
  std::map<int, std::vector<std::pair<double, double>>> by_track;
  std::set<int> named;
  for (const auto& e : trace["traceEvents"]) {
    if (e["pid"] != 1) continue;
    if (e["ph"] == "M" && e["name"] == "thread_name") named.insert(e["tid"].get<int>());
    if (e["ph"] != "X") continue;
    ctas_by_op[e["name"]] += e["args"]["ctas"].get<std::int64_t>();
    by_track[e["tid"]].push_back({e["ts"], e["ts"].get<double>() + e["dur"].get<double>()});
  }
  // Every CTA of every kernel appears once (kernels of one op add up under the op's name).
  std::map<std::string, std::int64_t> grid_by_op;
  for (const auto& k : result["kernels"]) {
    grid_by_op[k["op"]] += k["grid"][0].get<std::int64_t>() * k["grid"][1].get<std::int64_t>() *
                           k["grid"][2].get<std::int64_t>();
  }
  EXPECT_EQ(ctas_by_op, grid_by_op);
  ASSERT_FALSE(by_track.empty());
  for (auto& [tid, spans] : by_track) {
    EXPECT_TRUE(named.count(tid)) << tid;
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) {
      EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-9) << "track " << tid;
    }
  }
}

TEST(Trace, ModelRunsLayStepsEndToEnd) {
  TempDir dir;
  const auto job = dir.write("gen.yaml",
                             "model: gpt2-small\nphase: generate\nbatch: 2\nseq_len: 64\n"
                             "output_len: 4\ndtype: bf16\nlowering: hf-eager\n");
  const auto [result, trace] = run_traced(dir, job.string());
  expect_well_formed(trace);
  std::size_t spans = 0;
  double last_end = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0) continue;
    ++spans;
    last_end = std::max(last_end, e["ts"].get<double>() + e["dur"].get<double>());
  }
  EXPECT_EQ(spans, result["kernels"].size());
  EXPECT_LE(last_end, result["total_us"].get<double>() * (1 + 1e-8));  // total_us has 9 digits
  // Counters cover the detailed steps: the last sample lies in the last step.
  double last_counter = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C") last_counter = std::max(last_counter, e["ts"].get<double>());
  }
  EXPECT_GT(last_counter, result["total_us"].get<double>() - result["phases"][1]["total_us"].get<double>() / 3);
}

TEST(Trace, IsByteIdenticalAcrossRuns) {
  TempDir dir;
  const auto ops = (config_dir() / "workloads" / "ops.yaml").string();
  const auto a = dir.path() / "a.json", b = dir.path() / "b.json";
  ASSERT_EQ(run_gpusim({"run", ops, "--hw", "h100", "--trace", a.string(), "--trace-ctas"}).status, 0);
  ASSERT_EQ(run_gpusim({"run", ops, "--hw", "h100", "--trace", b.string(), "--trace-ctas"}).status, 0);
  std::ifstream fa(a), fb(b);
  std::stringstream sa, sb;
  sa << fa.rdbuf();
  sb << fb.rdbuf();
  EXPECT_EQ(sa.str(), sb.str());
}

}  // namespace
}  // namespace gpusim::cli
