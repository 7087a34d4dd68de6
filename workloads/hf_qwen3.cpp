// Hugging Face readers for qwen3 and qwen3_moe: llama-like blocks with an RMSNorm over head_dim
// on q and k (q_norm, k_norm) and a head_dim of their own; Qwen3-MoE places MoE layers by
// decoder_sparse_step and mlp_only_layers.
#include <algorithm>

#include "workloads/hf_fields.h"

namespace gpusim::workloads::hf {
namespace {

// transformers 5.17's Qwen3Config and Qwen3MoeConfig defaults (configuration_qwen3.py,
// configuration_qwen3_moe.py; AutoConfig.for_model(type).to_dict() gives the same).
constexpr double kQwen3RmsNormEps = 1e-6;
constexpr double kQwen3RopeTheta = 10000.0;  // rope_parameters' default rope_theta
constexpr bool kQwen3TieWordEmbeddings = false;
constexpr std::int64_t kQwen3KvHeads = 32;
constexpr std::int64_t kQwen3HeadDim = 128;
constexpr std::int64_t kQwen3MaxWindowLayers = 28;

constexpr std::int64_t kQwen3MoeKvHeads = 4;
constexpr std::int64_t kQwen3MoeExperts = 128;  // num_experts (num_local_experts in the file)
constexpr std::int64_t kQwen3MoeExpertsPerToken = 8;
constexpr std::int64_t kQwen3MoeIntermediateSize = 768;
constexpr bool kQwen3MoeNormTopkProb = false;
constexpr std::int64_t kQwen3MoeSparseStep = 1;

// What both share: sizes, norms, RoPE, biases, q/k norms. head_dim_default: nullopt for
// d_model / heads.
ModelConfig read_qwen3_common(const Fields& c, std::string_view model_type,
                              std::int64_t kv_heads_default,
                              std::optional<std::int64_t> head_dim_default) {
  ModelConfig m;
  m.d_model = c.size("hidden_size", limits::kMaxWidth);
  m.layers = c.size("num_hidden_layers", limits::kMaxLayers);
  read_attention_shape(c,
                       {"hidden_size", "num_attention_heads", "num_key_value_heads",
                        kv_heads_default, "head_dim", head_dim_default},
                       m);
  m.vocab = c.size("vocab_size", limits::kMaxVocab);
  read_rms_norm(c, kQwen3RmsNormEps, m);
  require_silu(c, model_type);
  m.activation = Activation::kSwiglu;
  m.positions = Positions::kRope;
  m.rope_theta = read_rope_theta(c, kQwen3RopeTheta);
  m.rope_scaling = read_rope_scaling(c);
  m.tied_embeddings = c.boolean("tie_word_embeddings", kQwen3TieWordEmbeddings);
  // Qwen3Attention: q, k, v and o_proj all take bias=config.attention_bias.
  m.qkv_bias = m.attn_out_bias = c.boolean("attention_bias", false);
  m.qk_norm = true;  // q_norm and k_norm: Qwen3RMSNorm(head_dim)
  return m;
}

}  // namespace

ModelConfig read_qwen3(const Fields& c) {
  ModelConfig m = read_qwen3_common(c, "qwen3", kQwen3KvHeads, kQwen3HeadDim);
  m.d_ff = c.size("intermediate_size", limits::kMaxWidth);
  read_qwen_window(c, kQwen3MaxWindowLayers, m);
  return m;
}

ModelConfig read_qwen3_moe(const Fields& c) {
  // Qwen3MoeAttention: head_dim = getattr(config, "head_dim", hidden_size // heads).
  ModelConfig m = read_qwen3_common(c, "qwen3_moe", kQwen3MoeKvHeads, std::nullopt);

  // Qwen3MoeAttention passes config.sliding_window (None unless use_sliding_window) to every
  // layer; the class has no layer_types.
  if (c.boolean("use_sliding_window", false)) {
    m.sliding_window = c.optional_integer("sliding_window", 1, limits::kMaxPositions);
  }

  // num_experts is stored as num_local_experts (the class's attribute_map); either may be written.
  const auto local = c.optional_integer("num_local_experts", 0, limits::kMaxExperts);
  const auto alias = c.optional_integer("num_experts", 0, limits::kMaxExperts);
  if (local && alias && *local != *alias) {
    c.fail("num_experts", fmt::format("{} differs from num_local_experts ({})", *alias, *local));
  }
  const std::int64_t experts = local ? *local : alias.value_or(kQwen3MoeExperts);
  const std::string_view experts_key = local || !alias ? "num_local_experts" : "num_experts";

  MoeConfig moe;
  moe.experts = experts;
  moe.top_k = c.optional_integer("num_experts_per_tok", 1, limits::kMaxExperts)
                  .value_or(kQwen3MoeExpertsPerToken);
  if (experts > 0 && moe.top_k > experts) {
    c.fail("num_experts_per_tok",
           fmt::format("{} is more than {} ({})", moe.top_k, experts_key, experts));
  }
  moe.expert_d_ff = c.optional_integer("moe_intermediate_size", 1, limits::kMaxWidth)
                        .value_or(kQwen3MoeIntermediateSize);
  moe.shared_expert_d_ff = moe.expert_d_ff;  // no shared experts
  moe.norm_topk_prob = c.boolean("norm_topk_prob", kQwen3MoeNormTopkProb);
  moe.weights_in_dtype = true;  // Qwen3MoeTopKRouter: router_top_value.to(router_logits.dtype)
  // Qwen3MoeDecoderLayer: MoE when layer i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0, i.e. every s layers from layer s - 1.
  const std::int64_t step = c.optional_integer("decoder_sparse_step", 1, limits::kMaxLayers)
                                .value_or(kQwen3MoeSparseStep);
  moe.every = step;
  moe.phase = step - 1;
  if (const json* only = c.list("mlp_only_layers")) {
    for (std::size_t k = 0; k < only->size(); ++k) {
      const json& v = (*only)[k];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
          v.get<std::int64_t>() >= m.layers) {
        c.fail("mlp_only_layers", fmt::format("entry {} is {}: expected a layer index in [0, {}]",
                                              k, describe(v), m.layers - 1));
      }
      const std::int64_t layer = v.get<std::int64_t>();
      if (std::find(moe.dense_list.begin(), moe.dense_list.end(), layer) == moe.dense_list.end()) {
        moe.dense_list.push_back(layer);
      }
    }
    std::sort(moe.dense_list.begin(), moe.dense_list.end());
  }

  bool any_moe = false;
  bool any_dense = false;
  for (std::int64_t i = 0; i < m.layers; ++i) (moe.moe_layer(i) ? any_moe : any_dense) = true;
  if (experts == 0 || !any_moe) {  // num_experts 0 or no layer placed: every MLP is dense
    m.d_ff = c.size("intermediate_size", limits::kMaxWidth);
    return m;
  }
  m.moe = moe;
  m.d_ff = any_dense ? c.size("intermediate_size", limits::kMaxWidth) : 0;
  return m;
}

}  // namespace gpusim::workloads::hf
