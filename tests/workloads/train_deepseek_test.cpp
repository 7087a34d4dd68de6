// DeepSeek-V2-Lite training steps (workloads/hf_train_mla.cpp, the DeepSeek parts of
// workloads/hf_train_moe.cpp): multi-head latent attention's backward, the shared experts', the
// fp32 router's, the parameters in DeepseekV2's order, and what stays refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/kernel_model.h"
#include "tests/support/model_workloads.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::expect_config_error;

ModelWorkload workload(const std::string& yaml) { return gpusim::testing::model_workload(yaml); }

// DeepSeek-V2-Lite with 4 layers (the first dense, the others MoE), training set 3's config, at 1 x 256.
const std::string kDeepseek = std::string("hf_config: ") + GPUSIM_REPO_DIR +
                              "/validation/data/hf_configs/train_deepseek-v2-lite-4l_b2_s512.json\n"
                              "phase: train\nbatch: 1\nseq_len: 256\ndtype: bf16\n";

bool has_op(const KernelDag& dag, std::size_t from, std::size_t to, const std::string& op) {
  for (std::size_t v = from; v < to; ++v) {
    if (dag[static_cast<KernelDag::Vertex>(v)].op == op) return true;
  }
  return false;
}

std::size_t index_of(const KernelDag& dag, std::size_t from, std::size_t to, const std::string& op) {
  for (std::size_t v = from; v < to; ++v) {
    if (dag[static_cast<KernelDag::Vertex>(v)].op == op) return v;
  }
  return to;
}

TEST(TrainDeepseek, LatentAttentionSharedExpertsAndTheFp32RouterHaveTheirBackward) {
  const auto models = models::default_kernel_models();
  const auto hw = gpusim::testing::preset("h100");
  OpLoweringCache lowering(hw, models);
  const ModelWorkload w = workload(kDeepseek);
  ASSERT_EQ(w.model.layers, 4);
  const StepProgram step = build_step(w, "train", {1, 256, 0}, lowering);
  ASSERT_EQ(step.phase_starts.size(), 3u);
  const std::size_t bwd = step.phase_starts[1].second, opt = step.phase_starts[2].second;
  for (const char* op : {"layers[1].attn.sdpa_backward", "layers[1].attn.grad_k_rope", "layers[1].attn.grad_kv_cat",
                         "layers[1].attn.kv_b_proj.grad_weight", "layers[1].attn.kv_a_layernorm.grad_weight",
                         "layers[1].attn.q_proj.grad_input", "layers[1].moe.shared_experts.down_proj.grad_weight",
                         "layers[1].moe.router.grad_scale", "layers[1].moe.gate.grad_weight",
                         "layers[1].moe.gate.grad_weight_cast", "layers[0].mlp.gate_proj.grad_input"}) {
    EXPECT_TRUE(has_op(step.dag, bwd, opt, op)) << op;
  }
  // The shared experts' backward before the routed ones'; the router last; then the attention.
  EXPECT_LT(index_of(step.dag, bwd, opt, "layers[1].moe.shared_experts.down_proj.grad_weight"),
            index_of(step.dag, bwd, opt, "layers[1].moe.experts.grad_restore"));
  EXPECT_LT(index_of(step.dag, bwd, opt, "layers[1].moe.gate.grad_weight"),
            index_of(step.dag, bwd, opt, "layers[1].attn.o_proj.grad_weight"));
  // The router's gradients run in fp32 (the SIMT/xmma fp32 kernels, not bf16 tensor cores).
  const auto gate = index_of(step.dag, bwd, opt, "layers[1].moe.gate.grad_weight");
  ASSERT_LT(gate, opt);
  EXPECT_EQ(step.dag[static_cast<KernelDag::Vertex>(gate)].launch.ctas.front().work.tensor_flops, 0.0);
  // cuDNN's backward at the query/key head dim 192.
  const auto sdpa = index_of(step.dag, bwd, opt, "layers[1].attn.sdpa_backward");
  bool d192 = false;
  for (std::size_t v = sdpa; v < opt && step.dag[static_cast<KernelDag::Vertex>(v)].op == "layers[1].attn.sdpa_backward"; ++v) {
    d192 = d192 || step.dag[static_cast<KernelDag::Vertex>(v)].launch.name.find("64x64x192") != std::string::npos;
  }
  EXPECT_TRUE(d192);
}

TEST(TrainDeepseek, EveryParameterGetsItsGradientAndTheOptimizerStepsThemAll) {
  const auto models = models::default_kernel_models();
  const auto hw = gpusim::testing::preset("h100");
  const auto run = simulate_model(workload(kDeepseek), hw, hw::LaunchMode::kGraph, models);
  EXPECT_EQ(run.memory.gradients_bytes, run.memory.weights_bytes);
  EXPECT_EQ(run.memory.optimizer_state_bytes, 2 * run.memory.weights_bytes);
  ASSERT_EQ(run.steps.size(), 1u);
  ASSERT_EQ(run.steps.front().phase_splits.size(), 3u);
  EXPECT_GT(run.steps.front().phase_splits[2].kernel_time_us, 0.0);
}

TEST(TrainDeepseek, RefusesWhatItDoesNotLower) {
  // DeepSeek-V3: a query LoRA, interleaved RoPE and grouped sigmoid routing.
  EXPECT_EQ(expect_config_error([] { workload("model: deepseek-v3\nphase: train\nbatch: 1\nseq_len: 16\ndtype: bf16\n"); })
                .key(),
            "phase");
  EXPECT_EQ(expect_config_error([&] { workload(kDeepseek + "autocast: bf16\n"); }).key(), "autocast");
  EXPECT_EQ(expect_config_error([&] { workload(kDeepseek + "lowering: fused\n"); }).key(), "phase");
}

}  // namespace
}  // namespace gpusim::workloads
