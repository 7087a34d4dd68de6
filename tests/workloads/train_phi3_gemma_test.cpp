// Training steps of Phi-3 (fused qkv_proj and gate_up_proj: workloads/hf_train_phi3.cpp) and
// Gemma 3 (Gemma3RMSNorm, sandwich norms, GeGLU, local layers: workloads/hf_train_gemma.cpp):
// the fused projections' backward in autograd's order, Gemma's norm and GeGLU backward kernels,
// gradients as large as the weights, and what stays refused (with the key named).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "tests/support/temp_files.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/model_run.h"
#include "workloads/parameter_count.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::expect_config_error;

ModelWorkload parse(const std::string& yaml) {
  return std::get<ModelWorkload>(parse_workload(yaml, "train.yaml", {}, config_dir() / "models"));
}

hw::HardwareSpec h100() { return hw::load_hardware("h100", hw::PresetCatalog(config_dir() / "hw"), {}); }

const char* kStep = "phase: train\nbatch: 2\nseq_len: 256\ndtype: bf16\n";

// A small Phi-3 (Phi3ForCausalLM's shape: fused projections, no GQA, an untied head).
std::string phi3(const std::string& extra = "") {
  return "model:\n  name: tiny-phi3\n  layers: 2\n  d_model: 512\n  heads: 8\n  kv_heads: 8\n  d_ff: 1024\n"
         "  vocab: 4096\n  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n  fused_qkv: true\n"
         "  fused_gate_up: true\n" +
         extra + kStep;
}

// A small Gemma 3 (one KV head, a local and a global layer, a tied head).
std::string gemma3(const std::string& extra = "", const std::string& step = kStep) {
  return "model:\n  name: tiny-gemma3\n  layers: 2\n  d_model: 512\n  heads: 4\n  kv_heads: 1\n  head_dim: 128\n"
         "  d_ff: 1024\n  vocab: 4096\n  norm: rmsnorm\n  norm_eps: 1.0e-6\n  activation: geglu\n  positions: rope\n"
         "  rope_theta: 1000000\n  rope_local_theta: 10000\n  tied_embeddings: true\n  qk_norm: true\n"
         "  norm_weight_offset: true\n  sandwich_norms: true\n  embed_scale: true\n  query_scale: 128\n"
         "  sliding_window: 512\n  sliding_layers: [true, false]\n" +
         extra + step;
}

// The backward phase's vertices of one training step.
struct Backward {
  StepProgram step;
  std::size_t from = 0, to = 0;
  // The first backward vertex of `op` (`to` when absent).
  std::size_t at(const std::string& op) const {
    for (std::size_t v = from; v < to; ++v) {
      if (step.dag[static_cast<KernelDag::Vertex>(v)].op == op) return v;
    }
    return to;
  }
  std::size_t count(const std::string& op) const {
    std::size_t n = 0;
    for (std::size_t v = from; v < to; ++v) n += step.dag[static_cast<KernelDag::Vertex>(v)].op == op ? 1 : 0;
    return n;
  }
  std::size_t count_prefix(const std::string& prefix) const {
    std::size_t n = 0;
    for (std::size_t v = from; v < to; ++v) n += step.dag[static_cast<KernelDag::Vertex>(v)].op.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
  bool has_kernel(const std::string& op, const std::string& name_part) const {
    for (std::size_t v = from; v < to; ++v) {
      const auto& k = step.dag[static_cast<KernelDag::Vertex>(v)];
      if (k.op == op && k.launch.name.find(name_part) != std::string::npos) return true;
    }
    return false;
  }
};

Backward backward_of(const ModelWorkload& w) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();  // the cache keeps a reference: not a temporary
  OpLoweringCache lowering(hw, models);
  Backward b{build_step(w, "train", {w.batch, w.seq_len, 0}, lowering)};
  EXPECT_EQ(b.step.phase_starts.size(), 3u);
  b.from = b.step.phase_starts[1].second;
  b.to = b.step.phase_starts[2].second;
  return b;
}

TEST(TrainPhi3Gemma, Phi3FusedProjectionsBackwardInAutogradOrder) {
  const Backward b = backward_of(parse(phi3()));
  const std::string L = "layers[1]";
  // MLP: down_proj, the halves' products and silu_backward, the chunk's cat, then gate_up_proj's
  // weight gradient before its input gradient.
  EXPECT_LT(b.at(L + ".mlp.down_proj.grad_input"), b.at(L + ".mlp.grad_mul_act"));
  EXPECT_LT(b.at(L + ".mlp.grad_act"), b.at(L + ".mlp.grad_chunk"));
  EXPECT_LT(b.at(L + ".mlp.grad_chunk"), b.at(L + ".mlp.gate_up_proj.grad_weight"));
  EXPECT_LT(b.at(L + ".mlp.gate_up_proj.grad_weight"), b.at(L + ".mlp.gate_up_proj.grad_input"));
  EXPECT_LT(b.at(L + ".mlp.gate_up_proj.grad_input"), b.at(L + ".post_attention_norm.grad_normed"));
  EXPECT_TRUE(b.has_kernel(L + ".mlp.grad_chunk", "CatArrayBatchedCopy_vectorized"));
  // Attention: sdpa, RoPE for k then q, the pass-through slices, the transposes, each slice's
  // gradient written into a zeroed qkv gradient (three zero fills, two sums), then qkv_proj.
  EXPECT_LT(b.at(L + ".attn.sdpa_backward"), b.at(L + ".attn.rope_k.grad_mul_sin"));
  EXPECT_LT(b.at(L + ".attn.rope_k.grad_add"), b.at(L + ".attn.rope_q.grad_mul_sin"));
  EXPECT_LT(b.at(L + ".attn.rope_q.grad_add"), b.at(L + ".attn.grad_k_slices.zero"));
  EXPECT_LT(b.at(L + ".attn.grad_q_slices.add"), b.at(L + ".attn.grad_v_transpose"));
  EXPECT_LT(b.at(L + ".attn.grad_q_transpose"), b.at(L + ".attn.grad_qkv_zero"));
  EXPECT_EQ(b.count(L + ".attn.grad_qkv_zero"), 3u);
  EXPECT_EQ(b.count(L + ".attn.grad_qkv_slice"), 3u);
  EXPECT_EQ(b.count(L + ".attn.grad_qkv_sum"), 2u);
  EXPECT_LT(b.at(L + ".attn.grad_qkv_sum"), b.at(L + ".attn.qkv_proj.grad_weight"));
  EXPECT_LT(b.at(L + ".attn.qkv_proj.grad_weight"), b.at(L + ".attn.qkv_proj.grad_input"));
  EXPECT_LT(b.at(L + ".attn.qkv_proj.grad_input"), b.at(L + ".input_norm.grad_normed"));
  // No separate projections' gradients; the last layer before the first.
  EXPECT_EQ(b.count_prefix(L + ".attn.q_proj"), 0u);
  EXPECT_EQ(b.count_prefix(L + ".mlp.gate_proj"), 0u);
  EXPECT_LT(b.at("layers[1].attn.qkv_proj.grad_input"), b.at("layers[0].mlp.down_proj.grad_weight"));
  // A full rotary slice is q itself: no copy of it; the empty pass-through slice's zeros added.
  EXPECT_EQ(b.count(L + ".attn.grad_q_slices.copy"), 0u);
  EXPECT_EQ(b.count(L + ".attn.grad_q_slices.zero"), 1u);
  // Partial rotary: both slices' gradients written into zeroed full-size tensors.
  const Backward partial = backward_of(parse(phi3("  rotary_fraction: 0.5\n")));
  EXPECT_EQ(partial.count(L + ".attn.grad_q_slices.copy"), 2u);
  EXPECT_EQ(partial.count(L + ".attn.grad_q_slices.zero"), 2u);
}

TEST(TrainPhi3Gemma, GemmaNormAndGegluBackwardKernels) {
  const Backward b = backward_of(parse(gemma3()));
  const std::string L = "layers[1]";
  // Gemma3RMSNorm's backward: the gradient to fp32, the (1 + weight) product's two gradients,
  // the weight's column sum cast back to the weight's type (weight.float()'s backward), then the
  // fp32 chain and the cast to bf16. The four norms of a layer and the q/k norms each.
  for (const std::string norm : {".input_norm", ".post_attention_norm", ".pre_feedforward_norm",
                                 ".post_feedforward_norm", ".attn.q_norm", ".attn.k_norm"}) {
    EXPECT_LT(b.at(L + norm + ".grad_to_fp32"), b.at(L + norm + ".grad_weight_mul")) << norm;
    EXPECT_LT(b.at(L + norm + ".grad_weight"), b.at(L + norm + ".grad_weight_cast")) << norm;
    EXPECT_LT(b.at(L + norm + ".grad_weight_cast"), b.at(L + norm + ".grad_scale")) << norm;
    EXPECT_LT(b.at(L + norm + ".grad_pow"), b.at(L + norm + ".grad_input")) << norm;
    EXPECT_EQ(b.count(L + norm + ".grad_normed_cast"), 0u) << norm;  // LlamaRMSNorm's cast, not Gemma's
  }
  // The sandwich: the MLP's output norm first, the attention's output norm before o_proj.
  EXPECT_LT(b.at(L + ".post_feedforward_norm.grad_input"), b.at(L + ".mlp.down_proj.grad_weight"));
  EXPECT_LT(b.at(L + ".mlp.gate_proj.grad_input"), b.at(L + ".pre_feedforward_norm.grad_to_fp32"));
  EXPECT_LT(b.at(L + ".post_attention_norm.grad_input"), b.at(L + ".attn.o_proj.grad_weight"));
  // GeGLU: gelu_backward (tanh) on the gate between up_proj's and gate_proj's gradients.
  EXPECT_TRUE(b.has_kernel(L + ".mlp.grad_act", "GeluBackwardCUDAKernelImpl"));
  EXPECT_LT(b.at(L + ".mlp.up_proj.grad_input"), b.at(L + ".mlp.grad_act"));
  EXPECT_LT(b.at(L + ".mlp.grad_act"), b.at(L + ".mlp.gate_proj.grad_weight"));
  EXPECT_EQ(b.count_prefix(L + ".mlp.grad_act"), 1u);
  // The q/k norms after RoPE's backward; one KV head: no transpose copies of k and v.
  EXPECT_LT(b.at(L + ".attn.rope_q.grad_add"), b.at(L + ".attn.k_norm.grad_to_fp32"));
  EXPECT_EQ(b.count(L + ".attn.grad_k_transpose") + b.count(L + ".attn.grad_v_transpose"), 0u);
  EXPECT_EQ(b.count(L + ".attn.grad_q_transpose"), 1u);
  // The embedding scale's backward before the embedding's, then the tied head's sum.
  EXPECT_LT(b.at("embed_scale.grad"), b.at("embed_tokens.grad_weight"));
  EXPECT_EQ(b.step.dag[static_cast<KernelDag::Vertex>(b.to - 1)].op, "embed_tokens.grad_accumulate");
}

TEST(TrainPhi3Gemma, GradientsAsLargeAsTheWeights) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  for (const std::string& yaml : {phi3(), phi3("  rotary_fraction: 0.75\n"), gemma3()}) {
    const ModelWorkload w = parse(yaml);
    const auto r = simulate_model(w, hw, hw::LaunchMode::kGraph, models);
    SCOPED_TRACE(w.model.name);
    EXPECT_EQ(r.memory.weights_bytes, 2 * parameter_count(w.model));
    EXPECT_EQ(r.memory.gradients_bytes, r.memory.weights_bytes);
    EXPECT_EQ(r.memory.optimizer_state_bytes, 2 * r.memory.weights_bytes);
    ASSERT_EQ(r.steps.size(), 1u);
    EXPECT_GT(r.steps.front().phase_splits[1].kernel_time_us, r.steps.front().phase_splits[0].kernel_time_us);
  }
  // Checkpointing and accumulation run through the same layer backward.
  for (const std::string extra : {"checkpointing: full\n", "gradient_accumulation_steps: 2\n"}) {
    const auto r = simulate_model(parse(gemma3("", std::string(kStep) + extra)), hw, hw::LaunchMode::kGraph, models);
    EXPECT_EQ(r.memory.gradients_bytes, r.memory.weights_bytes) << extra;
    const auto p = simulate_model(parse(phi3() + extra), hw, hw::LaunchMode::kGraph, models);
    EXPECT_EQ(p.memory.gradients_bytes, p.memory.weights_bytes) << extra;
  }
}

TEST(TrainPhi3Gemma, StillRefusedByKey) {
  // A window shorter than the sequence (the masked attention's backward is not lowered).
  EXPECT_EQ(expect_config_error([] { parse(gemma3("", "phase: train\nbatch: 1\nseq_len: 1024\ndtype: bf16\n")); }).key(),
            "phase");
  // Mixed precision for these families.
  EXPECT_EQ(expect_config_error([] {
              parse(gemma3("", "phase: train\nbatch: 1\nseq_len: 256\ndtype: fp32\nautocast: bf16\n"));
            }).key(),
            "autocast");
  EXPECT_EQ(expect_config_error([] { parse(std::string(phi3()).replace(phi3().find("dtype: bf16"), 11, "dtype: fp32") + "autocast: bf16\n"); })
                .key(),
            "autocast");
  // Gemma 2's softcaps; one fused projection without the other; Gemma's norms in part.
  EXPECT_EQ(expect_config_error([] {
              parse("model: gemma2-2b\nphase: train\nbatch: 1\nseq_len: 256\ndtype: bf16\n");
            }).key(),
            "phase");
  EXPECT_EQ(expect_config_error([] {
              std::string y = phi3();
              y.erase(y.find("  fused_gate_up: true\n"), 22);
              parse(y);
            }).key(),
            "phase");
  EXPECT_EQ(expect_config_error([] {
              std::string y = gemma3();
              y.erase(y.find("  embed_scale: true\n"), 20);
              parse(y);
            }).key(),
            "phase");
}

}  // namespace
}  // namespace gpusim::workloads
