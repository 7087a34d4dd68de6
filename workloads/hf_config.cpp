#include "workloads/hf_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "sim/error.h"

namespace gpusim::workloads {
namespace {

using nlohmann::json;
namespace limits = model_limits;

// ---- transformers 5.17's defaults for fields a config.json leaves out, from
// validation/data/hf_defaults_transformers-5.17.json (AutoConfig.for_model(type).to_dict()).

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
};
constexpr LlamaFamily kLlama{"llama", 1e-6, 10000.0, false, std::nullopt};
constexpr LlamaFamily kMistral{"mistral", 1e-6, 10000.0, false, 8};
constexpr LlamaFamily kQwen2{"qwen2", 1e-6, 10000.0, false, 32};
constexpr LlamaFamily kMixtral{"mixtral", 1e-5, 1000000.0, false, 8};
constexpr std::string_view kHiddenAct = "silu";  // every llama-style class and deepseek_v2

constexpr std::int64_t kMixtralLocalExperts = 8;
constexpr std::int64_t kMixtralExpertsPerToken = 2;

constexpr double kDeepseekRmsNormEps = 1e-6;
constexpr double kDeepseekRopeTheta = 10000.0;
constexpr bool kDeepseekTieWordEmbeddings = false;
constexpr std::int64_t kDeepseekRoutedExperts = 64;
constexpr std::int64_t kDeepseekSharedExperts = 2;
constexpr std::int64_t kDeepseekMoeIntermediateSize = 1407;
constexpr bool kDeepseekNormTopkProb = false;
constexpr std::int64_t kDeepseekKvLoraRank = 512;  // not null: MLA unless a file says null

constexpr double kGpt2LayerNormEpsilon = 1e-5;
constexpr std::int64_t kGpt2Positions = 1024;
constexpr std::string_view kGpt2Activation = "gelu_new";
constexpr bool kGpt2TieWordEmbeddings = true;

constexpr std::string_view kSupportedTypes =
    "llama, mistral, qwen2, mixtral, gpt2, deepseek_v2, and deepseek_vl_v2 (its "
    "language_config)";

// ---- locating keys in the text, for error lines

// Where the key at `key_path` ("language_config.num_attention_heads") is written in `text`, a
// well-formed JSON document; npos when it is not. Tracks the keys of the open objects, so that
// a key of the same name in another object is not taken for it.
std::size_t find_key(std::string_view text, std::string_view key_path) {
  std::vector<std::string> open;  // per open object or list: the key it is the value of
  std::string key;                // the last key read: the next object opened is its value
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      open.push_back(c == '{' ? key : "[]");
      key.clear();
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    } else if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      const auto after = text.find_first_not_of(" \t\r\n", i + 1);
      if (after == std::string_view::npos || text[after] != ':') continue;  // a value
      key = text.substr(start + 1, i - start - 1);
      std::string path;
      for (std::size_t depth = 1; depth < open.size(); ++depth) path += open[depth] + ".";
      if (path + key == key_path) return start;
    }
  }
  return std::string_view::npos;
}

int line_at(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

// The text and its label: errors name the label and the line of the key they are about.
class Source {
 public:
  Source(const std::string& text, const std::string& label) : text_(text), label_(label) {}

  // Fails at the line of `key_path`, or at line 0 when the key is not written.
  [[noreturn]] void fail(const std::string& key_path, const std::string& detail) const {
    const auto at = find_key(text_, key_path);
    throw ConfigError(label_, at == std::string_view::npos ? 0 : line_at(text_, at), key_path,
                      detail);
  }

 private:
  const std::string& text_;
  const std::string& label_;
};

std::string describe(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "a list";
  return value.dump();
}

// One object of the config, read with typed lookups. Transformers treats a null like an absent
// key for most fields (the default applies), so the lookups do too.
class Fields {
 public:
  Fields(const Source& source, const json& object, std::string prefix)
      : source_(source), object_(object), prefix_(std::move(prefix)) {}

  std::string path(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : fmt::format("{}.{}", prefix_, key);
  }

  bool written(std::string_view key) const { return object_.contains(key); }

  // The value of `key`; nullptr when it is absent or null.
  const json* value(std::string_view key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  std::optional<std::int64_t> optional_integer(std::string_view key, std::int64_t min,
                                               std::int64_t max) const {
    const json* v = value(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) fail(key, "expected a whole number, got " + describe(*v));
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
      fail(key, fmt::format("{} is out of range [{}, {}]", v->get<std::uint64_t>(), min, max));
    }
    const auto n = v->get<std::int64_t>();
    if (n < min || n > max) fail(key, fmt::format("{} is out of range [{}, {}]", n, min, max));
    return n;
  }

  // A size the file must give: a whole number in [1, max].
  std::int64_t size(std::string_view key, std::int64_t max) const {
    if (!written(key)) fail(key, "missing required key");
    if (!value(key)) fail(key, "has no value");
    return *optional_integer(key, 1, max);
  }

  std::optional<double> optional_positive(std::string_view key, double max) const {
    const json* v = value(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(key, "expected a number, got " + describe(*v));
    const double x = v->get<double>();
    if (!(x > 0)) fail(key, "must be greater than 0");
    if (x > max) fail(key, fmt::format("{} is more than {}", x, max));
    return x;
  }

  bool boolean(std::string_view key, bool fallback) const {
    const json* v = value(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(key, "expected true or false, got " + describe(*v));
    return v->get<bool>();
  }

  std::string text(std::string_view key, std::string_view fallback) const {
    const json* v = value(key);
    if (!v) return std::string(fallback);
    if (!v->is_string()) fail(key, "expected a string, got " + describe(*v));
    return v->get<std::string>();
  }

  std::optional<Fields> object(std::string_view key) const {
    const json* v = value(key);
    if (!v) return std::nullopt;
    if (!v->is_object()) fail(key, "expected an object, got " + describe(*v));
    return Fields(source_, *v, path(key));
  }

  // At the key's line, or at line 0 when it is not written.
  [[noreturn]] void fail(std::string_view key, const std::string& detail) const {
    source_.fail(path(key), detail);
  }

 private:
  const Source& source_;
  const json& object_;
  std::string prefix_;
};

// ---- pieces every model type shares

struct AttentionKeys {
  std::string_view d_model;  // for messages
  std::string_view heads;
  std::string_view kv_heads;                     // empty: no grouped-query attention
  std::optional<std::int64_t> kv_heads_default;  // when kv_heads is absent; nullopt: heads
  std::string_view head_dim;                     // empty: always d_model / heads
};

// Sets heads, kv_heads and head_dim; m.d_model must be set.
void read_attention_shape(const Fields& c, const AttentionKeys& keys, ModelConfig& m) {
  m.heads = c.size(keys.heads, limits::kMaxHeads);
  m.kv_heads = m.heads;
  if (!keys.kv_heads.empty()) {
    const auto kv = c.optional_integer(keys.kv_heads, 1, limits::kMaxHeads);
    const bool use_default = !c.written(keys.kv_heads) && keys.kv_heads_default;
    m.kv_heads = kv ? *kv : use_default ? *keys.kv_heads_default : m.heads;
    if (m.heads % m.kv_heads != 0) {
      c.fail(keys.kv_heads, fmt::format("{} ({}) is not a multiple of {} ({}{})", keys.heads,
                                        m.heads, keys.kv_heads, m.kv_heads,
                                        use_default ? ", the default when the key is absent" : ""));
    }
  }
  if (!keys.head_dim.empty()) {
    if (const auto head_dim = c.optional_integer(keys.head_dim, 1, limits::kMaxHeadDim)) {
      m.head_dim = *head_dim;
      return;
    }
  }
  if (m.d_model % m.heads != 0) {
    c.fail(keys.heads,
           fmt::format("{} ({}) is not a multiple of {} ({}){}", keys.d_model, m.d_model,
                       keys.heads, m.heads, keys.head_dim.empty() ? "" : "; give head_dim"));
  }
  m.head_dim = m.d_model / m.heads;
}

// SwiGLU needs SiLU as its gate's activation.
void require_silu(const Fields& c, std::string_view model_type) {
  const std::string act = c.text("hidden_act", kHiddenAct);
  if (act != kHiddenAct) {
    c.fail("hidden_act", fmt::format("'{}' is not supported: {} is read as a SwiGLU MLP, whose "
                                     "gate uses silu",
                                     act, model_type));
  }
}

// Transformers 5 writes rope_parameters.rope_theta; older files write rope_theta.
double read_rope_theta(const Fields& c, double fallback) {
  const auto flat = c.optional_positive("rope_theta", limits::kMaxRopeTheta);
  const auto params = c.object("rope_parameters");
  if (!params || !params->value("rope_theta")) return flat.value_or(fallback);
  const double nested = *params->optional_positive("rope_theta", limits::kMaxRopeTheta);
  if (flat && *flat != nested) {
    c.fail("rope_theta",
           fmt::format("{} differs from rope_parameters.rope_theta ({})", *flat, nested));
  }
  return nested;
}

void read_rms_norm(const Fields& c, double eps_fallback, ModelConfig& m) {
  m.norm = Norm::kRmsNorm;
  m.norm_eps = c.optional_positive("rms_norm_eps", limits::kMaxNormEps).value_or(eps_fallback);
}

// ---- the model types

// llama, mistral, qwen2 and mixtral: RMSNorm, RoPE, SwiGLU; mixtral's MLPs are all MoE.
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
  m.tied_embeddings = c.boolean("tie_word_embeddings", family.tie_word_embeddings);

  if (family.model_type == kLlama.model_type) {
    m.qkv_bias = m.attn_out_bias = c.boolean("attention_bias", false);
    m.mlp_bias = c.boolean("mlp_bias", false);
  } else if (family.model_type == kQwen2.model_type) {
    m.qkv_bias = true;  // Qwen2Attention's q, k and v projections have a bias; o_proj has none
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

// GPT-2: LayerNorm, learned positions, a GELU MLP, biases everywhere, tied embeddings.
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

// DeepSeek-V2 without MLA (as DeepSeek-OCR's decoder): plain multi-head attention, and MoE
// layers after the first first_k_dense_replace dense ones.
ModelConfig read_deepseek_v2(const Fields& c) {
  if (c.boolean("use_mla", false)) {
    c.fail("use_mla", "multi-head latent attention (MLA) is not supported");
  }
  if (!c.written("kv_lora_rank")) {
    c.fail("kv_lora_rank",
           fmt::format("is not given, so DeepseekV2Config's default {} applies: multi-head "
                       "latent attention (MLA), which is not supported",
                       kDeepseekKvLoraRank));
  }
  if (c.value("kv_lora_rank")) {
    c.fail("kv_lora_rank", "is set: multi-head latent attention (MLA) is not supported");
  }
  if (c.boolean("attention_bias", false)) {
    c.fail("attention_bias", "attention biases are not supported for deepseek_v2");
  }
  if (c.boolean("mlp_bias", false)) {
    c.fail("mlp_bias", "MLP biases are not supported for deepseek_v2");
  }
  if (!c.boolean("lm_head", true)) c.fail("lm_head", "a model without lm_head is not supported");
  const auto layer_freq = c.optional_integer("moe_layer_freq", 1, limits::kMaxLayers);
  if (layer_freq.value_or(1) != 1) {
    c.fail("moe_layer_freq", "only 1 is supported (every layer after the dense ones is MoE)");
  }

  ModelConfig m;
  m.d_model = c.size("hidden_size", limits::kMaxWidth);
  m.layers = c.size("num_hidden_layers", limits::kMaxLayers);
  read_attention_shape(
      c, {"hidden_size", "num_attention_heads", "num_key_value_heads", std::nullopt, ""}, m);
  m.vocab = c.size("vocab_size", limits::kMaxVocab);
  read_rms_norm(c, kDeepseekRmsNormEps, m);
  require_silu(c, "deepseek_v2");
  m.activation = Activation::kSwiglu;
  m.positions = Positions::kRope;
  m.rope_theta = read_rope_theta(c, kDeepseekRopeTheta);
  m.tied_embeddings = c.boolean("tie_word_embeddings", kDeepseekTieWordEmbeddings);

  // n_routed_experts null means no MoE layers; so does a first_k_dense_replace covering them all.
  const auto experts = c.written("n_routed_experts")
                           ? c.optional_integer("n_routed_experts", 1, limits::kMaxExperts)
                           : std::optional<std::int64_t>(kDeepseekRoutedExperts);
  const std::int64_t dense_layers =
      c.optional_integer("first_k_dense_replace", 0, limits::kMaxLayers).value_or(0);
  if (!experts || dense_layers >= m.layers) {
    m.d_ff = c.size("intermediate_size", limits::kMaxWidth);
    return m;
  }
  MoeConfig moe;
  moe.experts = *experts;
  const auto top_k = c.optional_integer("num_experts_per_tok", 1, limits::kMaxExperts);
  if (!top_k) {
    c.fail("num_experts_per_tok",
           fmt::format("missing: the MoE layers (n_routed_experts {}) need it", moe.experts));
  }
  moe.top_k = *top_k;
  if (moe.top_k > moe.experts) {
    c.fail("num_experts_per_tok",
           fmt::format("{} is more than n_routed_experts ({})", moe.top_k, moe.experts));
  }
  moe.expert_d_ff = c.optional_integer("moe_intermediate_size", 1, limits::kMaxWidth)
                        .value_or(kDeepseekMoeIntermediateSize);
  // Null means none (DeepseekV2MoE builds its shared experts only when the count is set).
  moe.shared_experts =
      c.written("n_shared_experts")
          ? c.optional_integer("n_shared_experts", 0, limits::kMaxSharedExperts).value_or(0)
          : kDeepseekSharedExperts;
  moe.shared_expert_d_ff = moe.expert_d_ff;
  moe.dense_layers = dense_layers;
  moe.norm_topk_prob = c.boolean("norm_topk_prob", kDeepseekNormTopkProb);
  m.moe = moe;
  m.d_ff = dense_layers > 0 ? c.size("intermediate_size", limits::kMaxWidth) : 0;
  return m;
}

ModelConfig read_config(const Source& source, const json& root) {
  const Fields top(source, root, "");
  // deepseek_vl_v2 (DeepSeek-OCR) keeps its language model, a deepseek_v2, here.
  if (const auto language = top.object("language_config")) {
    const std::string type = language->text("model_type", "deepseek_v2");
    if (type != "deepseek_v2") {
      language->fail("model_type",
                     fmt::format("'{}' is not supported; a language_config is read as "
                                 "deepseek_v2",
                                 type));
    }
    return read_deepseek_v2(*language);
  }
  if (!top.value("model_type")) top.fail("model_type", "missing required key");
  const std::string type = top.text("model_type", "");
  for (const LlamaFamily* family : {&kLlama, &kMistral, &kQwen2, &kMixtral}) {
    if (type == family->model_type) return read_llama_family(top, *family);
  }
  if (type == "gpt2") return read_gpt2(top);
  if (type == "deepseek_v2") return read_deepseek_v2(top);
  if (top.written("text_config")) {
    top.fail("model_type", fmt::format("'{}' (a language model under text_config) is not "
                                       "supported; supported model types: {}",
                                       type, kSupportedTypes));
  }
  top.fail("model_type",
           fmt::format("'{}' is not supported; supported model types: {}", type, kSupportedTypes));
}

}  // namespace

ModelConfig parse_hf_config(const std::string& json_text, const std::string& label,
                            const std::string& default_name) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset of the last character read, where the error is.
    const int line = line_at(json_text, e.byte == 0 ? 0 : e.byte - 1);
    const std::string what = e.what();
    const auto colon = what.find(": ");
    throw ConfigError(
        label, line, "",
        "malformed JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
  }
  if (!root.is_object()) {
    throw ConfigError(label, 0, "", "expected a JSON object (a Hugging Face config.json)");
  }
  ModelConfig m = read_config(Source(json_text, label), root);
  m.name = default_name;
  return m;
}

ModelConfig load_hf_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in || std::filesystem::is_directory(file)) {
    throw ConfigError(file.string(), 0, "", "cannot read this file (missing or not a file)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string name = file.stem().string();
  if (name == "config") {
    const auto folder = std::filesystem::absolute(file).lexically_normal().parent_path();
    if (!folder.filename().empty()) name = folder.filename().string();
  }
  return parse_hf_config(text.str(), file.string(), name);
}

}  // namespace gpusim::workloads
