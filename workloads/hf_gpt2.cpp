// Hugging Face reader for gpt2: LayerNorm, learned positions, a GELU MLP, biases everywhere,
// tied embeddings.
#include "workloads/hf_fields.h"

namespace gpusim::workloads::hf {
namespace {

// transformers 5.17's GPT2Config defaults (validation/data/hf_defaults_transformers-5.17.json).
constexpr double kGpt2LayerNormEpsilon = 1e-5;
constexpr std::int64_t kGpt2Positions = 1024;
constexpr std::string_view kGpt2Activation = "gelu_new";
constexpr bool kGpt2TieWordEmbeddings = true;

}  // namespace

ModelConfig read_gpt2(const Fields& c) {
  ModelConfig m;
  m.d_model = c.size("n_embd", limits::kMaxWidth);
  m.layers = c.size("n_layer", limits::kMaxLayers);
  read_attention_shape(c, {"n_embd", "n_head", "", std::nullopt, ""}, m);
  m.vocab = c.size("vocab_size", limits::kMaxVocab);
  m.d_ff = c.optional_integer("n_inner", 1, limits::kMaxWidth).value_or(4 * m.d_model);
  if (m.d_ff > limits::kMaxWidth) {
    c.fail("n_inner", fmt::format("is not given, and 4 * n_embd ({}) is more than {}", m.d_ff,
                                  limits::kMaxWidth));
  }
  m.max_positions =
      c.optional_integer("n_positions", 1, limits::kMaxPositions).value_or(kGpt2Positions);
  m.norm = Norm::kLayerNorm;
  m.norm_eps = c.optional_positive("layer_norm_epsilon", limits::kMaxNormEps)
                   .value_or(kGpt2LayerNormEpsilon);
  const std::string act = c.text("activation_function", kGpt2Activation);
  if (act != "gelu_new" && act != "gelu" && act != "gelu_pytorch_tanh") {
    c.fail("activation_function",
           fmt::format("'{}' is not supported (gelu_new, gelu or gelu_pytorch_tanh)", act));
  }
  m.activation = Activation::kGelu;
  m.positions = Positions::kLearned;
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;  // GPT-2's Conv1D layers all have a bias
  m.tied_embeddings = c.boolean("tie_word_embeddings", kGpt2TieWordEmbeddings);
  if (c.boolean("add_cross_attention", false)) {
    c.fail("add_cross_attention", "cross-attention layers are not supported");
  }
  return m;
}

}  // namespace gpusim::workloads::hf
