// fp32 training steps without autocast (dtype: fp32): cuBLAS's SIMT GEMMs, SDPA's math backend
// forward and autograd's backward of it (no cuDNN), and the families still refused in fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "tests/support/model_workloads.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::expect_config_error;

ModelWorkload workload(const std::string& yaml) { return gpusim::testing::model_workload(yaml); }

// A small llama-style model (GQA: 8 query heads, 2 KV heads) trained in fp32 at batch 2 x 256.
const char* kLlamaFp32 =
    "model:\n  name: tiny-llama\n  layers: 2\n  d_model: 512\n  heads: 8\n  kv_heads: 2\n  d_ff: 1024\n"
    "  vocab: 4096\n  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n  tied_embeddings: true\n"
    "phase: train\nbatch: 2\nseq_len: 256\ndtype: fp32\n";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct PhaseKernels {
  std::vector<std::string> names, ops;
  std::size_t count(const std::string& part) const {
    return static_cast<std::size_t>(
        std::count_if(names.begin(), names.end(), [&](const std::string& n) { return contains(n, part); }));
  }
};

PhaseKernels kernels_of(const StepProgram& step, std::size_t from, std::size_t to) {
  PhaseKernels k;
  for (std::size_t v = from; v < to; ++v) {
    const auto& vertex = step.dag[static_cast<KernelDag::Vertex>(v)];
    k.names.push_back(vertex.launch.name);
    k.ops.push_back(vertex.op);
  }
  return k;
}

TEST(TrainFp32, LowersWithSimtGemmsAndTheMathAttentionBackward) {
  const auto models = models::default_kernel_models();
  const auto hw = gpusim::testing::preset("h100");
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(kLlamaFp32), "train", {2, 256, 0}, lowering);
  ASSERT_EQ(step.phase_starts.size(), 3u);
  const auto fwd = kernels_of(step, step.phase_starts[0].second, step.phase_starts[1].second);
  const auto bwd = kernels_of(step, step.phase_starts[1].second, step.phase_starts[2].second);
  // Every GEMM is an fp32 SIMT kernel (no TF32, no tensor cores): CUTLASS's simt_sgemm or
  // cuBLAS's sm80_xmma ..._ffma kernels; no cuDNN attention anywhere.
  for (const auto* k : {&fwd, &bwd}) {
    for (std::size_t i = 0; i < k->names.size(); ++i) {
      const std::string& n = k->names[i];
      EXPECT_FALSE(contains(n, "cudnn")) << k->ops[i] << ": " << n;
      EXPECT_FALSE(contains(n, "nvjet") || contains(n, "tensor16x8") || contains(n, "tensorop")) << k->ops[i] << ": " << n;
      if (contains(n, "gemm")) {
        EXPECT_TRUE(contains(n, "simt_sgemm") || contains(n, "_ffma_")) << k->ops[i] << ": " << n;
      }
    }
  }
  // The forward: per layer the causal mask built (tril), q @ k^T and p @ v as batched SIMT
  // GEMMs, the softmax and _safe_softmax's isneginf and where.
  EXPECT_EQ(fwd.count("triu_tril_kernel<bool"), 2u);
  EXPECT_EQ(fwd.count("softmax_warp_forward<float"), 2u);
  EXPECT_EQ(fwd.count("isneginf_kernel_impl"), 2u);
  EXPECT_EQ(fwd.count("ReduceOp<bool"), 2u);
  for (std::size_t i = 0; i < fwd.ops.size(); ++i) {
    const std::string& op = fwd.ops[i];
    if (op.size() > 3 && (op.compare(op.size() - 3, 3, ".qk") == 0 || op.compare(op.size() - 3, 3, ".pv") == 0)) {
      EXPECT_TRUE(contains(fwd.names[i], "sm80_xmma_gemm_f32f32_f32f32_f32")) << op << ": " << fwd.names[i];
    }
  }
  EXPECT_EQ(std::count(fwd.ops.begin(), fwd.ops.end(), "layers[0].attn.qk"), 1);
  EXPECT_EQ(std::count(fwd.ops.begin(), fwd.ops.end(), "layers[0].attn.pv"), 1);
  // The backward: the softmax's backward (grad * out, then softmax_warp_backward) and bmm's four
  // gradients in each layer, the group sums of repeat_interleave's backward (K's and V's).
  EXPECT_EQ(bwd.count("softmax_warp_backward<float"), 2u);
  const auto at = [&](const std::string& op) {
    return std::find(bwd.ops.begin(), bwd.ops.end(), op) - bwd.ops.begin();
  };
  for (const char* op : {"layers[1].attn.grad_pv_v", "layers[1].attn.grad_pv_probs", "layers[1].attn.grad_softmax_mul",
                         "layers[1].attn.grad_softmax", "layers[1].attn.grad_qk_k", "layers[1].attn.grad_qk_q",
                         "layers[1].attn.grad_repeat_k", "layers[1].attn.grad_repeat_v"}) {
    EXPECT_LT(at(op), static_cast<std::ptrdiff_t>(bwd.ops.size())) << op;
  }
  EXPECT_LT(at("layers[1].attn.grad_pv_probs"), at("layers[1].attn.grad_softmax"));
  EXPECT_LT(at("layers[1].attn.grad_softmax"), at("layers[1].attn.grad_qk_k"));
  EXPECT_LT(at("layers[1].attn.grad_qk_q"), at("layers[1].attn.q_proj.grad_weight"));
  EXPECT_LT(at("layers[1].attn.o_proj.grad_input"), at("layers[1].attn.grad_pv_v"));
  // No casts: the logits are fp32 already (logits.float() launches nothing).
  EXPECT_EQ(std::count(fwd.ops.begin(), fwd.ops.end(), "loss.logits_to_fp32"), 0);
  EXPECT_EQ(std::count(bwd.ops.begin(), bwd.ops.end(), "loss.grad_logits"), 0);
}

TEST(TrainFp32, KeepsTheProbabilitiesForTheBackward) {
  const auto models = models::default_kernel_models();
  const auto hw = gpusim::testing::preset("h100");
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(kLlamaFp32), "train", {2, 256, 0}, lowering);
  // Each layer's B*H x S x S fp32 probabilities (2 MiB here), written by the forward's where,
  // are read by its backward (v's gradient and softmax's backward): alive across the phases.
  const std::int64_t probs = 2LL * 8 * 256 * 256 * 4;
  const std::size_t bwd = step.phase_starts[1].second, opt = step.phase_starts[2].second;
  std::size_t readers = 0;
  for (std::size_t v = bwd; v < opt; ++v) {
    for (const auto& r : step.dag[static_cast<KernelDag::Vertex>(v)].launch.reads) {
      if (r.tensor.rfind("layers[0].attn.probs#", 0) == 0) {
        EXPECT_EQ(r.bytes, probs);
        ++readers;
      }
    }
  }
  EXPECT_EQ(readers, 3u);  // the bmm for v's gradient, softmax's backward and its grad * out
  std::string bf16 = kLlamaFp32;
  bf16.replace(bf16.find("dtype: fp32"), 11, "dtype: bf16");
  const auto f = simulate_model(workload(kLlamaFp32), hw, hw::LaunchMode::kGraph, models);
  const auto b = simulate_model(workload(bf16), hw, hw::LaunchMode::kGraph, models);
  // Weights, gradients and both AdamW moments in fp32: twice bf16's bytes.
  EXPECT_EQ(f.memory.weights_bytes, 2 * b.memory.weights_bytes);
  EXPECT_EQ(f.memory.optimizer_state_bytes, 2 * f.memory.weights_bytes);
  EXPECT_GT(f.memory.activation_peak_bytes, b.memory.activation_peak_bytes + 2 * probs);
  // The backward outlasts the forward, and fp32's SIMT GEMMs are slower than bf16's tensor cores.
  const auto& s = f.steps.front().phase_splits;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_GT(s[1].kernel_time_us, 1.5 * s[0].kernel_time_us);
  EXPECT_GT(f.steps.front().kernel_time_us, 1.5 * b.steps.front().kernel_time_us);
}

TEST(TrainFp32, RefusesFamiliesItDoesNotLowerInFp32ByKey) {
  const auto refused = [](const std::string& yaml) {
    const ConfigError e = expect_config_error([&] { workload(yaml); });
    EXPECT_EQ(e.key(), "dtype") << yaml;
    EXPECT_TRUE(contains(e.what(), "phase train in fp32")) << e.what();
    EXPECT_TRUE(contains(e.what(), "dense llama-style")) << e.what();
    return std::string(e.what());
  };
  const std::string train = "phase: train\nbatch: 1\nseq_len: 64\ndtype: fp32\n";
  EXPECT_TRUE(contains(refused("model: mixtral-8x7b\n" + train), "mixture-of-experts"));
  EXPECT_TRUE(contains(refused("model: qwen3-30b-a3b\n" + train), "mixture-of-experts"));
  EXPECT_TRUE(contains(refused("model: gpt2-small\n" + train), "GPT-2"));
  EXPECT_TRUE(contains(refused("model: phi3-mini-4k\n" + train), "Phi-3"));
  EXPECT_TRUE(contains(refused("model: gemma3-1b\n" + train), "Gemma"));
  // Multi-head attention in fp32 takes PyTorch's memory-efficient kernels, not the math backend.
  std::string mha = kLlamaFp32;
  mha.replace(mha.find("kv_heads: 2"), 11, "kv_heads: 8");
  EXPECT_TRUE(contains(refused(mha), "memory-efficient"));
  // tf32 matmuls are not lowered for training; fp32 under autocast still is.
  std::string tf32 = kLlamaFp32;
  tf32.replace(tf32.find("dtype: fp32"), 11, "dtype: tf32");
  EXPECT_EQ(expect_config_error([&] { workload(tf32); }).key(), "dtype");
  EXPECT_NO_THROW(workload(std::string(kLlamaFp32) + "autocast: bf16\n"));
  EXPECT_NO_THROW(workload("model: llama3-8b\n" + train));
  EXPECT_NO_THROW(workload("model: mistral-7b-v0.1\n" + train));
}

}  // namespace
}  // namespace gpusim::workloads
