// Training steps of mixture-of-experts models (phase: train, transformers 5's grouped_mm experts):
// the MoE block's backward kernels in autograd's order, the expert GEMMs' gradient FLOPs, the
// routing's saved tensors in the memory peak, and what stays refused (with the key named).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::expect_config_error;

ModelWorkload workload(const std::string& yaml) { return gpusim::testing::model_workload(yaml); }

hw::HardwareSpec h100() { return gpusim::testing::preset("h100"); }

// A small Qwen3-MoE-like model: 8 experts, top 2, layer 0 dense (mlp_only_layers), 2 x 256 tokens
// (128 rows an expert under the even split: whole tiles, so FLOPs compare exactly).
std::string moe_yaml(int top_k = 2, bool weights_in_dtype = true) {
  return "model:\n  name: tiny-moe\n  layers: 2\n  d_model: 512\n  heads: 8\n  kv_heads: 2\n  head_dim: 64\n"
         "  d_ff: 1024\n  vocab: 4096\n  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n  qk_norm: true\n"
         "  moe:\n    experts: 8\n    top_k: " + std::to_string(top_k) +
         "\n    expert_d_ff: 256\n    norm_topk_prob: true\n    dense_list: [0]\n    weights_in_dtype: " +
         (weights_in_dtype ? "true" : "false") + "\nphase: train\nbatch: 2\nseq_len: 256\ndtype: bf16\n";
}

struct Ops {
  std::vector<std::string> ops;
  std::size_t at(const std::string& op) const {
    return static_cast<std::size_t>(std::find(ops.begin(), ops.end(), op) - ops.begin());
  }
  bool has(const std::string& op) const { return at(op) < ops.size(); }
};

Ops phase_ops(const StepProgram& step, std::size_t phase) {
  Ops o;
  const std::size_t from = step.phase_starts[phase].second;
  const std::size_t to = phase + 1 < step.phase_starts.size() ? step.phase_starts[phase + 1].second : step.dag.size();
  for (std::size_t v = from; v < to; ++v) {
    const std::string& op = step.dag[static_cast<KernelDag::Vertex>(v)].op;
    if (o.ops.empty() || o.ops.back() != op) o.ops.push_back(op);
  }
  return o;
}

double tensor_flops(const StepProgram& step, const std::string& op) {
  double f = 0;
  for (std::size_t v = 0; v < step.dag.size(); ++v) {
    const auto& k = step.dag[static_cast<KernelDag::Vertex>(v)];
    if (k.op == op) f += hw::totals(k.launch).tensor_flops;
  }
  return f;
}

TEST(TrainMoeLowering, BackwardKernelsInAutogradOrder) {
  for (const bool cast : {true, false}) {  // Qwen3-MoE's bf16 weighting, Mixtral's fp32 one
    const auto models = models::default_kernel_models();
    const auto hw = h100();
    OpLoweringCache lowering(hw, models);
    const StepProgram step = build_step(workload(moe_yaml(2, cast)), "train", {2, 256, 0}, lowering);
    ASSERT_EQ(step.phase_starts.size(), 3u);
    const Ops bwd = phase_ops(step, 1);
    const std::string M = "layers[1].moe.", X = M + "experts.";
    const std::vector<std::string> order{
        X + "grad_sum_expand", X + "grad_restore", X + "grad_weights_mul", X + "grad_proj_mul", X + "grad_weights",
        X + "grad_down_mask_clone", X + "grad_down_mask", X + "down_proj.grad_weight", X + "down_proj.grad_input",
        X + "grad_mul_act", X + "grad_mul_up", X + "grad_act", X + "grad_gate_up_cat", X + "grad_gate_up_mask",
        X + "gate_up_proj.grad_weight", X + "gate_up_proj.grad_input", X + "grad_input_mask",
        X + "grad_weight_gather", X + "grad_gather", M + "router.grad_div_sum", M + "router.grad_topk",
        M + "router.grad_softmax", M + "gate.grad_weight", M + "gate.grad_input", M + "grad_input_sum",
        "layers[1].post_attention_norm.grad_weight", "layers[0].mlp.down_proj.grad_weight"};
    for (std::size_t i = 0; i < order.size(); ++i) {
      ASSERT_TRUE(bwd.has(order[i])) << order[i];
      if (i > 0) {
        EXPECT_LT(bwd.at(order[i - 1]), bwd.at(order[i])) << order[i - 1] << " before " << order[i];
      }
    }
    // Mixtral's fp32 weighting: the sum's gradient cast up first, the projection's cast back.
    EXPECT_EQ(bwd.has(X + "grad_to_act_cast"), !cast);
    EXPECT_EQ(bwd.has(X + "grad_proj_cast"), !cast);
    EXPECT_EQ(bwd.has(M + "router.grad_to_fp32"), cast);
    // The dense layer keeps its MLP backward; the sparse one has none.
    EXPECT_FALSE(bwd.has("layers[1].mlp.down_proj.grad_weight"));
    // The optimizer steps the stacked expert weights and the router.
    const auto fwd = phase_ops(step, 0);
    EXPECT_TRUE(fwd.has(M + "router.clone"));  // the in-place normalization's clone
  }
}

TEST(TrainMoeLowering, ExpertGradientFlopsAreTwiceTheForwards) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(moe_yaml()), "train", {2, 256, 0}, lowering);
  const std::string X = "layers[1].moe.experts.";
  for (const std::string p : {"gate_up_proj", "down_proj"}) {
    const double fwd = tensor_flops(step, X + p);
    ASSERT_GT(fwd, 0) << p;
    const double dw = tensor_flops(step, X + p + ".grad_weight"), dx = tensor_flops(step, X + p + ".grad_input");
    EXPECT_DOUBLE_EQ(dw, fwd) << p;
    EXPECT_DOUBLE_EQ(dx, fwd) << p;
    EXPECT_DOUBLE_EQ(dw + dx, 2 * fwd) << p;
  }
  // 2 x tokens x top_k x d x (2 F) for gate_up.
  EXPECT_DOUBLE_EQ(tensor_flops(step, X + "gate_up_proj"), 2.0 * 512 * 2 * 512 * 512);
}

TEST(TrainMoeLowering, MemoryPeakHoldsTheRoutingsSavedTensors) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  const auto k2 = simulate_model(workload(moe_yaml(2)), hw, hw::LaunchMode::kGraph, models);
  const auto k4 = simulate_model(workload(moe_yaml(4)), hw, hw::LaunchMode::kGraph, models);
  // Two more slots a token: the saved [S, d] gathered and masked inputs, the [S, 2F] masked
  // gate_up, SwiGLU's [S, F] operands and the masked [S, d] output, all alive into the backward
  // (bf16), for 512 tokens in the one sparse layer.
  const double extra_pairs = 512.0 * 2;
  const double saved = extra_pairs * (512 + 2 * 256 + 256 + 256 + 512) * 2;
  EXPECT_GT(static_cast<double>(k4.memory.activation_peak_bytes - k2.memory.activation_peak_bytes), saved);
  EXPECT_EQ(k2.memory.gradients_bytes, k2.memory.weights_bytes);
}

TEST(TrainMoeLowering, RefusesWhatItDoesNotLowerByKey) {
  // MoE under autocast, the transformers 4.46 per-expert loop, DeepSeek-V3's MLA and router
  // (DeepSeek-V2-Lite's train: train_deepseek_test.cpp).
  EXPECT_EQ(expect_config_error([] {
              std::string y = moe_yaml();
              y.replace(y.find("dtype: bf16"), 11, "dtype: fp32\nautocast: bf16");
              workload(y);
            }).key(),
            "autocast");
  EXPECT_EQ(expect_config_error([] { workload(moe_yaml() + "framework: transformers-4.46\n"); }).key(), "moe");
  EXPECT_EQ(expect_config_error([] { workload(moe_yaml() + "moe: loop\n"); }).key(), "moe");
  EXPECT_EQ(expect_config_error([] {
              workload("model: deepseek-v3\nphase: train\nbatch: 1\nseq_len: 16\ndtype: bf16\n");
            }).key(),
            "phase");
}

TEST(TrainMoeLowering, PresetsTrain) {
  // The shipped MoE presets simulate a step end to end.
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  for (const char* preset : {"qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v2-lite"}) {
    const auto r = simulate_model(
        workload(std::string("model: ") + preset + "\nphase: train\nbatch: 1\nseq_len: 256\ndtype: bf16\n"), hw,
        hw::LaunchMode::kGraph, models);
    ASSERT_EQ(r.steps.size(), 1u) << preset;
    EXPECT_EQ(r.steps.front().phase_splits.size(), 3u) << preset;
    EXPECT_GT(r.memory.optimizer_state_bytes, 0) << preset;
  }
}

}  // namespace
}  // namespace gpusim::workloads
