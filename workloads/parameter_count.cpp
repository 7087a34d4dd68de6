#include "workloads/parameter_count.h"

namespace gpusim::workloads {
namespace {

std::int64_t norm_parameters(const ModelConfig& m) {
  return m.norm == Norm::kLayerNorm ? 2 * m.d_model : m.d_model;  // LayerNorm has a bias
}

// Multi-head latent attention (DeepseekV2/V3Attention): q_proj, or q_a_proj + q_a_layernorm +
// q_b_proj; kv_a_proj_with_mqa (d -> kv_lora_rank + qk_rope_head_dim), kv_a_layernorm,
// kv_b_proj (kv_lora_rank -> heads * (qk_nope_head_dim + v_head_dim)), o_proj; no biases.
std::int64_t mla_parameters(const ModelConfig& m, const MlaConfig& mla) {
  const std::int64_t q_out = m.heads * mla.qk_head_dim();
  std::int64_t p = mla.q_lora_rank > 0
                       ? m.d_model * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * q_out
                       : m.d_model * q_out;
  p += m.d_model * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank;
  p += mla.kv_lora_rank * m.heads * (mla.qk_nope_head_dim + mla.v_head_dim);
  p += m.heads * mla.v_head_dim * m.d_model;
  return p;
}

// q, k, v and output projections (one fused qkv_proj has the same weights), q/k norms.
std::int64_t attention_parameters(const ModelConfig& m) {
  if (m.mla) return mla_parameters(m, *m.mla);
  const std::int64_t q = m.heads * m.head_dim;
  const std::int64_t kv = m.kv_heads * m.head_dim;
  std::int64_t p = m.d_model * (q + 2 * kv) + q * m.d_model;
  if (m.qkv_bias) p += q + 2 * kv;
  if (m.attn_out_bias) p += m.d_model;
  if (m.qk_norm) p += 2 * m.head_dim;  // q_norm and k_norm: one RMSNorm weight over head_dim each
  return p;
}

// One MLP of hidden width `d_ff`: up and down projections, plus a gate for SwiGLU and GeGLU (a
// fused gate_up_proj has the same weights).
std::int64_t mlp_parameters(const ModelConfig& m, std::int64_t d_ff) {
  const bool gated = m.activation != Activation::kGelu;
  std::int64_t p = (gated ? 3 : 2) * m.d_model * d_ff;
  if (m.mlp_bias) p += (gated ? 2 : 1) * d_ff + m.d_model;
  return p;
}

std::int64_t moe_parameters(const ModelConfig& m, const MoeConfig& moe) {
  // A bias-free linear to expert logits; DeepSeek-V3's e_score_correction_bias is a buffer.
  const std::int64_t router = moe.experts * m.d_model;
  return router + moe.experts * mlp_parameters(m, moe.expert_d_ff) +
         moe.shared_experts * mlp_parameters(m, moe.shared_expert_d_ff);
}

}  // namespace

std::int64_t parameter_count(const ModelConfig& m) {
  std::int64_t total = m.vocab * m.d_model;
  if (m.max_positions) total += *m.max_positions * m.d_model;

  // Two norms per layer (before attention and before the MLP); Gemma's sandwich adds one after
  // each.
  const std::int64_t norms = (m.sandwich_norms ? 4 : 2) * norm_parameters(m);
  total += m.layers * (norms + attention_parameters(m));
  const std::int64_t dense_mlp = mlp_parameters(m, m.d_ff);
  const std::int64_t moe_mlp = m.moe ? moe_parameters(m, *m.moe) : 0;
  for (std::int64_t i = 0; i < m.layers; ++i) total += m.moe_layer(i) ? moe_mlp : dense_mlp;

  total += norm_parameters(m);  // final norm
  if (!m.tied_embeddings) total += m.vocab * m.d_model;
  return total;
}

std::int64_t stage_parameter_count(const ModelConfig& m, bool first, bool last) {
  const std::int64_t embedding = m.vocab * m.d_model + (m.max_positions ? *m.max_positions * m.d_model : 0);
  std::int64_t total = parameter_count(m);
  if (!first) total -= embedding;
  if (!last) total -= norm_parameters(m) + (m.tied_embeddings ? 0 : m.vocab * m.d_model);
  // A tied head on a later stage than the embedding keeps its own copy of the table (Megatron).
  if (last && !first && m.tied_embeddings) total += m.vocab * m.d_model;
  return total;
}

std::int64_t active_parameter_count(const ModelConfig& m) {
  std::int64_t total = parameter_count(m);
  if (!m.moe) return total;
  const std::int64_t idle = (m.moe->experts - m.moe->top_k) * mlp_parameters(m, m.moe->expert_d_ff);
  for (std::int64_t i = 0; i < m.layers; ++i) {
    if (m.moe_layer(i)) total -= idle;
  }
  return total;
}

}  // namespace gpusim::workloads
