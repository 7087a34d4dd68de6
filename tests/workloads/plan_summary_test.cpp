#include "workloads/plan_summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_files.h"

namespace gpusim::workloads {
namespace {

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;

std::string summary(const std::string& workload) {
  return describe_workload(
      load_workload(kRepo / "configs/workloads" / workload, {}, kRepo / "configs/models"));
}

TEST(WorkloadSummaryTest, OpWorkloadListsEveryOp) {
  const std::string s = summary("ops.yaml");
  EXPECT_EQ(s.rfind("workload projection-and-norm: 8 ops\n", 0), 0u) << s;
  EXPECT_NE(s.find("  1. matmul M=2048 N=2048 K=2048 bf16\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  5. naive_attention B=4 H=12 S=512 D=64 fp32\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  7. cast n=1048576 fp32->bf16\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  8. layer_norm R=4096 C=4096 bf16\n"), std::string::npos) << s;
}

TEST(WorkloadSummaryTest, ModelWorkloadSaysWhatWouldRun) {
  const std::string s = summary("decode.yaml");
  for (const char* part :
       {"workload decode: llama3-8b decode, batch 16, KV length 1024",
        "dtype bf16, lowering hf-eager, attention sdpa",
        "32 layers, d_model 4096, 32 heads / 8 KV heads of dim 128, d_ff 14336, vocab 128256",
        "rmsnorm (eps 1e-05), swiglu, rope positions (theta 500000), no biases, untied",
        "8.030 B parameters (8030261248), weights 16.06 GB (14.96 GiB) at bf16"}) {
    EXPECT_NE(s.find(part), std::string::npos) << "missing '" << part << "' in\n" << s;
  }
}

TEST(WorkloadSummaryTest, MoeAndGenerateDetails) {
  const std::string ocr = summary("deepseek-ocr-decode.yaml");
  EXPECT_NE(ocr.find("MoE: 64 experts of d_ff 896, top-6, plus 2 shared experts of d_ff 896; "
                     "the first 1 layer is dense"),
            std::string::npos)
      << ocr;
  EXPECT_NE(ocr.find("2.935 B parameters"), std::string::npos) << ocr;

  const std::string gen = summary("generate.yaml");
  EXPECT_NE(gen.find("prompt length 512, then 128 output tokens"), std::string::npos) << gen;
}

// A decode workload of preset `model`, described.
std::string preset_summary(const std::string& model) {
  gpusim::testing::TempDir dir;
  const auto file = dir.write(
      "w.yaml", "model: " + model + "\nphase: decode\nbatch: 1\nseq_len: 128\ndtype: bf16\n");
  return describe_workload(load_workload(file, {}, kRepo / "configs/models"));
}

void expect_parts(const std::string& s, const std::vector<std::string>& parts) {
  for (const auto& part : parts) {
    EXPECT_NE(s.find(part), std::string::npos) << "missing '" << part << "' in\n" << s;
  }
}

TEST(WorkloadSummaryTest, ThisYearsFeatures) {
  expect_parts(preset_summary("gemma2-2b"),
               {"rmsnorm (eps 1e-06), geglu, rope positions (theta 10000), no biases, tied "
                "embeddings\n",
                "  sliding window 4096 on 13 of 26 layers, query scale 256^-0.5, attention "
                "soft-cap 50, final logit soft-cap 30, norms scale by (1 + weight), sandwich "
                "norms, embeddings x sqrt(d_model)\n",
                "2.614 B parameters (2614341888)"});
  expect_parts(preset_summary("gemma3-1b"),
               {"  qk-norm, sliding window 512 on 22 of 26 layers, local RoPE theta 10000, "});
  expect_parts(preset_summary("qwen3-1.7b"), {"tied embeddings\n  qk-norm\n"});
  expect_parts(preset_summary("phi3-mini-4k"),
               {"  fused qkv_proj, fused gate_up_proj, sliding window 2047 on all 32 layers\n"});
  expect_parts(preset_summary("deepseek-v3"),
               {"128 heads / 128 KV heads of dim 192", "  yarn RoPE scaling\n",
                "  MLA: q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 + qk_rope 64, v 128, "
                "interleaved RoPE\n",
                "MoE: 256 experts of d_ff 2048, top-8, plus 1 shared expert of d_ff 2048; the "
                "first 3 layers are dense; sigmoid router in fp32, noaux_tc top-k (4 of 8 "
                "groups), weights x 2.5\n",
                "671.026 B parameters (671026404352)"});
  expect_parts(preset_summary("deepseek-v2-lite"),
               {"  MLA: q projected directly, kv_lora_rank 512"});
}

TEST(WorkloadSummaryTest, MoePlacement) {
  gpusim::testing::TempDir dir;
  const auto file = dir.write(
      "w.yaml",
      "model:\n  layers: 6\n  d_model: 64\n  heads: 4\n  d_ff: 128\n  vocab: 100\n"
      "  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n  rotary_fraction: 0.5\n"
      "  moe: {experts: 4, top_k: 2, expert_d_ff: 32, every: 2, phase: 1, dense_list: [3]}\n"
      "phase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n");
  expect_parts(describe_workload(load_workload(file, {}, kRepo / "configs/models")),
               {"  partial RoPE 0.5 (8 of 16 dims)\n",
                "MoE: 4 experts of d_ff 32, top-2; MoE on 2 of 6 layers (i % 2 == 1, dense: 3)\n"});
}

}  // namespace
}  // namespace gpusim::workloads
