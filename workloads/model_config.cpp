#include "workloads/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

namespace gpusim::workloads {
namespace {

using model_limits::kMaxExperts;
using model_limits::kMaxHeadDim;
using model_limits::kMaxHeads;
using model_limits::kMaxLayers;
using model_limits::kMaxNormEps;
using model_limits::kMaxPositions;
using model_limits::kMaxRopeTheta;
using model_limits::kMaxSharedExperts;
using model_limits::kMaxVocab;
using model_limits::kMaxWidth;

// Declaring every key first lets a misspelt key be reported as unknown rather than as a
// missing required one.
void declare_keys(hw::MappingReader& r, const std::vector<std::string_view>& keys) {
  for (const auto key : keys) r.has(key);
  r.reject_unknown();
}

std::optional<double> optional_positive(hw::MappingReader& r, std::string_view key, double max) {
  const auto node = r.optional_node(key);
  if (!node) return std::nullopt;
  const double value = hw::to_number(r.doc(), *node, r.path(key), 0.0, max);
  if (value <= 0) r.fail(key, "must be greater than 0");
  return value;
}

MoeConfig read_moe(const hw::YamlDocument& doc, const YAML::Node& node, const std::string& path,
                   std::int64_t layers) {
  hw::MappingReader r(doc, node, path);
  declare_keys(r, {"experts", "top_k", "expert_d_ff", "shared_experts", "shared_expert_d_ff",
                   "dense_layers", "norm_topk_prob"});
  MoeConfig moe;
  moe.experts = r.integer("experts", 1, kMaxExperts);
  moe.top_k = r.integer("top_k", 1, kMaxExperts);
  if (moe.top_k > moe.experts) {
    r.fail("top_k", fmt::format("top_k ({}) is more than experts ({})", moe.top_k, moe.experts));
  }
  moe.expert_d_ff = r.integer("expert_d_ff", 1, kMaxWidth);
  moe.shared_experts = r.optional_integer("shared_experts", 0, kMaxSharedExperts).value_or(0);
  const auto shared_d_ff = r.optional_integer("shared_expert_d_ff", 1, kMaxWidth);
  if (shared_d_ff && moe.shared_experts == 0) {
    r.fail("shared_expert_d_ff", "is set but shared_experts is 0");
  }
  moe.shared_expert_d_ff = shared_d_ff.value_or(moe.expert_d_ff);
  moe.dense_layers = r.optional_integer("dense_layers", 0, kMaxLayers).value_or(0);
  if (moe.dense_layers >= layers) {
    r.fail("dense_layers", fmt::format("dense_layers ({}) must be less than layers ({}), so that "
                                       "at least one layer is MoE",
                                       moe.dense_layers, layers));
  }
  moe.norm_topk_prob = r.optional_boolean("norm_topk_prob");
  return moe;
}

bool is_plain_file_name(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

}  // namespace

ModelConfig read_model_config(const hw::YamlDocument& doc, const YAML::Node& node,
                              const std::string& key_path, const std::string& default_name) {
  hw::MappingReader r(doc, node, key_path);
  declare_keys(r, {"name", "layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "vocab",
                   "max_positions", "norm", "norm_eps", "activation", "positions", "rope_theta",
                   "qkv_bias", "attn_out_bias", "mlp_bias", "tied_embeddings", "moe"});
  ModelConfig m;
  m.name = r.optional_text("name").value_or(default_name);
  m.layers = r.integer("layers", 1, kMaxLayers);
  m.d_model = r.integer("d_model", 1, kMaxWidth);
  m.heads = r.integer("heads", 1, kMaxHeads);
  m.kv_heads = r.optional_integer("kv_heads", 1, kMaxHeads).value_or(m.heads);
  if (m.heads % m.kv_heads != 0) {
    r.fail("kv_heads",
           fmt::format("heads ({}) is not a multiple of kv_heads ({})", m.heads, m.kv_heads));
  }
  if (const auto head_dim = r.optional_integer("head_dim", 1, kMaxHeadDim)) {
    m.head_dim = *head_dim;
  } else if (m.d_model % m.heads != 0) {
    r.fail("heads", fmt::format("d_model ({}) is not a multiple of heads ({}); give head_dim",
                                m.d_model, m.heads));
  } else {
    m.head_dim = m.d_model / m.heads;
  }
  m.vocab = r.integer("vocab", 1, kMaxVocab);

  m.norm =
      r.choice("norm", {"layernorm", "rmsnorm"}) == "layernorm" ? Norm::kLayerNorm : Norm::kRmsNorm;
  m.norm_eps = optional_positive(r, "norm_eps", kMaxNormEps);
  m.activation = r.choice("activation", {"gelu", "swiglu"}) == "gelu" ? Activation::kGelu
                                                                      : Activation::kSwiglu;
  m.positions = r.choice("positions", {"learned", "rope"}) == "learned" ? Positions::kLearned
                                                                        : Positions::kRope;
  m.max_positions = r.optional_integer("max_positions", 1, kMaxPositions);
  m.rope_theta = optional_positive(r, "rope_theta", kMaxRopeTheta);
  if (m.positions == Positions::kLearned) {
    if (!m.max_positions) r.fail("max_positions", "missing: learned positions need a table size");
    if (m.rope_theta) r.fail("rope_theta", "is for positions: rope only");
  } else if (m.max_positions) {
    r.fail("max_positions", "is for positions: learned only (RoPE has no position table)");
  }

  m.qkv_bias = r.optional_boolean("qkv_bias").value_or(false);
  m.attn_out_bias = r.optional_boolean("attn_out_bias").value_or(false);
  m.mlp_bias = r.optional_boolean("mlp_bias").value_or(false);
  m.tied_embeddings = r.optional_boolean("tied_embeddings").value_or(false);

  if (const auto moe = r.optional_node("moe")) {
    m.moe = read_moe(doc, *moe, r.path("moe"), m.layers);
  }
  const bool has_dense_layers = !m.moe || m.moe->dense_layers > 0;
  const auto d_ff = r.optional_integer("d_ff", 1, kMaxWidth);
  if (has_dense_layers && !d_ff) r.fail("d_ff", "missing required key (the dense MLP width)");
  if (!has_dense_layers && d_ff) {
    r.fail("d_ff",
           "is unused: every layer is MoE (moe.dense_layers is 0); the expert width "
           "is moe.expert_d_ff");
  }
  m.d_ff = d_ff.value_or(0);
  return m;
}

ModelConfig load_model_file(const std::filesystem::path& file) {
  const auto doc = hw::YamlDocument::from_file(file);
  hw::MappingReader root(doc, doc.root(), "");
  const YAML::Node node = root.node("model");
  root.reject_unknown();
  const std::string stem = file.stem().string();
  ModelConfig m = read_model_config(doc, node, "model", stem);
  if (m.name != stem) {
    hw::MappingReader(doc, node, "model")
        .fail("name", fmt::format("'{}' does not match the file name '{}'", m.name, stem));
  }
  return m;
}

std::optional<std::filesystem::path> find_model_preset(std::string_view name,
                                                       const std::filesystem::path& models_dir) {
  if (!is_plain_file_name(name)) return std::nullopt;
  auto path = models_dir / (std::string(name) + ".yaml");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  return path;
}

std::vector<std::string> model_preset_names(const std::filesystem::path& models_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir, ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string_view name(Norm norm) {
  return norm == Norm::kLayerNorm ? "layernorm" : "rmsnorm";
}

std::string_view name(Activation activation) {
  switch (activation) {
    case Activation::kGelu: return "gelu";
    case Activation::kSwiglu: return "swiglu";
    case Activation::kGeglu: return "geglu";
  }
  return "?";
}

std::string_view name(Positions positions) {
  return positions == Positions::kLearned ? "learned" : "rope";
}

}  // namespace gpusim::workloads
