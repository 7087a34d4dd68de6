// `gpusim run` on model-level workloads: the shipped jobs on every preset, generate figures,
// memory, determinism, what-ifs through the mechanism, lowerings and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::TempDir;
using Result = gpusim::testing::CliResult;

Result run(const std::vector<std::string>& args) { return gpusim::testing::run_gpusim(args); }

std::string job(const std::string& name) { return (config_dir() / "workloads" / (name + ".yaml")).string(); }

using gpusim::testing::run_json;

TEST(RunModel, ShippedJobsRunOnEveryPreset) {
  for (const std::string w : {"decode", "prefill", "deepseek-ocr-decode", "cs336-small-naive", "cs336-small", "mla-decode"}) {
    for (const std::string hw : {"h100", "h200", "rtx5090", "a100"}) {
      const auto j = run_json(job(w), hw);
      ASSERT_FALSE(j.is_null()) << w << " on " << hw;
      EXPECT_GT(j["kernel_time_us"].get<double>(), 0) << w << " on " << hw;
      EXPECT_GE(j["total_us"].get<double>(), j["kernel_time_us"].get<double>());
      EXPECT_GT(j["kernels"].size(), 100u);
      EXPECT_EQ(j["phases"].size(), 1u);
      EXPECT_GT(j["memory"]["weights_bytes"].get<std::int64_t>(), 0);
    }
  }
}

TEST(RunModel, DefaultDecodeJob) {
  const auto j = run_json(job("decode"), "h100");
  EXPECT_EQ(j["phases"][0]["name"], "decode");
  EXPECT_EQ(j["memory"]["weights_bytes"], 16'060'522'496LL);
  EXPECT_EQ(j["memory"]["kv_cache_bytes"], 2LL * 32 * 16 * 1025 * 8 * 128 * 2);
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  // One step of Llama 3 8B: 32 layers of ~45 kernels plus embedding, rotary table, head.
  EXPECT_GT(j["kernels"].size(), 1400u);
  EXPECT_LT(j["kernels"].size(), 1600u);
  // Decode is weight streaming: at least 16 GB at the H100's 3.35 TB/s peak.
  EXPECT_GT(j["kernel_time_us"].get<double>(), 16.06e9 / 3.35e12 * 1e6);
}

TEST(RunModel, GenerateReportsTtftTpotAndThroughput) {
  TempDir dir;
  const auto w = dir.write("gen.yaml",
                           "model: gpt2-small\nphase: generate\nbatch: 2\nseq_len: 64\noutput_len: 8\n"
                           "dtype: bf16\n");
  const auto j = run_json(w.string(), "h100");
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][0]["name"], "prefill");
  EXPECT_EQ(j["phases"][0]["steps"], 1);
  EXPECT_EQ(j["phases"][1]["name"], "decode");
  EXPECT_EQ(j["phases"][1]["steps"], 7);  // the 8th token is sampled, never fed back
  const auto& g = j["generation"];
  // Equal within the JSON's 9 significant digits (docs/results.md).
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-8 * std::abs(b)); };
  near(g["ttft_us"].get<double>(), j["phases"][0]["total_us"].get<double>());
  near(g["tpot_us"].get<double>(), j["phases"][1]["total_us"].get<double>() / 7);
  near(g["tokens_per_s"].get<double>(), 2 * 8 / (j["total_us"].get<double>() * 1e-6));
  near(g["total_us"].get<double>(), j["phases"][0]["total_us"].get<double>() + j["phases"][1]["total_us"].get<double>());
  EXPECT_EQ(j["memory"]["kv_cache_tokens"], 64 + 7);
  EXPECT_TRUE(j.contains("kernels_scope"));  // only some steps' kernels are listed
}

TEST(RunModel, TrainReportsPhasesMemoryAndThroughput) {
  TempDir dir;
  const auto w = dir.write("train.yaml",
                           "model: qwen2-1.5b\nphase: train\nbatch: 2\nseq_len: 256\ndtype: bf16\n");
  const auto j = run_json(w.string(), "h100");
  // The contract: forward, backward and optimizer as the phases, each with its kernels and time;
  // the top-level totals are the whole step.
  ASSERT_EQ(j["phases"].size(), 3u);
  double kernel_time = 0;
  std::int64_t kernels = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["phases"][i]["name"], std::vector<std::string>({"forward", "backward", "optimizer"})[i]);
    kernel_time += j["phases"][i]["kernel_time_us"].get<double>();
    kernels += j["phases"][i]["kernels"].get<std::int64_t>();
    EXPECT_GT(j["phases"][i]["total_us"].get<double>(), 0);
  }
  EXPECT_NEAR(kernel_time, j["kernel_time_us"].get<double>(), 1e-6 * kernel_time);
  EXPECT_EQ(kernels, static_cast<std::int64_t>(j["kernels"].size()));
  const auto& m = j["memory"];
  EXPECT_EQ(m["gradients_bytes"], m["weights_bytes"]);
  EXPECT_EQ(m["optimizer_state_bytes"].get<std::int64_t>(), 2 * m["weights_bytes"].get<std::int64_t>());
  EXPECT_EQ(m["peak_bytes"], m["total_bytes"]);
  // Throughput: tokens over the step, model FLOPs against the chip's peak, the GEMMs' share.
  const auto& t = j["training"];
  EXPECT_EQ(t["tokens"], 512);
  const double tokens_per_s = 512 / (j["total_us"].get<double>() * 1e-6);
  EXPECT_NEAR(t["tokens_per_s"].get<double>(), tokens_per_s, 1e-8 * tokens_per_s);  // 9 digits in the JSON
  EXPECT_GT(t["mfu_pct"].get<double>(), 1.0);
  EXPECT_LT(t["mfu_pct"].get<double>(), 100.0);
  EXPECT_GT(t["gemm_share_pct"].get<double>(), 10.0);
  EXPECT_LT(t["gemm_share_pct"].get<double>(), 90.0);
}

// An fp32 step has no tensor-core path: its MFU is against the FP32 pipes' peak, a finite share.
TEST(RunModel, Fp32TrainMfuIsAgainstTheFp32Peak) {
  TempDir dir;
  const auto w = dir.write("train.yaml",
                           "model: cs336-small\nphase: train\nbatch: 1\nseq_len: 128\ndtype: fp32\n"
                           "lowering: cs336-basics\noptimizer: none\n");
  // optimizer: none keeps the memory contract: gradients, no optimizer state, the peak.
  const auto m = run_json(w.string(), "h100")["memory"];
  EXPECT_EQ(m["gradients_bytes"], m["weights_bytes"]);
  EXPECT_EQ(m["optimizer_state_bytes"], 0);
  EXPECT_EQ(m["peak_bytes"], m["total_bytes"]);
  for (const std::string hw : {"rtx5090", "h100"}) {
    const auto t = run_json(w.string(), hw)["training"];
    EXPECT_TRUE(std::isfinite(t["mfu_pct"].get<double>())) << hw;
    EXPECT_GT(t["mfu_pct"].get<double>(), 1.0) << hw;
    EXPECT_LT(t["mfu_pct"].get<double>(), 100.0) << hw;
  }
  // Mixed precision: fp32 weights, bf16 matmuls under autocast; MFU against the bf16 tensor peak.
  const auto amp = run_json(job("train-amp"), "h100")["training"];
  EXPECT_GT(amp["mfu_pct"].get<double>(), 5.0);
  EXPECT_LT(amp["mfu_pct"].get<double>(), 100.0);
}

TEST(RunModel, ProgressGoesToStderrOnlyWhenAsked) {
  TempDir dir;
  const auto w = dir.write("gen.yaml",
                           "model: gpt2-small\nphase: generate\nbatch: 2\nseq_len: 64\noutput_len: 8\n"
                           "dtype: bf16\n");
  std::ostringstream out, err, quiet_out, quiet_err;
  const std::vector<std::string> args{"run", w.string(), "--hw", "h100", "--format", "json"};
  ASSERT_EQ(cli::run_cli(args, cli::Environment{config_dir(), true}, out, err), 0) << err.str();
  EXPECT_NE(err.str().find("simulating steps"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("8/8 (100%)"), std::string::npos) << err.str();
  ASSERT_EQ(cli::run_cli(args, cli::Environment{config_dir(), false}, quiet_out, quiet_err), 0);
  EXPECT_EQ(quiet_err.str(), "");
  EXPECT_EQ(out.str(), quiet_out.str());  // results do not depend on the display
}

TEST(RunModel, OutputIsByteIdenticalAcrossRuns) {
  const Result a = run({"run", job("deepseek-ocr-decode"), "--hw", "h100", "--format", "json"});
  const Result b = run({"run", job("deepseek-ocr-decode"), "--hw", "h100", "--format", "json"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(RunModel, WhatIfsChangeTheAnswerThroughTheMechanism) {
  const double base = run_json(job("decode"), "h100")["kernel_time_us"];
  const double slow = run_json(job("decode"), "h100", {"--set", "hw.dram.bandwidth=1.675TB/s"})["kernel_time_us"];
  EXPECT_GT(slow, 1.5 * base);  // decode streams weights: half the bandwidth, much slower
  const double bigger = run_json(job("decode"), "h100", {"--set", "workload.batch=64"})["kernel_time_us"];
  EXPECT_GT(bigger, base);
}

TEST(RunModel, FusedLoweringLaunchesFewerKernelsAndIsFaster) {
  const auto eager = run_json(job("decode"), "h100");
  const auto fused = run_json(job("decode"), "h100", {"--set", "workload.lowering=fused"});
  EXPECT_LT(fused["kernels"].size() * 3, eager["kernels"].size());
  EXPECT_LT(fused["kernel_time_us"].get<double>(), eager["kernel_time_us"].get<double>());
  EXPECT_EQ(fused["memory"]["weights_bytes"], eager["memory"]["weights_bytes"]);
}

TEST(RunModel, NaiveAttentionLaunchesSoftmaxKernels) {
  const auto j = run_json(job("cs336-small-naive"), "h100");
  int softmax = 0;
  for (const auto& k : j["kernels"]) softmax += k["name"].get<std::string>().find("softmax") != std::string::npos;
  EXPECT_EQ(softmax, 12);  // one per layer
  const auto sdpa = run_json(job("cs336-small-naive"), "h100",
                            {"--set", "workload.attention=sdpa", "--set", "workload.dtype=bf16"});
  EXPECT_LT(sdpa["kernel_time_us"].get<double>(), j["kernel_time_us"].get<double>());
}

TEST(RunModel, ModelThatDoesNotFitStillReportsLatency) {
  TempDir dir;
  const auto w = dir.write("big.yaml", "model: llama3-70b\nphase: decode\nbatch: 8\nseq_len: 2048\ndtype: bf16\n");
  const Result r = run({"run", w.string(), "--hw", "h100"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("DOES NOT FIT"), std::string::npos);
  EXPECT_NE(r.out.find("would run out of memory"), std::string::npos);
  const auto j = run_json(w.string(), "h100");
  EXPECT_FALSE(j["memory"]["fits"].get<bool>());
  EXPECT_GT(j["memory"]["total_bytes"].get<std::int64_t>(), j["memory"]["capacity_bytes"].get<std::int64_t>());
  EXPECT_GT(j["kernel_time_us"].get<double>(), 0);
}

TEST(RunModel, ExpertWeightsSkewTheMoeLayers) {
  TempDir dir;
  std::string skew = "[";
  for (int i = 0; i < 64; ++i) skew += (i ? ", " : "") + std::string(i < 6 ? "1" : "0");
  skew += "]";
  const auto even = dir.write("even.yaml", "model: deepseek-ocr-decoder\nphase: decode\nbatch: 32\nseq_len: 256\ndtype: bf16\n");
  const auto hot = dir.write("hot.yaml", "model: deepseek-ocr-decoder\nphase: decode\nbatch: 32\nseq_len: 256\n"
                                         "dtype: bf16\nexpert_weights: " + skew + "\n");
  // 192 routed pairs over 6 experts instead of 64: far fewer expert weights to stream.
  EXPECT_LT(run_json(hot.string(), "h100")["kernel_time_us"].get<double>(),
            run_json(even.string(), "h100")["kernel_time_us"].get<double>());
}

// A routing trace: expert_weights_by_layer gives MoE layers their own weights. The same skew
// on every MoE layer is expert_weights itself (and, lowered layer by layer, the same time to the
// digit as the repeating-layer path gives it); on one layer alone it lands in between.
TEST(RunModel, ExpertWeightsByLayerRouteEachLayerItsOwnWay) {
  TempDir dir;
  std::string skew = "[";
  for (int i = 0; i < 64; ++i) skew += (i ? ", " : "") + std::string(i < 6 ? "1" : "0");
  skew += "]";
  const std::string head = "model: deepseek-ocr-decoder\nphase: decode\nbatch: 32\nseq_len: 256\ndtype: bf16\n";
  std::string every = "expert_weights_by_layer:\n";
  for (int layer = 1; layer < 12; ++layer) every += "  " + std::to_string(layer) + ": " + skew + "\n";
  const auto even = dir.write("even.yaml", head);
  const auto hot = dir.write("hot.yaml", head + "expert_weights: " + skew + "\n");
  const auto traced = dir.write("traced.yaml", head + every);
  const auto one = dir.write("one.yaml", head + "expert_weights_by_layer:\n  5: " + skew + "\n");
  const double t_even = run_json(even.string(), "h100")["kernel_time_us"].get<double>();
  const double t_hot = run_json(hot.string(), "h100")["kernel_time_us"].get<double>();
  const double t_traced = run_json(traced.string(), "h100")["kernel_time_us"].get<double>();
  const double t_one = run_json(one.string(), "h100")["kernel_time_us"].get<double>();
  EXPECT_DOUBLE_EQ(t_traced, t_hot);
  EXPECT_LT(t_hot, t_one);
  EXPECT_LT(t_one, t_even);
}

TEST(RunModel, BadInputNamesTheKey) {
  TempDir dir;
  struct Case {
    std::string yaml, key;
  };
  const std::vector<Case> cases = {
      {"model: llama3-8b\nphase: decode\nbatch: 0\nseq_len: 8\ndtype: bf16\n", "batch"},
      {"model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: -3\ndtype: bf16\n", "seq_len"},
      {"model: llama3-8b\nphase: finetune\nbatch: 1\nseq_len: 8\ndtype: bf16\n", "phase"},
      {"model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nlowering: vllm\n", "lowering"},
      {"model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: fp8\n", "dtype"},
      {"model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights: [1]\n", "expert_weights"},
      {"model: mixtral-8x7b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights: [1, 2]\n", "expert_weights"},
      {"model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights_by_layer: {0: [1]}\n",
       "expert_weights_by_layer"},
      {"model: mixtral-8x7b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights_by_layer: [1, 2]\n",
       "expert_weights_by_layer"},
      {"model: mixtral-8x7b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights_by_layer: {32: [1, 1, 1, 1, 1, "
       "1, 1, 1]}\n", "expert_weights_by_layer"},
      {"model: mixtral-8x7b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights_by_layer: {3: [1, 2]}\n",
       "expert_weights_by_layer.3"},
      {"model: mixtral-8x7b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights_by_layer: {3: [0, 0, 0, 0, 0, "
       "0, 0, 0]}\n", "expert_weights_by_layer.3"},
      {"model: deepseek-ocr-decoder\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\nexpert_weights_by_layer: {0: [1]}\n",
       "layer 0 of deepseek-ocr-decoder is dense"},
      {"model: {layers: 2, d_model: 100, heads: 3, d_ff: 64, vocab: 10, norm: rmsnorm, activation: swiglu, "
       "positions: rope}\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n", "model.heads"},
      {"model: {layers: 2, d_model: 96, heads: 4, kv_heads: 3, d_ff: 64, vocab: 10, norm: rmsnorm, "
       "activation: swiglu, positions: rope}\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n", "model.kv_heads"},
  };
  for (const auto& c : cases) {
    const auto w = dir.write("bad.yaml", c.yaml);
    const Result r = run({"run", w.string(), "--hw", "h100"});
    EXPECT_EQ(r.status, 2) << c.yaml;
    EXPECT_NE(r.err.find(c.key), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("bad.yaml"), std::string::npos) << r.err;
  }
  // fp8 on a chip without fp8 tensor cores, in the lowering that supports fp8.
  const auto w = dir.write("fp8.yaml", "model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: fp8\nlowering: fused\n");
  EXPECT_EQ(run({"run", w.string(), "--hw", "h100"}).status, 0);
  const Result a100 = run({"run", w.string(), "--hw", "a100"});
  EXPECT_EQ(a100.status, 2);
  EXPECT_NE(a100.err.find("dtype"), std::string::npos) << a100.err;
}

// The caches change nothing a user sees: the JSON of the shipped generate job (shortened; and of an op
// workload and an eager decode on a what-if chip) is byte-identical with --no-cache.
TEST(RunModel, NoCacheGivesByteIdenticalJson) {
  const auto jobs = config_dir() / "workloads";
  const std::vector<std::vector<std::string>> runs = {
      {"run", (jobs / "generate.yaml").string(), "--hw", "h100", "--set", "workload.output_len=12", "--format", "json"},
      {"run", (jobs / "ops.yaml").string(), "--hw", "h200", "--format", "json"},
      {"run", (jobs / "decode.yaml").string(), "--hw", "h100", "--mode", "eager", "--set", "hw.l2.size=16MiB",
       "--set", "workload.batch=3", "--format", "json"},
  };
  for (auto args : runs) {
    const Result cached = run(args);
    args.push_back("--no-cache");
    const Result scratch = run(args);
    ASSERT_EQ(cached.status, 0) << cached.err;
    ASSERT_EQ(scratch.status, 0) << scratch.err;
    EXPECT_TRUE(cached.out == scratch.out) << args[1];
  }
}

TEST(RunTrainCli, AutocastOnAChipWithoutThatTypesTensorCoresIsRefused) {
  // A what-if chip with fp32 paths only: mixed precision has no bf16 matmul to run.
  const auto r = gpusim::testing::run_gpusim({"run", (gpusim::testing::config_dir() / "workloads" / "train-amp.yaml").string(), "--hw",
                                      "h100", "--set", "hw.throughput.tensor_bf16=0 flop/clk"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("autocast"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("train-amp.yaml"), std::string::npos) << r.err;
}

// A model workload without dtype runs in bf16 and says so, in the table and in the JSON.
TEST(RunModel, DefaultDtypeIsReported) {
  const TempDir dir;
  const auto w = dir.write("w.yaml", "model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 128\n").string();
  const auto j = run_json(w, "h100");
  EXPECT_EQ(j["dtype"], "bf16");
  EXPECT_EQ(j["dtype_default"], "gpusim's default");
  const Result table = run({"run", w, "--hw", "h100"});
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("dtype bf16 (default: gpusim's default)"), std::string::npos) << table.out;
  // Given in the file: no default to report.
  const auto given = run_json(job("decode"), "h100");
  EXPECT_EQ(given["dtype"], "bf16");
  EXPECT_FALSE(given.contains("dtype_default"));
}


}  // namespace
}  // namespace gpusim::cli
