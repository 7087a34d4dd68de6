// A tiny Llama-style decoder's training step on the CPU, from the functional kernels: the
// forward (embedding, per layer RMSNorm, q/k/v projections, RoPE, causal grouped-query flash
// attention, o projection, residual, RMSNorm, SwiGLU MLP, residual; final RMSNorm, untied
// head), the loss as ForCausalLMLoss computes it (labels shifted by one, the last position of
// each sequence ignored, mean over the rest) and the backward through every op, in fp32 as the
// kernels accumulate; the optimizer step is adamw.h's. reference_training.h is its independent
// double-precision counterpart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "validation/functional/tensor.h"

namespace gpusim::functional {

struct TinyLlamaConfig {
  std::int64_t vocab = 32, d_model = 16, layers = 2, heads = 2, kv_heads = 1, head_dim = 8,
               d_ff = 32;
  std::int64_t batch = 2, seq = 8;
  float norm_eps = 1e-5f;
  double rope_theta = 10000.0;
};

struct Parameter {
  std::string name;  // as synthetic_state.h names weights ("w.layers[0].attn.q_proj")
  Tensor value;      // a linear weight is [out, in]
};

// model.parameters() order: embed_tokens [V, d]; per layer q_proj, k_proj, v_proj, o_proj,
// gate_proj, up_proj, down_proj, input_norm.weight, post_attention_norm.weight; final_norm.weight;
// lm_head [V, d]. Values from synthetic_state.h.
std::vector<Parameter> tiny_llama_parameters(const TinyLlamaConfig& cfg);

// The token ids of batch x seq positions (synthetic_token) and the loss's targets: the next
// token, kIgnoreIndex at each sequence's last position. Row t = b * seq + s.
struct TrainingBatch {
  std::vector<std::int64_t> ids, targets;
};
TrainingBatch tiny_llama_batch(const TinyLlamaConfig& cfg);

// The RoPE tables [seq, head_dim] as Hugging Face's rotary embedding builds them: angle
// s * theta^(-2j / head_dim) for j < head_dim / 2, repeated for the second half.
void rope_tables(const TinyLlamaConfig& cfg, Tensor& cos, Tensor& sin);

// The loss and d loss / d parameter (shaped as the parameters, same order).
struct Gradients {
  float loss = 0;
  std::vector<Tensor> grads;
};
Gradients tiny_llama_gradients(const TinyLlamaConfig& cfg, const std::vector<Parameter>& params,
                               const TrainingBatch& batch);

}  // namespace gpusim::functional
