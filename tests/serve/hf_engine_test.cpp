// transformers' continuous batching as gpusim serve models it (configs/engines/
// hf-paged-sdpa-graphs.yaml): the static-shape padding of graph steps, the packed batch's kernels
// (workloads/hf_paged_attention.cpp), the engine's host time, and its bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "hw/gpu_engine.h"
#include "serve/serve_run.h"
#include "serve/serve_spec.h"
#include "serve/step_timer.h"
#include "sim/error.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"
#include "workloads/transformer_phases.h"

namespace gpusim::serve {
namespace {

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;

std::filesystem::path write(const std::string& name, const std::string& text) {
  const auto path = gpusim::testing::test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

ServeSpec load(const std::string& name, const std::string& extra) {
  return load_serve_spec(write(name + ".yaml", "model: {name: tiny, layers: 2, d_model: 2048, heads: 32, kv_heads: 8, "
                                               "head_dim: 64, d_ff: 8192, vocab: 128256, norm: rmsnorm, "
                                               "activation: swiglu, positions: rope}\n"
                                               "engine: hf-paged-sdpa-graphs\n" +
                                                   extra +
                                                   "requests: {count: 4, arrival: all-at-once, prompt_tokens: 100, "
                                                   "output_tokens: 3}\n"),
                         {}, kRepo / "configs" / "engines", kRepo / "configs" / "models");
}

TEST(HfEngine, GraphStepsArePaddedAsTransformersPadsThem) {
  const auto spec = load("pad", "scheduler: {max_num_seqs: 4}\n");
  EXPECT_EQ(spec.model.lowering, workloads::Lowering::kHfEager);
  EXPECT_EQ(spec.engine.padding.queries, 64);
  EXPECT_EQ(spec.engine.padding.keys, 16384);
  const auto hw = gpusim::testing::preset("h100");
  const auto models = models::default_kernel_models();
  StepTimer timer(spec.model, hw, spec.engine, models);
  timer.set_cache_tokens(1 << 20);
  // 101 queries pad to 128; 300 cached keys to one interval of 16384; the rows to min(128, 4).
  auto s = timer.padded({{100, 0, true}, {1, 300, true}});
  EXPECT_EQ(s.pad_tokens, 27);
  EXPECT_EQ(s.pad_keys, 16384 - 300);
  EXPECT_EQ(s.pad_rows, 2);
  EXPECT_EQ(s.tokens(), 128);
  EXPECT_EQ(s.sampled(), 4);
  // Nothing cached still reads one interval of keys (pad_to_interval of 0); a cache smaller than
  // the interval caps it.
  EXPECT_EQ(timer.padded({{64, 0, true}}).pad_keys, 16384);
  timer.set_cache_tokens(5000);
  EXPECT_EQ(timer.padded({{1, 300, true}}).pad_keys, 5000 - 300);
  EXPECT_EQ(timer.padded({{8100, 0, false}}).tokens(), 8128);
  // The token budget caps the queries: 7970 would pad to 8000, past a budget of 7990.
  const auto capped = load("pad_cap", "scheduler: {max_num_batched_tokens: 7990}\n");
  StepTimer capped_timer(capped.model, hw, capped.engine, models);
  EXPECT_EQ(capped_timer.padded({{7970, 0, false}}).tokens(), 7990);
}

TEST(HfEngine, APackedStepGathersEveryKeyAndRunsOneMaskedSdpaPerLayer) {
  auto spec = load("kernels", "");
  const auto hw = gpusim::testing::preset("h100");
  const auto models = models::default_kernel_models();
  workloads::OpLoweringCache lowering(hw, models);
  workloads::StepShape s(std::vector<workloads::SeqSlice>{{200, 0, true}, {1, 500, true}, {1, 700, true}});
  const auto program = workloads::build_step(spec.model, "serve", s, lowering);
  const auto nodes = program.dag.to_nodes();
  std::map<std::string, int> by_op;
  std::int64_t sdpa_ctas = 0;
  for (const auto& n : nodes) {
    const auto dot = n.op.rfind('.');
    by_op[n.op.substr(dot + 1)] += 1;
    if (n.launch.family == "cudnn_sdpa_fwd") sdpa_ctas = n.launch.grid.x;
  }
  EXPECT_EQ(by_op["k_index_select"], 2);  // one per layer
  EXPECT_EQ(by_op["v_index_select"], 2);
  EXPECT_EQ(by_op["repeat_k"], 2);
  EXPECT_EQ(by_op["q_contiguous"], 2);
  EXPECT_EQ(by_op["out_transpose"], 2);
  EXPECT_EQ(by_op["mask_triu"], 3);  // the mask's blocks, one per sequence, before the forward
  EXPECT_EQ(by_op["argmax"], 1);
  // 202 queries in two 128-row tiles, 32 heads: 64 work units of the persistent kernel.
  EXPECT_EQ(sdpa_ctas, 64);
  // The masked SDPA over every key costs more as the cache grows, though the queries do not.
  workloads::StepShape longer(std::vector<workloads::SeqSlice>{{200, 0, true}, {1, 5000, true}, {1, 7000, true}});
  const auto a = hw::run_engine(hw, hw::LaunchMode::kGraph, nodes);
  const auto b = hw::run_engine(hw, hw::LaunchMode::kGraph, workloads::build_step(spec.model, "serve", longer, lowering).dag.to_nodes());
  EXPECT_GT(b.end.us(), 1.2 * a.end.us());
}

TEST(HfEngine, AStepTakesItsHostTimeBesideItsGpuTime) {
  const auto spec =
      load("host", "step_overhead: 1ms\nrequest_overhead: 0.5ms\nkey_overhead: 1us\nattention_first_use: 20ms\n");
  const auto hw = gpusim::testing::preset("h100");
  const auto r = run_serve(spec, hw, models::default_kernel_models());
  ASSERT_EQ(r.steps.size(), 3u);
  // The first step prefills the four 100-token prompts: 1 ms + 4 x 0.5 ms + 400 keys x 1 us, and
  // builds the prefill attention kernel; the second, the first decode, builds the decode one.
  EXPECT_NEAR(r.steps[0].host_s, 3.4e-3 + 20e-3, 1e-9);
  EXPECT_NEAR(r.steps[1].host_s, 1e-3 + 2e-3 + 404e-6 + 20e-3, 1e-9);
  EXPECT_NEAR(r.steps[2].host_s, 1e-3 + 2e-3 + 408e-6, 1e-9);
  EXPECT_NEAR(r.steps[0].duration_s, r.steps[0].gpu_us * 1e-6 + r.steps[0].host_s, 1e-12);
  // An engine that built both kernels before pays neither.
  EngineState built;
  built.attention_kernels = {0, 1};
  EXPECT_NEAR(run_serve(spec, hw, models::default_kernel_models(), {}, true, built).steps[0].host_s, 3.4e-3, 1e-9);
  const auto s = summarize(spec, r);
  EXPECT_GT(s.host_share, 0.0);
  EXPECT_LT(s.host_share, 1.0);
}

TEST(HfEngine, AGraphIsCapturedTheFirstTimeItsShapeRunsAndNotAgain) {
  const auto spec = load("capture", "");
  ASSERT_EQ(spec.engine.graph_capture, EngineSpec::GraphCapture::kLazy);
  const auto hw = gpusim::testing::preset("h100");
  const auto models = models::default_kernel_models();
  const auto fresh = run_serve(spec, hw, models);
  // The prefill's shape, then the decodes' (64 padded queries): two captures, each dearer than
  // the replays of its shape that follow.
  ASSERT_EQ(fresh.steps.size(), 3u);
  EXPECT_TRUE(fresh.steps[0].captured);
  EXPECT_TRUE(fresh.steps[1].captured);
  EXPECT_FALSE(fresh.steps[2].captured);
  EXPECT_GT(fresh.steps[1].gpu_us, 2 * fresh.steps[2].gpu_us);
  EXPECT_EQ(fresh.engine.graphs.size(), 2u);
  // An engine that has served these shapes before captures nothing: the same steps, cheaper.
  const auto warm = run_serve(spec, hw, models, {}, true, fresh.engine);
  ASSERT_EQ(warm.steps.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(warm.steps[i].captured) << i;
  EXPECT_LT(warm.steps[0].gpu_us, fresh.steps[0].gpu_us);
  EXPECT_NEAR(warm.steps[1].gpu_us, fresh.steps[2].gpu_us, 0.01 * fresh.steps[2].gpu_us);  // one more cached key
}

TEST(HfEngine, BadEngineKeysAreRefusedWithTheirKey) {
  const auto expect_error = [](const std::string& name, const std::string& extra, const std::string& key) {
    try {
      load(name, extra);
      ADD_FAILURE() << name << ": no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect_error("pad_scalar", "padding: 64\n", "padding");
  expect_error("pad_key", "padding: {queries: 64, values: 3}\n", "values");
  expect_error("pad_negative", "padding: {queries: -1}\n", "queries");
  expect_error("host_negative", "request_overhead: -1ms\n", "request_overhead");
  expect_error("attention", "attention: flash\n", "attention");
  // The packed engine is modeled for dense models with full attention.
  try {
    load_serve_spec(write("moe.yaml", "model: qwen3-30b-a3b\nengine: hf-paged-sdpa-graphs\nrequests: {count: 1, "
                                      "arrival: all-at-once, prompt_tokens: 8, output_tokens: 2}\n"),
                    {}, kRepo / "configs" / "engines", kRepo / "configs" / "models");
    ADD_FAILURE() << "MoE accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("engine"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpusim::serve
