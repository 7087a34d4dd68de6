// Hugging Face readers for llama, mistral, qwen2 and mixtral: RMSNorm, RoPE, SwiGLU; mixtral's
// MLPs are all MoE.
#include "workloads/hf_fields.h"

namespace gpusim::workloads::hf {
namespace {

// ---- transformers 5.17's defaults for fields a config.json leaves out, from
// validation/data/hf_defaults_transformers-5.17.json (AutoConfig.for_model(type).to_dict()).

// Which layers attend within a window, by class.
enum class Window {
  kNone,       // LlamaConfig has no window
  kAllLayers,  // MistralConfig, MixtralConfig: sliding_window applies to every layer
  kQwen,       // Qwen2Config: use_sliding_window, max_window_layers, layer_types
};

// The llama-style classes differ only in these.
struct LlamaFamily {
  std::string_view model_type;
  double rms_norm_eps;
  double rope_theta;
  bool tie_word_embeddings;
  // When num_key_value_heads is absent; nullopt: num_attention_heads. (The file shows llama's
  // and qwen2's resolved with 32 heads; the classes' own defaults are None and 32.) A null in
  // the file means num_attention_heads in every class.
  std::optional<std::int64_t> num_key_value_heads;
  Window window;
  std::optional<std::int64_t> sliding_window;  // when the key is absent (mistral: 4096)
};
constexpr LlamaFamily kLlama{"llama",      1e-6,          10000.0,     false,
                             std::nullopt, Window::kNone, std::nullopt};
constexpr LlamaFamily kMistral{"mistral", 1e-6, 10000.0, false, 8, Window::kAllLayers, 4096};
constexpr LlamaFamily kQwen2{"qwen2", 1e-6, 10000.0, false, 32, Window::kQwen, std::nullopt};
constexpr LlamaFamily kMixtral{"mixtral",          1e-5,        1000000.0, false, 8,
                               Window::kAllLayers, std::nullopt};
constexpr std::int64_t kQwen2MaxWindowLayers = 28;

constexpr std::int64_t kMixtralLocalExperts = 8;
constexpr std::int64_t kMixtralExpertsPerToken = 2;

ModelConfig read_llama_family(const Fields& c, const LlamaFamily& family) {
  ModelConfig m;
  m.d_model = c.size("hidden_size", limits::kMaxWidth);
  m.layers = c.size("num_hidden_layers", limits::kMaxLayers);
  read_attention_shape(c,
                       {"hidden_size", "num_attention_heads", "num_key_value_heads",
                        family.num_key_value_heads, "head_dim"},
                       m);
  m.vocab = c.size("vocab_size", limits::kMaxVocab);
  const std::int64_t mlp_width = c.size("intermediate_size", limits::kMaxWidth);
  read_rms_norm(c, family.rms_norm_eps, m);
  require_silu(c, family.model_type);
  m.activation = Activation::kSwiglu;
  m.positions = Positions::kRope;
  m.rope_theta = read_rope_theta(c, family.rope_theta);
  m.rope_scaling = read_rope_scaling(c);
  m.tied_embeddings = c.boolean("tie_word_embeddings", family.tie_word_embeddings);

  if (family.model_type == kLlama.model_type) {
    m.qkv_bias = m.attn_out_bias = c.boolean("attention_bias", false);
    m.mlp_bias = c.boolean("mlp_bias", false);
  } else if (family.model_type == kQwen2.model_type) {
    m.qkv_bias = true;  // Qwen2Attention's q, k and v projections have a bias; o_proj has none
  }

  switch (family.window) {
    case Window::kNone:
      break;
    case Window::kAllLayers: {
      // Mistral and Mixtral pass config.sliding_window to every layer's attention and build
      // the sliding-window mask when it is not None.
      const auto window = c.written("sliding_window")
                              ? c.optional_integer("sliding_window", 1, limits::kMaxPositions)
                              : family.sliding_window;
      m.sliding_window = window;  // every layer: sliding_layers stays empty
      break;
    }
    case Window::kQwen:
      read_qwen_window(c, kQwen2MaxWindowLayers, m);
      break;
  }

  if (family.model_type != kMixtral.model_type) {
    m.d_ff = mlp_width;
    return m;
  }
  MoeConfig moe;
  moe.experts = c.optional_integer("num_local_experts", 1, limits::kMaxExperts)
                    .value_or(kMixtralLocalExperts);
  moe.top_k = c.optional_integer("num_experts_per_tok", 1, limits::kMaxExperts)
                  .value_or(kMixtralExpertsPerToken);
  if (moe.top_k > moe.experts) {
    c.fail("num_experts_per_tok",
           fmt::format("{} is more than num_local_experts ({})", moe.top_k, moe.experts));
  }
  moe.expert_d_ff = mlp_width;
  moe.shared_expert_d_ff = mlp_width;  // as a model file without shared experts reads
  moe.norm_topk_prob = true;           // MixtralSparseMoeBlock renormalizes the top-k weights
  m.moe = moe;
  m.d_ff = 0;  // every layer is MoE
  return m;
}

}  // namespace

ModelConfig read_llama(const Fields& c) {
  return read_llama_family(c, kLlama);
}
ModelConfig read_mistral(const Fields& c) {
  return read_llama_family(c, kMistral);
}
ModelConfig read_qwen2(const Fields& c) {
  return read_llama_family(c, kQwen2);
}
ModelConfig read_mixtral(const Fields& c) {
  return read_llama_family(c, kMixtral);
}

}  // namespace gpusim::workloads::hf
