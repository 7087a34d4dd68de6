// The hf-eager lowering's framework variants: transformers 4.46's per-expert MoE loop (DeepSeek's
// moe_infer) and flash_attention_2, as seed 003 ran them; bad combinations refused by key.
#include <gtest/gtest.h>

#include <string>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;

ModelWorkload workload(const std::string& yaml) { return gpusim::testing::model_workload(yaml, "test.yaml"); }

// Framework ops whose label contains `part` (an op's several launches count once).
int count_ops(const KernelDag& dag, const std::string& part) {
  int n = 0;
  std::string previous;
  for (std::size_t v = 0; v < dag.size(); ++v) {
    const std::string& op = dag[static_cast<KernelDag::Vertex>(v)].op;
    if (op != previous && op.find(part) != std::string::npos) ++n;
    previous = op;
  }
  return n;
}

const std::string kOcr = "model: deepseek-ocr-decoder\nphase: decode\nbatch: 1\nseq_len: 1024\ndtype: bf16\n";

TEST(HfVariants, TheMoeLoopRunsOneMlpPerExpertHit) {
  const auto models = models::default_kernel_models();
  const auto hw = hw::load_hardware("rtx5090", hw::PresetCatalog(config_dir() / "hw"), {});
  OpLoweringCache lowering(hw, models);
  const ModelWorkload loop = workload(kOcr + "framework: transformers-4.46\n");
  EXPECT_EQ(loop.moe, MoePath::kLoop);
  const ModelWorkload grouped = workload(kOcr);
  EXPECT_EQ(grouped.moe, MoePath::kGroupedMm);
  EXPECT_EQ(workload(kOcr + "framework: transformers-4.46\nmoe: grouped_mm\n").moe, MoePath::kGroupedMm);
  const auto l = build_step(loop, "decode", {1, 1, 1024}, lowering);
  const auto g = build_step(grouped, "decode", {1, 1, 1024}, lowering);
  // Decode, one token, top 6 of 64: six experts' MLPs in each of the 11 MoE layers, each with
  // its gate, up and down projections; no grouped GEMM, and the host copy of the counts.
  EXPECT_EQ(count_ops(l.dag, ".gate_proj") - count_ops(l.dag, "shared_experts.gate_proj") - count_ops(l.dag, "mlp.gate_proj"),
            6 * 11);
  EXPECT_EQ(count_ops(l.dag, "moe_infer.to_host"), 11);
  EXPECT_EQ(count_ops(l.dag, "experts.gate_up_proj"), 0);
  EXPECT_EQ(count_ops(g.dag, "experts.gate_up_proj"), 11);
  // Eight tokens of a prefill spread over every expert: 64 MLPs a layer.
  const auto p = build_step(workload("model: deepseek-ocr-decoder\nphase: prefill\nbatch: 1\nseq_len: 64\ndtype: bf16\n"
                                     "framework: transformers-4.46\n"),
                            "prefill", {1, 64, 0}, lowering);
  int experts = 0;
  for (int x = 0; x < 64; ++x) experts += count_ops(p.dag, "layers[1].moe.experts[" + std::to_string(x) + "].down_proj");
  EXPECT_EQ(experts, 64);
}

// moe_infer copies the token counts to the host each MoE layer (a host sync): in a GPU-bound
// eager prefill the host issues each layer's expert loop only when the GPU has caught up. The
// layer-repeating fast path keeps the syncs as the whole DAG does.
TEST(HfVariants, TheLoopsHostSyncsHoldEagerPrefillsBack) {
  const auto models = models::default_kernel_models();
  const auto hw = hw::load_hardware("rtx5090", hw::PresetCatalog(config_dir() / "hw"), {});
  const std::string prefill = "model: deepseek-ocr-decoder\nphase: prefill\nbatch: 4\nseq_len: 1024\ndtype: bf16\n";
  const ModelWorkload loop = workload(prefill + "moe: loop\n");
  const auto eager = simulate_model(loop, hw, hw::LaunchMode::kEager, models);
  SimulateOptions whole;
  whole.reuse = false;
  EXPECT_DOUBLE_EQ(simulate_model(loop, hw, hw::LaunchMode::kEager, models, whole).steps.at(0).total_us,
                   eager.steps.at(0).total_us);
  const StepRun& e = eager.steps.at(0);
  const double host_only = hw.host.forward_fixed.us() + hw.host.model_kernel_issue.us() * static_cast<double>(e.kernels);
  // Neither the host alone nor the GPU alone: both, in turns, at every sync.
  EXPECT_GT(e.total_us, host_only * 1.05);
  EXPECT_GT(e.total_us, e.kernel_time_us * 1.05);
}

TEST(HfVariants, FlashAttention2DecodesWithItsSplitKvKernels) {
  const auto models = models::default_kernel_models();
  const auto hw = hw::load_hardware("rtx5090", hw::PresetCatalog(config_dir() / "hw"), {});
  const auto run = simulate_model(workload(kOcr + "attention: flash_attention_2\n"), hw, hw::LaunchMode::kGraph, models);
  int split = 0, combine = 0;
  for (const auto& k : run.steps.at(0).detail->result.kernels) {
    split += k.name.find("flash_fwd_splitkv_kernel") != std::string::npos;
    combine += k.name.find("flash_fwd_splitkv_combine_kernel") != std::string::npos;
  }
  EXPECT_EQ(split, 12);
  EXPECT_EQ(combine, 12);
}

TEST(HfVariants, CombinationsTheCodeDoesNotHaveAreRefusedByKey) {
  const auto refused = [](const std::string& yaml, const std::string& key) {
    try {
      workload(yaml);
      ADD_FAILURE() << "accepted: " << yaml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused("model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 16\ndtype: bf16\nmoe: loop\n", "moe");
  refused("model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 16\ndtype: fp32\nattention: flash_attention_2\n", "attention");
  refused("model: deepseek-v2-lite\nphase: decode\nbatch: 1\nseq_len: 16\ndtype: bf16\nattention: flash_attention_2\n", "attention");
  refused(kOcr + "framework: transformers-4.40\n", "framework");
}

}  // namespace
}  // namespace gpusim::workloads
