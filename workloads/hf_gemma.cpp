// Hugging Face readers for gemma2, gemma3_text and gemma3 (whose text model is under
// text_config): RMSNorm scaling by (1 + weight) before and after attention and the MLP, a GeGLU
// MLP, embeddings scaled by sqrt(hidden_size), scores scaled by query_pre_attn_scalar, windowed
// and global layers by layer_types; Gemma 2 soft-caps attention and final logits, Gemma 3 adds
// q/k norms and a RoPE base of its own for windowed layers.
#include <algorithm>

#include "workloads/hf_fields.h"

namespace gpusim::workloads::hf {
namespace {

// transformers 5.17's Gemma2Config and Gemma3TextConfig defaults (configuration_gemma2.py,
// configuration_gemma3.py; AutoConfig.for_model(type).to_dict() gives the same).
struct GemmaFamily {
  std::string_view model_type;
  std::int64_t num_key_value_heads;
  std::int64_t head_dim;
  double rms_norm_eps;
  bool tie_word_embeddings;
  double query_pre_attn_scalar;
  std::int64_t sliding_window;
  std::optional<double> attn_logit_softcapping;
  std::optional<double> final_logit_softcapping;
};
constexpr GemmaFamily kGemma2{"gemma2", 4, 256, 1e-6, true, 256, 4096, 50.0, 30.0};
constexpr GemmaFamily kGemma3{"gemma3_text", 4,    256,          1e-6,        true,
                              256,           4096, std::nullopt, std::nullopt};
constexpr std::string_view kGemmaActivation = "gelu_pytorch_tanh";
constexpr double kGemma2RopeTheta = 10000.0;
// Gemma3TextConfig.default_theta: {"global": 1_000_000.0, "local": 10_000.0}.
constexpr double kGemma3GlobalRopeTheta = 1000000.0;
constexpr double kGemma3LocalRopeTheta = 10000.0;
constexpr std::int64_t kGemma3SlidingWindowPattern = 6;

// A soft-cap: the class default when the key is absent, none when it is null.
std::optional<double> read_softcap(const Fields& c, std::string_view key,
                                   std::optional<double> fallback) {
  if (!c.written(key)) return fallback;
  return c.optional_positive(key, 1e9);
}

ModelConfig read_gemma_common(const Fields& c, const GemmaFamily& family) {
  ModelConfig m;
  m.d_model = c.size("hidden_size", limits::kMaxWidth);
  m.layers = c.size("num_hidden_layers", limits::kMaxLayers);
  read_attention_shape(c,
                       {"hidden_size", "num_attention_heads", "num_key_value_heads",
                        family.num_key_value_heads, "head_dim", family.head_dim},
                       m);
  m.vocab = c.size("vocab_size", limits::kMaxVocab);
  m.d_ff = c.size("intermediate_size", limits::kMaxWidth);
  read_rms_norm(c, family.rms_norm_eps, m);
  const std::string act = c.text("hidden_activation", kGemmaActivation);
  if (act != kGemmaActivation) {
    c.fail("hidden_activation",
           fmt::format("'{}' is not supported: {} is read as a GeGLU MLP, whose gate uses "
                       "gelu_pytorch_tanh",
                       act, family.model_type));
  }
  m.activation = Activation::kGeglu;
  m.positions = Positions::kRope;
  m.tied_embeddings = c.boolean("tie_word_embeddings", family.tie_word_embeddings);
  // q, k, v and o_proj all take bias=config.attention_bias; the MLP has none.
  m.qkv_bias = m.attn_out_bias = c.boolean("attention_bias", false);
  m.norm_weight_offset = true;  // GemmaRMSNorm: x * (1 + weight), weight initialized to zeros
  m.sandwich_norms = true;      // post_attention_layernorm, pre/post_feedforward_layernorm
  m.embed_scale = true;         // ScaledWordEmbedding: times hidden_size ** 0.5
  m.query_scale =
      c.optional_positive("query_pre_attn_scalar", 1e9).value_or(family.query_pre_attn_scalar);
  m.attn_softcap = read_softcap(c, "attn_logit_softcapping", family.attn_logit_softcapping);
  m.final_softcap = read_softcap(c, "final_logit_softcapping", family.final_logit_softcapping);
  if (c.boolean("use_bidirectional_attention", false)) {
    c.fail("use_bidirectional_attention",
           "bidirectional attention is not supported (a causal decoder is modeled)");
  }
  return m;
}

// The window (absent: the class default; null: none) on the layers `windowed` marks.
void read_gemma_window(const Fields& c, const GemmaFamily& family,
                       const std::vector<bool>& windowed, ModelConfig& m) {
  const auto window = c.written("sliding_window")
                          ? c.optional_integer("sliding_window", 1, limits::kMaxPositions)
                          : std::optional<std::int64_t>(family.sliding_window);
  set_sliding(c, window, windowed, "sliding_window", "is null", m);
}

// Gemma3TextConfig.convert_rope_params_to_dict: rope_parameters holds one object per layer
// type; a legacy rope_scaling updates full_attention's; rope_theta and rope_local_base_freq
// are the legacy bases of global and windowed layers.
void read_gemma3_rope(const Fields& c, ModelConfig& m) {
  const auto params = c.object("rope_parameters");
  if (params && !params->written("full_attention") && !params->written("sliding_attention")) {
    c.fail("rope_parameters",
           "expected one object per layer type (full_attention, sliding_attention), as "
           "Gemma3TextConfig writes them");
  }
  const std::optional<Fields> full =
      params ? params->object("full_attention") : std::optional<Fields>();
  const std::optional<Fields> local =
      params ? params->object("sliding_attention") : std::optional<Fields>();
  const auto base = [&c](const std::optional<Fields>& nested, std::string_view flat_key,
                         double fallback) {
    const auto flat = c.optional_positive(flat_key, limits::kMaxRopeTheta);
    if (!nested || !nested->value("rope_theta")) return flat.value_or(fallback);
    const double theta = *nested->optional_positive("rope_theta", limits::kMaxRopeTheta);
    if (flat && *flat != theta) {
      c.fail(flat_key,
             fmt::format("{} differs from {} ({})", *flat, nested->path("rope_theta"), theta));
    }
    return theta;
  };
  m.rope_theta = base(full, "rope_theta", kGemma3GlobalRopeTheta);
  // Gemma3 computes a rotary table per layer type, so the local base is always set.
  m.rope_local_theta = base(local, "rope_local_base_freq", kGemma3LocalRopeTheta);

  if (const auto legacy = c.object("rope_scaling")) {
    m.rope_scaling = read_rope_type(*legacy);
  } else if (full) {
    m.rope_scaling = read_rope_type(*full);
  }
  if (local) {
    const std::string type = read_rope_type(*local);
    if (type != "default") {
      local->fail(
          local->value("rope_type") ? "rope_type" : "type",
          fmt::format("'{}': only default RoPE is supported on sliding_attention layers", type));
    }
  }
}

}  // namespace

ModelConfig read_gemma2(const Fields& c) {
  ModelConfig m = read_gemma_common(c, kGemma2);
  m.rope_theta = read_rope_theta(c, kGemma2RopeTheta);
  m.rope_scaling = read_rope_scaling(c);
  // Gemma2Config: layer_types, when not given, alternates sliding (even layers) and full.
  std::vector<bool> windowed;
  if (const auto types = read_layer_types(c, m.layers)) {
    windowed = *types;
  } else {
    for (std::int64_t i = 0; i < m.layers; ++i) windowed.push_back((i + 1) % 2 != 0);
  }
  read_gemma_window(c, kGemma2, windowed, m);
  return m;
}

ModelConfig read_gemma3_text(const Fields& c) {
  ModelConfig m = read_gemma_common(c, kGemma3);
  m.qk_norm = true;  // Gemma3Attention: q_norm, k_norm over head_dim
  read_gemma3_rope(c, m);
  // Gemma3TextConfig: layer_types, when not given, is sliding_attention except every
  // sliding_window_pattern-th layer.
  const auto pattern = c.optional_integer("sliding_window_pattern", 1, limits::kMaxLayers);
  const std::int64_t every = pattern.value_or(kGemma3SlidingWindowPattern);
  std::vector<bool> by_pattern;
  for (std::int64_t i = 0; i < m.layers; ++i) by_pattern.push_back((i + 1) % every != 0);
  std::vector<bool> windowed = by_pattern;
  if (const auto types = read_layer_types(c, m.layers)) {
    if (pattern && *types != by_pattern) {
      c.fail("sliding_window_pattern",
             fmt::format("{} does not give layer_types (layers i with (i + 1) % {} == 0 "
                         "full_attention, the others sliding_attention)",
                         *pattern, *pattern));
    }
    windowed = *types;
  }
  read_gemma_window(c, kGemma3, windowed, m);
  return m;
}

ModelConfig read_gemma3(const Fields& c) {
  // Gemma3Config (image-text): the language model is a Gemma3TextConfig under text_config; the
  // vision tower is not modeled. lm_head is tied by the top-level tie_word_embeddings.
  const auto text = c.object("text_config");
  if (!text) c.fail("text_config", "missing: gemma3's language model is read from it");
  const std::string type = text->text("model_type", "gemma3_text");
  if (type != "gemma3_text") {
    text->fail(
        "model_type",
        fmt::format("'{}' is not supported; gemma3's text_config is read as gemma3_text", type));
  }
  ModelConfig m = read_gemma3_text(*text);
  m.tied_embeddings = c.boolean("tie_word_embeddings", kGemma3.tie_word_embeddings);
  return m;
}

}  // namespace gpusim::workloads::hf
