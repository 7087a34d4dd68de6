#include "workloads/parameter_count.h"

namespace gpusim::workloads {
namespace {

std::int64_t norm_parameters(const ModelConfig& m) {
  return m.norm == Norm::kLayerNorm ? 2 * m.d_model : m.d_model;  // LayerNorm has a bias
}

std::int64_t attention_parameters(const ModelConfig& m) {
  const std::int64_t q = m.heads * m.head_dim;
  const std::int64_t kv = m.kv_heads * m.head_dim;
  std::int64_t p = m.d_model * (q + 2 * kv) + q * m.d_model;  // q, k, v and output projections
  if (m.qkv_bias) p += q + 2 * kv;
  if (m.attn_out_bias) p += m.d_model;
  return p;
}

// One MLP of hidden width `d_ff`: up and down projections, plus a gate for SwiGLU.
std::int64_t mlp_parameters(const ModelConfig& m, std::int64_t d_ff) {
  const bool gated = m.activation == Activation::kSwiglu;
  std::int64_t p = (gated ? 3 : 2) * m.d_model * d_ff;
  if (m.mlp_bias) p += (gated ? 2 : 1) * d_ff + m.d_model;
  return p;
}

std::int64_t moe_parameters(const ModelConfig& m, const MoeConfig& moe) {
  const std::int64_t router = moe.experts * m.d_model;  // a bias-free linear to expert logits
  return router + moe.experts * mlp_parameters(m, moe.expert_d_ff) +
         moe.shared_experts * mlp_parameters(m, moe.shared_expert_d_ff);
}

}  // namespace

std::int64_t parameter_count(const ModelConfig& m) {
  std::int64_t total = m.vocab * m.d_model;
  if (m.max_positions) total += *m.max_positions * m.d_model;

  const std::int64_t dense_layers = m.moe ? m.moe->dense_layers : m.layers;
  const std::int64_t norms_and_attention = 2 * norm_parameters(m) + attention_parameters(m);
  total += m.layers * norms_and_attention;
  total += dense_layers * mlp_parameters(m, m.d_ff);
  if (m.moe) total += (m.layers - dense_layers) * moe_parameters(m, *m.moe);

  total += norm_parameters(m);  // final norm
  if (!m.tied_embeddings) total += m.vocab * m.d_model;
  return total;
}

}  // namespace gpusim::workloads
