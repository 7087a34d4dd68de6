// One forward step of a decoder-only transformer as kernels: the lowerings (what a framework
// launches for a step) and the shape of the step.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "workloads/kernel_program.h"
#include "workloads/workload.h"

namespace gpusim::workloads {

// One sequence of a serving engine's ragged step: `new_tokens` of it run against `past_tokens`
// already in its KV cache (a prefill chunk, or 1 for a decode), and whether the step samples a
// token for it (a decode, or the chunk that ends its prompt).
struct SeqSlice {
  std::int64_t new_tokens = 1, past_tokens = 0;
  bool samples = true;
  bool operator==(const SeqSlice&) const = default;
};

struct StepShape {
  StepShape() = default;
  StepShape(std::int64_t batch_, std::int64_t new_tokens_, std::int64_t past_tokens_)
      : batch(batch_), new_tokens(new_tokens_), past_tokens(past_tokens_) {}
  // A ragged step of these sequences.
  explicit StepShape(std::vector<SeqSlice> seqs_)
      : batch(static_cast<std::int64_t>(seqs_.size())), seqs(std::move(seqs_)) {}

  std::int64_t batch = 1;
  std::int64_t new_tokens = 1;   // per sequence: the prompt (prefill) or 1 (decode)
  std::int64_t past_tokens = 0;  // already in the KV cache
  // A ragged step (the fused lowering only, as continuous batching runs it): every sequence's
  // slice; `batch` is their count and the uniform fields above are unused.
  std::vector<SeqSlice> seqs;
  bool ragged() const { return !seqs.empty(); }
  // Static-shape padding a CUDA-graph engine adds to a ragged step (transformers' continuous
  // batching pads queries and keys to intervals): tokens through every kernel, keys of its
  // packed attention and lm_head rows beyond the sequences' own.
  std::int64_t pad_tokens = 0, pad_keys = 0, pad_rows = 0;
  // Tokens through the step's GEMMs, and rows of its lm_head.
  std::int64_t tokens() const;
  std::int64_t sampled() const;
};

// What a layer lowers to, by its index: layers of one kind lower to the same kernels on the same
// shapes, tensor and op names aside, and read nothing of earlier layers but the previous layer's
// output (workloads/layer_repeat.h relies on it). A MoE model's dense layers are MoeConfig's.
// A windowed layer attends fewer keys than a global one, so the two are different kinds too.
struct LayerKind {
  bool moe = false;
  bool sliding = false;
  bool operator==(const LayerKind&) const = default;
};
inline LayerKind layer_kind(const ModelConfig& m, std::int64_t i) { return {m.moe_layer(i), m.sliding_layer(i)}; }

// Hugging Face transformers 5.x in eager mode (sdpa attention, DynamicCache): every small
// kernel it launches (dtype casts of RMSNorm, RoPE's rotate_half, the KV-cache torch.cat, the
// grouped_mm MoE dispatch), as measured in validation/data/hf_models_h100.json.gz.
void lower_hf_eager_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);

// An idealized serving engine: fused QKV and gate/up projections, fused norms (with the
// residual add) and activations, fused RoPE writing into a paged KV cache in place, flash
// decoding, and a fused MoE (grouped GEMMs over the routed tokens).
void lower_fused_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);
// The fused lowering's training step: a tuned trainer's (the model compiled by TorchInductor,
// fused AdamW): Triton kernels that fuse each norm with its residual add, RoPE, SwiGLU, the loss
// and their backward, around the same cuBLAS GEMMs and cuDNN attention as eager
// (workloads/fused_train_lowering.cpp).
void lower_fused_train_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);

// The cs336_basics reference model (seed 002) as its own code launches kernels: hand-written
// RMSNorm, RoPE, attention (matmul, softmax by hand, matmul) and SwiGLU, lm_head on every
// position (workloads/cs336_lowering.cpp). Forward passes over whole sequences.
void lower_cs336_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);

// One training step of the cs336_basics model in eager PyTorch, fp32
// (workloads/cs336_train_lowering.cpp): the forward with cs336_basics' own cross_entropy,
// autograd's backward of every hand-written op, and cs336_basics' AdamW (or none), marked as the
// builder's phases "forward", "backward" and "optimizer".
void lower_cs336_train_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);

// One optimizer step of a Hugging Face causal LM in eager PyTorch (workloads/hf_train_lowering.cpp):
// the forward with the loss, autograd's backward and the optimizer, marked as the builder's
// phases "forward", "backward" and "optimizer". Llama-style decoders.
void lower_hf_train_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);

// What `generate` does around each forward call (greedy search): update the attention mask
// and positions, cast the last logits to fp32, argmax, append the token, check stopping.
void lower_hf_generate_bookkeeping(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);

// Rows per expert when `tokens` tokens each pick `top_k` of `experts` experts: by default the
// tokens * top_k pairs spread evenly over the experts near-uniform random routing hits on
// average (E (1 - (1 - k/E)^T), rounded: all of them for prefills, fewer for small decode
// batches); in proportion to `weights` (one per expert) when given.
std::vector<std::int64_t> expert_rows(std::int64_t tokens, std::int64_t top_k, std::int64_t experts,
                                      const std::vector<double>& weights);

}  // namespace gpusim::workloads
