// gpusim replay (replay/, src/replay_command.cpp): the Kineto trace reader and its errors, the
// mapping rules on small hand-written traces, carried-over kernels, and the command end to end
// on a trace recorded on an H100 (validation/data/traces/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "hw/launch.h"
#include "models/kernel_model.h"
#include "replay/kernel_mapping.h"
#include "replay/profiler_trace.h"
#include "replay/replay_run.h"
#include "sim/error.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gzip.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"

namespace gpusim::replay {
namespace {

using gpusim::testing::gzipped;
using nlohmann::json;

// A trace of one op and its kernel: `op` with its recorded inputs, launching `kernel`.
json one_op_trace(const std::string& op, const json& dims, const json& types, const std::string& kernel, double dur_us,
                  const json& grid = json::array({132, 1, 1}), const json& concrete = json::array()) {
  json t;
  t["deviceProperties"] = json::array({{{"name", "NVIDIA H100 80GB HBM3"}}});
  t["traceEvents"] = json::array();
  t["traceEvents"].push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", op}, {"ts", 0.0}, {"dur", 10.0},
                              {"args", {{"External id", 7}, {"Input Dims", dims}, {"Input type", types},
                                        {"Concrete Inputs", concrete}}}});
  t["traceEvents"].push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kernel}, {"ts", 5.0}, {"dur", dur_us},
                              {"args", {{"External id", 7}, {"stream", 7}, {"grid", grid}, {"block", json::array({256, 1, 1})},
                                        {"registers per thread", 128}, {"shared memory", 0}}}});
  return t;
}

const hw::HardwareSpec& h100() {
  static const hw::HardwareSpec s = gpusim::testing::preset("h100");
  return s;
}

std::vector<MappedGroup> mapped(const json& trace, const hw::HardwareSpec* from = nullptr,
                                const hw::HardwareSpec& to = h100()) {
  static const auto models = models::default_kernel_models();
  return map_trace(parse_profiler_trace(trace.dump(), "t.json"), to, from, models);
}

TEST(ReplayTrace, ReadsKernelsTheirOpsAndShapes) {
  const auto t = parse_profiler_trace(
      one_op_trace("aten::mm", {{1024, 2048}, {2048, 4096}}, {"c10::BFloat16", "c10::BFloat16"}, "nvjet_sm90_tst", 25.0).dump(),
      "t.json");
  ASSERT_EQ(t.activities.size(), 1u);
  EXPECT_EQ(t.device_name, "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(t.activities[0].op.has_value());
  const RecordedOp& op = t.ops[*t.activities[0].op];
  EXPECT_EQ(op.name, "aten::mm");
  EXPECT_EQ(op.dims[1], (std::vector<std::int64_t>{2048, 4096}));
  EXPECT_EQ(t.activities[0].grid.x, 132);
  EXPECT_EQ(t.activities[0].regs, 128);
  EXPECT_DOUBLE_EQ(t.activities[0].duration_us, 25.0);
}

TEST(ReplayTrace, BadInputIsAClearConfigError) {
  const auto key = [](const std::string& text) {
    try {
      parse_profiler_trace(text, "bad.json");
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
      return e.key();
    }
    ADD_FAILURE() << "accepted: " << text.substr(0, 60);
    return std::string("accepted");
  };
  const std::string good =
      one_op_trace("aten::mm", {{8, 8}, {8, 8}}, {"float", "float"}, "gemm", 1.0).dump();
  EXPECT_EQ(key(good.substr(0, good.size() / 2)), "");  // truncated: malformed JSON
  EXPECT_EQ(key("{\"schemaVersion\": 1}"), "traceEvents");
  json no_gpu = json::parse(good);
  no_gpu["traceEvents"].erase(1);
  EXPECT_EQ(key(no_gpu.dump()), "traceEvents");
  json no_shapes = json::parse(good);
  no_shapes["traceEvents"][0]["args"].erase("Input Dims");
  EXPECT_EQ(key(no_shapes.dump()), "Input Dims");
  EXPECT_THROW(read_profiler_trace("/nonexistent/trace.json"), ConfigError);
}

std::filesystem::path write_temp(const std::string& name, const std::string& bytes) {
  const auto path = gpusim::testing::test_temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(ReplayTrace, PlainAndGzipFilesReadTheSame) {
  const std::string text =
      one_op_trace("aten::mm", {{1024, 2048}, {2048, 4096}}, {"c10::BFloat16", "c10::BFloat16"}, "nvjet_sm90_tst", 25.0)
          .dump(1);
  const auto check = [](const RecordedTrace& t) {
    ASSERT_EQ(t.activities.size(), 1u);
    EXPECT_EQ(t.activities[0].name, "nvjet_sm90_tst");
    EXPECT_DOUBLE_EQ(t.activities[0].duration_us, 25.0);
    ASSERT_TRUE(t.activities[0].op.has_value());
    EXPECT_EQ(t.ops[*t.activities[0].op].dims[1], (std::vector<std::int64_t>{2048, 4096}));
  };
  check(read_profiler_trace(write_temp("plain.json", text)));
  check(read_profiler_trace(write_temp("one.json.gz", gzipped(text))));
  // Two members: the first's size trailer covers only half the text, so the buffer must grow.
  check(read_profiler_trace(write_temp("two.json.gz", gzipped(text, true))));
  // A gzip file cut short, or with its data damaged, is a clear error.
  const std::string gz = gzipped(text);
  EXPECT_THROW(read_profiler_trace(write_temp("cut.json.gz", gz.substr(0, gz.size() - 9))), ConfigError);
  std::string damaged = gz;
  for (std::size_t i = 12; i < damaged.size() - 8; ++i) damaged[i] = static_cast<char>(~damaged[i]);
  EXPECT_THROW(read_profiler_trace(write_temp("damaged.json.gz", damaged)), ConfigError);
}

TEST(ReplayMapping, GemmsAreReloweredFromTheirRecordedShapes) {
  const auto g = mapped(one_op_trace("aten::mm", {{1024, 2048}, {2048, 4096}}, {"c10::BFloat16", "c10::BFloat16"},
                                     "nvjet_sm90_tst_256x128", 25.0));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(g[0].mapped);
  EXPECT_EQ(g[0].family, "gemm");
  EXPECT_NEAR(hw::totals(g[0].launches).tensor_flops, 2.0 * 1024 * 2048 * 4096, 1.0);
  // addmm's bias comes first; bmm is batched.
  const auto a = mapped(one_op_trace("aten::addmm", {{4096}, {1024, 2048}, {2048, 4096}},
                                     {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"}, "nvjet", 25.0));
  EXPECT_NEAR(hw::totals(a[0].launches).tensor_flops, 2.0 * 1024 * 2048 * 4096, 1.0);
  // (A SIMT fp32 batch: the model charges whole tiles, so at least the product's FLOPs.)
  const auto b = mapped(one_op_trace("aten::bmm", {{8, 64, 128}, {8, 128, 32}}, {"float", "float"}, "gemm", 5.0));
  EXPECT_EQ(b[0].family, "gemm");
  EXPECT_GE(hw::totals(b[0].launches).fp32_flops, 2.0 * 8 * 64 * 128 * 32);
  EXPECT_LE(hw::totals(b[0].launches).fp32_flops, 4.0 * 8 * 64 * 128 * 32);
}

TEST(ReplayMapping, ElementwiseCatReduceAndAttentionRules) {
  const auto mul = mapped(one_op_trace("aten::mul", {{2, 512, 2048}, {2, 512, 2048}}, {"c10::BFloat16", "c10::BFloat16"},
                                       "void at::native::vectorized_elementwise_kernel<8, BinaryFunctor>", 8.0));
  EXPECT_EQ(mul[0].family, "elementwise");
  EXPECT_TRUE(mul[0].mapped);
  // Both operands and the output streamed: 3 x 2 MiB x 2 bytes.
  EXPECT_NEAR(hw::totals(mul[0].launches).dram_read_bytes + hw::totals(mul[0].launches).dram_write_bytes,
              3.0 * 2 * 512 * 2048 * 2, 1.0);
  const auto cat = mapped(one_op_trace("aten::cat", {{{2, 512, 32}, {2, 512, 32}}, {}}, {"TensorList", "Scalar"},
                                       "void at::native::CatArrayBatchedCopy<c10::BFloat16>", 3.0));
  EXPECT_EQ(cat[0].family, "cat");
  EXPECT_TRUE(cat[0].mapped);
  const auto mean = mapped(one_op_trace("aten::mean", {{2, 512, 2048}, {}, {}, {}}, {"float", "ScalarList", "Scalar", ""},
                                        "void at::native::reduce_kernel<512, 1>", 6.0, json::array({64, 1, 1}),
                                        {"", "[-1]", "True", ""}));
  EXPECT_EQ(mean[0].family, "reduce");
  EXPECT_TRUE(mean[0].mapped);
  const auto attn = mapped(one_op_trace(
      "aten::_cudnn_attention_forward", {{2, 32, 512, 64}, {2, 8, 512, 64}, {2, 8, 512, 64}, {}},
      {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", ""}, "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", 44.0,
      json::array({132, 1, 1}), {"", "", "", "", "", "", "512", "512", "False", "0.", "True", "False", "0.125"}));
  EXPECT_EQ(attn[0].family, "attention");
  EXPECT_TRUE(attn[0].mapped);
  EXPECT_GT(hw::totals(attn[0].launches).tensor_flops, 0.0);
}

TEST(ReplayMapping, UnmappedKernelsAreCarriedOverScaledToTheTarget) {
  const json t = one_op_trace("aten::cudnn_convolution", {{32, 3, 224, 224}, {64, 3, 3, 3}}, {"float", "float"},
                              "sm90_xmma_fprop_implicit_gemm", 100.0);
  const auto same = mapped(t);
  ASSERT_EQ(same.size(), 1u);
  EXPECT_FALSE(same[0].mapped);
  EXPECT_EQ(same[0].family, "unmapped");
  EXPECT_EQ(same[0].launches.size(), 1u);
  EXPECT_EQ(same[0].launches[0].name, "sm90_xmma_fprop_implicit_gemm");
  // A convolution kernel scales with the dense tensor peak; memory-bound ones with bandwidth.
  const auto h200 = gpusim::testing::preset("h200");
  EXPECT_NEAR(carry_scale("sm90_xmma_fprop_implicit_gemm", &h100(), h200),
              h100().peak_tensor_flops(hw::DType::kBf16) / h200.peak_tensor_flops(hw::DType::kBf16), 1e-12);
  EXPECT_LT(carry_scale("void some_gather_kernel", &h100(), h200), 1.0);  // the H200's faster HBM3e
  EXPECT_EQ(carry_scale("void some_gather_kernel", nullptr, h200), 1.0);
}

const std::string kPrefill = std::string(GPUSIM_REPO_DIR) +
                             "/validation/data/traces/replay_h100_llama3.2-1b-4l_prefill_b2_s512.json.gz";

TEST(ReplayCommand, SameChipSelfCheckOnARecordedTrace) {
  const auto r = gpusim::testing::run_gpusim({"replay", kPrefill, "--hw", "h100", "--from", "h100", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  const double recorded = j["replay"]["recorded_kernel_time_us"].get<double>();
  EXPECT_GT(j["replay"]["coverage_pct"].get<double>(), 99.0);
  // Same-chip replay is within 10% of the recorded kernel time (6% when written).
  EXPECT_NEAR(j["kernel_time_us"].get<double>() / recorded, 1.0, 0.10);
  EXPECT_GT(j["total_us"].get<double>(), 0.0);
  EXPECT_FALSE(j["replay"]["families"].empty());
  // Deterministic: the same trace gives byte-identical output.
  EXPECT_EQ(gpusim::testing::run_gpusim({"replay", kPrefill, "--hw", "h100", "--from", "h100", "--format", "json"}).out, r.out);
  // On the H200 (more bandwidth, the same tensor cores) it runs faster.
  const auto h200 = gpusim::testing::run_gpusim({"replay", kPrefill, "--hw", "h200", "--from", "h100", "--format", "json"});
  ASSERT_EQ(h200.status, 0) << h200.err;
  EXPECT_LT(json::parse(h200.out)["kernel_time_us"].get<double>(), j["kernel_time_us"].get<double>());
}

// Kernels that repeat (each layer's) take the outcome simulated for the first: the cached path
// gives the uncached one's results exactly, in every mode.
TEST(ReplayRun, ReusedKernelOutcomesAreExact) {
  const auto trace = read_profiler_trace(kPrefill);
  const auto models = models::default_kernel_models();
  for (const auto mode : {ReplayMode::kGraph, ReplayMode::kEager, ReplayMode::kAsRecorded}) {
    const auto fresh = run_replay(trace, h100(), nullptr, models, mode, false);
    const auto reused = run_replay(trace, h100(), nullptr, models, mode, true);
    ASSERT_EQ(fresh.result.kernels.size(), reused.result.kernels.size());
    ASSERT_GT(fresh.result.kernels.size(), 500u);
    EXPECT_EQ(fresh.result.end, reused.result.end);
    EXPECT_EQ(fresh.reused_outcomes, 0u);
    EXPECT_GT(reused.reused_outcomes, fresh.result.kernels.size() / 4);  // the reuse did happen
    for (std::size_t i = 0; i < fresh.result.kernels.size(); ++i) {
      const auto& a = fresh.result.kernels[i];
      const auto& b = reused.result.kernels[i];
      ASSERT_EQ(a.start, b.start) << i;
      ASSERT_EQ(a.end, b.end) << i;
      ASSERT_EQ(a.dram_read_bytes, b.dram_read_bytes) << i;
      ASSERT_EQ(a.dram_write_bytes, b.dram_write_bytes) << i;
      ASSERT_EQ(a.l2_read_hit_rate, b.l2_read_hit_rate) << i;
      ASSERT_EQ(a.achieved_occupancy, b.achieved_occupancy) << i;
      ASSERT_EQ(a.achieved_occupancy_active, b.achieved_occupancy_active) << i;
    }
    EXPECT_EQ(fresh.kernel_time_us, reused.kernel_time_us);
  }
}

// Three streams joined by events (tests/replay/data: validation/measure/replay_traces.py --set streams on
// an H200): the side streams start after the main stream's work they wait for, and the main
// stream's last op after both side streams' work.
TEST(ReplayRun, StreamsWaitForTheEventsTheTraceRecorded) {
  const auto trace = read_profiler_trace(std::string(GPUSIM_REPO_DIR) +
                                         "/tests/replay/data/replay_h200_streams_gemm_elementwise.json.gz");
  std::size_t waits = 0;
  for (const auto& s : trace.syncs) waits += s.kind == RecordedSync::Kind::kStreamWaitEvent;
  EXPECT_GE(waits, 12u);  // four per iteration, three iterations
  const auto models = models::default_kernel_models();
  const auto run = run_replay(trace, gpusim::testing::preset("h200"), nullptr, models);
  const auto& k = run.result.kernels;
  ASSERT_EQ(k.size(), run.nodes.size());
  std::map<int, sim::Time> last_end;  // per engine stream
  int main_stream = run.nodes.front().stream;
  std::size_t gemms = 0, joins = 0;
  for (std::size_t i = 0; i < k.size(); ++i) {
    const int s = run.nodes[i].stream;
    if (k[i].name.find("nvjet") != std::string::npos) {
      // A side-stream GEMM: after the main stream's kernels launched before it.
      EXPECT_GE(k[i].start, last_end[main_stream]) << i;
      ++gemms;
    }
    if (s == main_stream && k[i].name.find("elementwise_kernel<128, 4") != std::string::npos) {
      // The join (c[0] + y): after both side streams' work.
      for (const auto& [stream, end] : last_end) EXPECT_GE(k[i].start, end) << i << " stream " << stream;
      ++joins;
    }
    last_end[s] = std::max(last_end[s], k[i].end);
  }
  EXPECT_EQ(gemms, 6u);
  EXPECT_EQ(joins, 3u);
}

TEST(ReplayCommand, ModesIssueTheKernelsAsRecordedOrEagerly) {
  const auto total = [](const std::string& mode) {
    const auto r = gpusim::testing::run_gpusim({"replay", kPrefill, "--hw", "h100", "--from", "h100", "--mode", mode,
                                                "--format", "json"});
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? json::parse(r.out) : json{};
  };
  const json graph = total("graph"), eager = total("eager"), recorded = total("as-recorded");
  // The kernels are the same; the host's issue changes the span.
  EXPECT_DOUBLE_EQ(eager["kernel_time_us"].get<double>(), graph["kernel_time_us"].get<double>());
  EXPECT_GE(eager["total_us"].get<double>(), graph["total_us"].get<double>());
  // A decode step's short kernels: issuing them one by one leaves the GPU waiting.
  const std::string decode = std::string(GPUSIM_REPO_DIR) +
                             "/validation/data/traces/replay_h100_llama3.2-1b-4l_decode_b4_l512.json.gz";
  const auto d_graph = gpusim::testing::run_gpusim({"replay", decode, "--hw", "h100", "--format", "json"});
  const auto d_eager = gpusim::testing::run_gpusim({"replay", decode, "--hw", "h100", "--mode", "eager", "--format", "json"});
  ASSERT_EQ(d_eager.status, 0) << d_eager.err;
  EXPECT_GT(json::parse(d_eager.out)["total_us"].get<double>(), 1.2 * json::parse(d_graph.out)["total_us"].get<double>());
  // As recorded (an eager program's host, three iterations with syncs between them), the span is
  // the recorded one: within 2% (0.2% when written).
  const double span = recorded["replay"]["recorded_span_us"].get<double>();
  EXPECT_NEAR(recorded["total_us"].get<double>() / span, 1.0, 0.02);
  EXPECT_GT(span, 2.0 * graph["total_us"].get<double>());  // host-bound: mostly host gaps
}

TEST(ReplayCommand, BadArgumentsExitWithStatus2) {
  EXPECT_EQ(gpusim::testing::run_gpusim({"replay", kPrefill}).status, 2);                                   // no --hw
  EXPECT_EQ(gpusim::testing::run_gpusim({"replay", "/nonexistent.json", "--hw", "h100"}).status, 2);       // no file
  EXPECT_EQ(gpusim::testing::run_gpusim({"replay", kPrefill, "--hw", "h100", "--mode", "fast"}).status, 2);
  EXPECT_EQ(gpusim::testing::run_gpusim({"replay", kPrefill, "--hw", "h100", "--set", "workload.batch=2"}).status, 2);
}

}  // namespace
}  // namespace gpusim::replay
