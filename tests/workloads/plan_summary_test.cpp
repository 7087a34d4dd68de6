#include "workloads/plan_summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

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

}  // namespace
}  // namespace gpusim::workloads
