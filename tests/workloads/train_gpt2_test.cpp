// GPT-2 training steps (phase: train, workloads/hf_train_gpt2.cpp): dropout in the forward, each
// block's backward in autograd's order (LayerNorm backward, Conv1D weight then input then bias
// gradients, gelu_new's chain), parameters and gradients equal to the weights, checkpointing,
// memory, and what stays refused.
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

const char* kGpt2 = "model: gpt2-small\nphase: train\nbatch: 2\nseq_len: 128\ndtype: bf16\n";

std::vector<std::string> ops_of(const KernelDag& dag, std::size_t from, std::size_t to) {
  std::vector<std::string> ops;
  for (std::size_t v = from; v < to; ++v) {
    const std::string& op = dag[static_cast<KernelDag::Vertex>(v)].op;
    if (ops.empty() || ops.back() != op) ops.push_back(op);
  }
  return ops;
}

std::size_t kernels_named(const KernelDag& dag, std::size_t from, std::size_t to, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t v = from; v < to; ++v) {
    if (dag[static_cast<KernelDag::Vertex>(v)].launch.name.find(part) != std::string::npos) ++n;
  }
  return n;
}

TEST(Gpt2TrainLowering, ForwardDropoutAndBlockBackwardInAutogradOrder) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(kGpt2), "train", {2, 128, 0}, lowering);
  ASSERT_EQ(step.phase_starts.size(), 3u);
  const std::size_t f0 = step.phase_starts[0].second, b0 = step.phase_starts[1].second,
                    o0 = step.phase_starts[2].second;
  // Dropout after the embeddings and after each c_proj (12 blocks), cuDNN's Philox unpack per block.
  EXPECT_EQ(kernels_named(step.dag, f0, b0, "fused_dropout_kernel_vec"), 25u);
  EXPECT_EQ(kernels_named(step.dag, f0, b0, "philox::unpack_cudnn"), 12u);
  EXPECT_EQ(kernels_named(step.dag, b0, o0, "masked_scale_kernel"), 25u);
  // LayerNorm backward: the input's gradient and gamma/beta's, for 25 norms.
  EXPECT_EQ(kernels_named(step.dag, b0, o0, "layer_norm_grad_input_kernel_vectorized"), 25u);
  EXPECT_EQ(kernels_named(step.dag, b0, o0, "GammaBetaBackwardCUDAKernelTemplate"), 25u);
  EXPECT_EQ(kernels_named(step.dag, b0, o0, "tanh_backward"), 12u);
  const auto bwd = ops_of(step.dag, b0, o0);
  const auto at = [&](const std::string& op) {
    const auto it = std::find(bwd.begin(), bwd.end(), op);
    EXPECT_NE(it, bwd.end()) << op;
    return it - bwd.begin();
  };
  const std::vector<std::string> block{
      "final_norm.backward",
      "layers[11].mlp.dropout_backward",
      "layers[11].mlp.c_proj.grad_weight",
      "layers[11].mlp.c_proj.grad_input",
      "layers[11].mlp.c_proj.grad_bias",
      "layers[11].mlp.gelu.grad_half",
      "layers[11].mlp.gelu.grad_tanh",
      "layers[11].mlp.c_fc.grad_weight",
      "layers[11].mlp.c_fc.grad_input",
      "layers[11].post_attention_norm.backward",
      "layers[11].grad_residual_mlp",
      "layers[11].attn.resid_dropout_backward",
      "layers[11].attn.c_proj.grad_weight",
      "layers[11].attn.sdpa_backward",
      "layers[11].attn.grad_k_copy",
      "layers[11].attn.grad_split",
      "layers[11].attn.c_attn.grad_weight",
      "layers[11].attn.c_attn.grad_input",
      "layers[11].input_norm.backward",
      "layers[11].grad_residual_attn",
      "layers[0].input_norm.backward",
      "embed_dropout_backward",
      "embed_positions.grad_sum",
      "embed_positions.grad_weight",
      "embed_tokens.grad_weight",
  };
  for (std::size_t i = 1; i < block.size(); ++i) EXPECT_LT(at(block[i - 1]), at(block[i])) << block[i];
  EXPECT_EQ(bwd.back(), "embed_tokens.grad_accumulate");  // the tied head joins wte's gradient
}

TEST(Gpt2TrainLowering, ParametersGradientsAndMemory) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  const auto run = simulate_model(workload(kGpt2), hw, hw::LaunchMode::kGraph, models);
  const auto& m = run.memory;
  EXPECT_EQ(m.weights_bytes, 2 * 124439808);  // transformers' count for gpt2, bf16
  EXPECT_EQ(m.gradients_bytes, m.weights_bytes);
  EXPECT_EQ(m.optimizer_state_bytes, 2 * m.weights_bytes);
  EXPECT_GT(m.activation_peak_bytes, m.gradients_bytes);
  EXPECT_LT(m.activation_peak_bytes, 8 * m.weights_bytes);
  // The foreach AdamW covers the 148 parameter tensors (wte, wpe, 12 per block, ln_f's two):
  // their elements are the weights' (a launch's chunks cover 65536 elements each).
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(kGpt2), "train", {2, 128, 0}, lowering);
  const auto opt = ops_of(step.dag, step.phase_starts[2].second, step.dag.size());
  EXPECT_EQ(opt.size(), 8u);
  std::int64_t written = 0;
  for (std::size_t v = step.phase_starts[2].second; v < step.dag.size(); ++v) {
    const auto& k = step.dag[static_cast<KernelDag::Vertex>(v)];
    if (k.op != "optimizer.weight_decay") continue;
    for (const auto& t : k.launch.writes) written += t.bytes;
  }
  EXPECT_EQ(written, m.weights_bytes);
}

TEST(Gpt2TrainLowering, CheckpointingRecomputesEachBlockWithoutTheCache) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram plain = build_step(workload(kGpt2), "train", {2, 128, 0}, lowering);
  const StepProgram ckpt =
      build_step(workload(std::string(kGpt2) + "checkpointing: full\n"), "train", {2, 128, 0}, lowering);
  const auto fwd = ops_of(ckpt.dag, ckpt.phase_starts[0].second, ckpt.phase_starts[1].second);
  const auto bwd = ops_of(ckpt.dag, ckpt.phase_starts[1].second, ckpt.phase_starts[2].second);
  // use_cache=False: no cache cat in the forward, no copies back in the backward.
  EXPECT_EQ(std::count(fwd.begin(), fwd.end(), "layers[0].attn.k_cat"), 0);
  EXPECT_EQ(std::count(bwd.begin(), bwd.end(), "layers[0].attn.grad_k_copy"), 0);
  const auto at = [&](const std::string& op) { return std::find(bwd.begin(), bwd.end(), op) - bwd.begin(); };
  EXPECT_LT(at("layers[5].attn.c_attn"), at("layers[5].attn.sdpa_backward"));
  EXPECT_LT(at("layers[5].mlp.dropout"), at("layers[5].mlp.dropout_backward"));
  // At 8 x 512 tokens the saved activations dominate the peak (at 2 x 128 the gradients and the
  // optimizer's temporaries do): checkpointing keeps only each block's input.
  const std::string big = "model: gpt2-small\nphase: train\nbatch: 8\nseq_len: 512\ndtype: bf16\n";
  const auto plain_run = simulate_model(workload(big), hw, hw::LaunchMode::kGraph, models);
  const auto ckpt_run =
      simulate_model(workload(big + "checkpointing: full\n"), hw, hw::LaunchMode::kGraph, models);
  EXPECT_LT(ckpt_run.memory.activation_peak_bytes, plain_run.memory.activation_peak_bytes);
  EXPECT_GT(ckpt_run.steps.front().kernel_time_us, plain_run.steps.front().kernel_time_us);
}

TEST(Gpt2TrainLowering, StillRefusesWhatIsNotLowered) {
  // Multi-head latent attention, LayerNorm without GPT-2's structure, autocast.
  EXPECT_EQ(expect_config_error([] {
              workload("model: deepseek-v3\nphase: train\nbatch: 1\nseq_len: 16\ndtype: bf16\n");
            }).key(),
            "phase");
  EXPECT_EQ(expect_config_error([] {
              workload("model:\n  name: ln-llama\n  layers: 1\n  d_model: 256\n  heads: 4\n  d_ff: 512\n"
                       "  vocab: 1000\n  norm: layernorm\n  activation: swiglu\n  positions: rope\n"
                       "phase: train\nbatch: 1\nseq_len: 16\ndtype: bf16\n");
            }).key(),
            "phase");
  EXPECT_EQ(expect_config_error([] { workload(std::string(kGpt2) + "autocast: bf16\n"); }).key(), "autocast");
}

}  // namespace
}  // namespace gpusim::workloads
