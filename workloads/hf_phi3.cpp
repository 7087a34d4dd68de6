// Hugging Face reader for phi3 (Phi-3, Phi-3.5 and Phi-4-mini): a llama-like block with one
// fused qkv_proj (d -> q + 2 kv) and one fused gate_up_proj (d -> 2 d_ff), partial RoPE
// (partial_rotary_factor), longrope scaling, and a window on every layer when sliding_window
// is set.
#include <cmath>

#include "workloads/hf_fields.h"

namespace gpusim::workloads::hf {
namespace {

// transformers 5.17's Phi3Config defaults (configuration_phi3.py; AutoConfig.for_model gives
// the same).
constexpr double kPhi3RmsNormEps = 1e-5;
constexpr double kPhi3RopeTheta = 10000.0;
constexpr bool kPhi3TieWordEmbeddings = false;
constexpr double kPhi3PartialRotaryFactor = 1.0;

// Phi3Config.convert_rope_params_to_dict and validate_rope: the RoPE object is a legacy
// rope_scaling when written, else rope_parameters; "su" and "yarn" are read as "longrope"; only
// "default" and "longrope" are valid.
std::string read_phi3_rope_type(const std::optional<Fields>& rope) {
  if (!rope) return "default";
  const char* key = rope->value("rope_type") ? "rope_type" : "type";
  const std::string type = rope->text(key, "default");
  if (type == "su" || type == "yarn" || type == "longrope") return "longrope";
  if (type != "default") {
    rope->fail(key, fmt::format("'{}' is not supported for phi3 (default or longrope; su and "
                                "yarn mean longrope)",
                                type));
  }
  return type;
}

}  // namespace

ModelConfig read_phi3(const Fields& c) {
  ModelConfig m;
  m.d_model = c.size("hidden_size", limits::kMaxWidth);
  m.layers = c.size("num_hidden_layers", limits::kMaxLayers);
  // Phi3Attention: head_dim = getattr(config, "head_dim", hidden_size // heads).
  read_attention_shape(
      c, {"hidden_size", "num_attention_heads", "num_key_value_heads", std::nullopt, "head_dim"},
      m);
  m.vocab = c.size("vocab_size", limits::kMaxVocab);
  m.d_ff = c.size("intermediate_size", limits::kMaxWidth);
  read_rms_norm(c, kPhi3RmsNormEps, m);
  require_silu(c, "phi3");
  m.activation = Activation::kSwiglu;
  m.positions = Positions::kRope;
  m.rope_theta = read_rope_theta(c, kPhi3RopeTheta);
  m.tied_embeddings = c.boolean("tie_word_embeddings", kPhi3TieWordEmbeddings);
  m.fused_qkv = true;      // qkv_proj: hidden_size -> (heads + 2 kv_heads) * head_dim, no bias
  m.fused_gate_up = true;  // gate_up_proj: hidden_size -> 2 * intermediate_size, no bias

  const auto legacy = c.object("rope_scaling");
  const auto rope = legacy ? legacy : c.object("rope_parameters");
  m.rope_scaling = read_phi3_rope_type(rope);

  // partial_rotary_factor: rope_parameters' value, else the top-level one, else 1.
  const auto flat = c.optional_number("partial_rotary_factor");
  const auto nested = rope ? rope->optional_number("partial_rotary_factor") : std::nullopt;
  if (flat && nested && *flat != *nested) {
    c.fail("partial_rotary_factor", fmt::format("{} differs from {} ({})", *flat,
                                                rope->path("partial_rotary_factor"), *nested));
  }
  const auto fail_factor = [&](const std::string& detail) {
    if (nested) rope->fail("partial_rotary_factor", detail);
    c.fail("partial_rotary_factor", detail);
  };
  m.rotary_fraction = nested ? *nested : flat.value_or(kPhi3PartialRotaryFactor);
  if (!(m.rotary_fraction > 0 && m.rotary_fraction <= 1)) {
    fail_factor(fmt::format("{} is outside (0, 1]", m.rotary_fraction));
  }
  // Phi3RotaryEmbedding: dim = int(head_dim * partial_rotary_factor), rotated in halves.
  const auto rotary_dim =
      static_cast<std::int64_t>(static_cast<double>(m.head_dim) * m.rotary_fraction);
  if (rotary_dim < 2 || rotary_dim % 2 != 0) {
    fail_factor(
        fmt::format("{} of head_dim {} gives a rotary dimension of {}: it must be even "
                    "and at least 2",
                    m.rotary_fraction, m.head_dim, rotary_dim));
  }
  // longrope's factors: one per rotated pair.
  if (rope) {
    for (const char* key : {"short_factor", "long_factor"}) {
      const json* factors = rope->list(key);
      if (factors && static_cast<std::int64_t>(factors->size()) != rotary_dim / 2) {
        rope->fail(key, fmt::format("has {} entries; the rotary dimension {} needs {} (one per "
                                    "rotated pair)",
                                    factors->size(), rotary_dim, rotary_dim / 2));
      }
    }
  }

  // Phi3Attention passes config.sliding_window to every layer (Phi-3-mini-4k: 2047).
  m.sliding_window = c.optional_integer("sliding_window", 1, limits::kMaxPositions);
  return m;
}

}  // namespace gpusim::workloads::hf
