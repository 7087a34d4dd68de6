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

// An optional choice: nullopt when the key is absent.
std::optional<std::string> optional_choice(hw::MappingReader& r, std::string_view key,
                                           const std::vector<std::string_view>& allowed) {
  if (!r.optional_node(key)) return std::nullopt;
  return r.choice(key, allowed);
}

MoeConfig read_moe(const hw::YamlDocument& doc, const YAML::Node& node, const std::string& path,
                   std::int64_t layers) {
  hw::MappingReader r(doc, node, path);
  declare_keys(r, {"experts", "top_k", "expert_d_ff", "shared_experts", "shared_expert_d_ff",
                   "dense_layers", "norm_topk_prob", "every", "phase", "dense_list", "scoring",
                   "topk_method", "groups", "topk_groups", "routed_scaling", "router_fp32",
                   "weights_in_dtype"});
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

  // Placement: layers i >= dense_layers with i % every == phase, except those in dense_list.
  moe.every = r.optional_integer("every", 1, kMaxLayers).value_or(1);
  moe.phase = r.optional_integer("phase", 0, kMaxLayers).value_or(0);
  if (moe.phase >= moe.every) {
    r.fail("phase", fmt::format("phase ({}) must be less than every ({})", moe.phase, moe.every));
  }
  if (const auto list = r.optional_node("dense_list")) {
    if (!list->IsSequence()) r.fail("dense_list", "expected a list of layer indices");
    for (std::size_t k = 0; k < list->size(); ++k) {
      const std::string at = fmt::format("{}[{}]", r.path("dense_list"), k);
      const std::int64_t layer = hw::to_integer(doc, (*list)[k], at, 0, layers - 1);
      if (std::find(moe.dense_list.begin(), moe.dense_list.end(), layer) != moe.dense_list.end()) {
        doc.fail((*list)[k], at, fmt::format("layer {} is listed twice", layer));
      }
      moe.dense_list.push_back(layer);
    }
  }
  bool any_moe = false;
  for (std::int64_t i = 0; i < layers && !any_moe; ++i) any_moe = moe.moe_layer(i);
  if (!any_moe) {
    r.fail(moe.dense_list.empty() ? "every" : "dense_list",
           fmt::format("no layer is MoE (dense_layers {}, every {}, phase {}, {} listed dense, of "
                       "{} layers): leave out moe for a dense model",
                       moe.dense_layers, moe.every, moe.phase, moe.dense_list.size(), layers));
  }

  // Routing.
  if (const auto scoring = optional_choice(r, "scoring", {"softmax", "sigmoid"})) {
    moe.scoring = *scoring == "sigmoid" ? RouterScoring::kSigmoid : RouterScoring::kSoftmax;
  }
  if (const auto method =
          optional_choice(r, "topk_method", {"greedy", "group_limited_greedy", "noaux_tc"})) {
    moe.topk_method = *method == "greedy"                 ? TopkMethod::kGreedy
                      : *method == "group_limited_greedy" ? TopkMethod::kGroupLimitedGreedy
                                                          : TopkMethod::kNoauxTc;
  }
  moe.groups = r.optional_integer("groups", 1, kMaxExperts).value_or(1);
  if (moe.experts % moe.groups != 0) {
    r.fail("groups",
           fmt::format("experts ({}) is not divisible by groups ({})", moe.experts, moe.groups));
  }
  moe.topk_groups = r.optional_integer("topk_groups", 1, kMaxExperts).value_or(1);
  if (moe.topk_groups > moe.groups) {
    r.fail("topk_groups",
           fmt::format("topk_groups ({}) is more than groups ({})", moe.topk_groups, moe.groups));
  }
  if (moe.topk_method != TopkMethod::kGreedy) {
    const std::int64_t per_group = moe.experts / moe.groups;
    if (moe.topk_method == TopkMethod::kNoauxTc && per_group < 2) {
      r.fail("groups",
             fmt::format("groups of {} expert: noaux_tc scores a group by its best 2", per_group));
    }
    if (moe.top_k > moe.topk_groups * per_group) {
      r.fail("top_k", fmt::format("top_k ({}) is more than the experts of the topk_groups ({}) "
                                  "groups kept ({})",
                                  moe.top_k, moe.topk_groups, moe.topk_groups * per_group));
    }
  }
  moe.routed_scaling = optional_positive(r, "routed_scaling", 1e6).value_or(1.0);
  moe.router_fp32 = r.optional_boolean("router_fp32").value_or(false);
  moe.weights_in_dtype = r.optional_boolean("weights_in_dtype").value_or(false);
  return moe;
}

MlaConfig read_mla(const hw::YamlDocument& doc, const YAML::Node& node, const std::string& path) {
  hw::MappingReader r(doc, node, path);
  declare_keys(r, {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                   "v_head_dim", "rope_interleave"});
  MlaConfig mla;
  mla.q_lora_rank = r.optional_integer("q_lora_rank", 0, kMaxWidth).value_or(0);
  mla.kv_lora_rank = r.integer("kv_lora_rank", 1, kMaxWidth);
  mla.qk_nope_head_dim = r.integer("qk_nope_head_dim", 0, kMaxHeadDim);
  mla.qk_rope_head_dim = r.integer("qk_rope_head_dim", 2, kMaxHeadDim);
  if (mla.qk_rope_head_dim % 2 != 0) {
    r.fail("qk_rope_head_dim",
           fmt::format("{} is odd: RoPE rotates pairs of dimensions", mla.qk_rope_head_dim));
  }
  mla.v_head_dim = r.integer("v_head_dim", 1, kMaxHeadDim);
  mla.rope_interleave = r.optional_boolean("rope_interleave").value_or(false);
  if (mla.qk_head_dim() > kMaxHeadDim) {
    r.fail("qk_nope_head_dim", fmt::format("qk_nope_head_dim + qk_rope_head_dim ({}) is more "
                                           "than {}",
                                           mla.qk_head_dim(), kMaxHeadDim));
  }
  return mla;
}

// sliding_layers: a non-empty list of booleans, at most one per layer, at least one true.
std::vector<bool> read_sliding_layers(const hw::YamlDocument& doc, hw::MappingReader& r,
                                      const YAML::Node& list, std::int64_t layers) {
  if (!list.IsSequence() || list.size() == 0) {
    r.fail("sliding_layers", "expected a non-empty list of true/false, one per layer (repeated)");
  }
  if (static_cast<std::int64_t>(list.size()) > layers) {
    r.fail("sliding_layers", fmt::format("has {} entries for {} layers", list.size(), layers));
  }
  std::vector<bool> flags;
  for (std::size_t k = 0; k < list.size(); ++k) {
    flags.push_back(
        hw::to_boolean(doc, list[k], fmt::format("{}[{}]", r.path("sliding_layers"), k)));
  }
  if (std::find(flags.begin(), flags.end(), true) == flags.end()) {
    r.fail("sliding_layers", "no layer is windowed: leave out sliding_window instead");
  }
  return flags;
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
  declare_keys(r, {"name",
                   "layers",
                   "d_model",
                   "heads",
                   "kv_heads",
                   "head_dim",
                   "d_ff",
                   "vocab",
                   "max_positions",
                   "norm",
                   "norm_eps",
                   "activation",
                   "positions",
                   "rope_theta",
                   "qkv_bias",
                   "attn_out_bias",
                   "mlp_bias",
                   "tied_embeddings",
                   "moe",
                   "qk_norm",
                   "fused_qkv",
                   "fused_gate_up",
                   "rotary_fraction",
                   "rope_scaling",
                   "norm_weight_offset",
                   "sandwich_norms",
                   "embed_scale",
                   "attn_softcap",
                   "final_softcap",
                   "query_scale",
                   "sliding_window",
                   "sliding_layers",
                   "rope_local_theta",
                   "mla"});
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
  if (const auto mla = r.optional_node("mla")) {
    m.mla = read_mla(doc, *mla, r.path("mla"));
    if (m.kv_heads != m.heads) {
      r.fail("kv_heads", fmt::format("kv_heads ({}) must equal heads ({}) with mla: the latent "
                                     "is expanded to keys and values for every head",
                                     m.kv_heads, m.heads));
    }
  }
  if (const auto head_dim = r.optional_integer("head_dim", 1, kMaxHeadDim)) {
    m.head_dim = *head_dim;
    if (m.mla && m.head_dim != m.mla->qk_head_dim()) {
      r.fail("head_dim", fmt::format("head_dim ({}) differs from mla's qk_nope_head_dim + "
                                     "qk_rope_head_dim ({}), the query/key head dim",
                                     m.head_dim, m.mla->qk_head_dim()));
    }
  } else if (m.mla) {
    m.head_dim = m.mla->qk_head_dim();
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
  const std::string activation = r.choice("activation", {"gelu", "swiglu", "geglu"});
  m.activation = activation == "gelu"     ? Activation::kGelu
                 : activation == "swiglu" ? Activation::kSwiglu
                                          : Activation::kGeglu;
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

  // This year's families.
  const auto rope_only = [&](std::string_view key) {
    if (m.positions != Positions::kRope) r.fail(key, "is for positions: rope only");
  };
  m.qk_norm = r.optional_boolean("qk_norm").value_or(false);
  m.fused_qkv = r.optional_boolean("fused_qkv").value_or(false);
  m.fused_gate_up = r.optional_boolean("fused_gate_up").value_or(false);
  if (m.fused_gate_up && m.activation == Activation::kGelu) {
    r.fail("fused_gate_up", "needs a gated MLP (activation swiglu or geglu)");
  }
  if (const auto fraction = r.optional_node("rotary_fraction")) {
    rope_only("rotary_fraction");
    m.rotary_fraction = hw::to_number(doc, *fraction, r.path("rotary_fraction"), 0.0, 1.0);
    const auto rotary_dim =
        static_cast<std::int64_t>(static_cast<double>(m.head_dim) * m.rotary_fraction);
    if (rotary_dim < 2 || rotary_dim % 2 != 0) {
      r.fail("rotary_fraction",
             fmt::format("{} of head_dim {} rotates {} dimensions: it must be even and at least 2",
                         m.rotary_fraction, m.head_dim, rotary_dim));
    }
  }
  if (const auto scaling = optional_choice(
          r, "rope_scaling", {"default", "linear", "dynamic", "yarn", "longrope", "llama3"})) {
    rope_only("rope_scaling");
    m.rope_scaling = *scaling;
  }
  m.norm_weight_offset = r.optional_boolean("norm_weight_offset").value_or(false);
  if (m.norm_weight_offset && m.norm != Norm::kRmsNorm) {
    r.fail("norm_weight_offset", "is for norm: rmsnorm only");
  }
  m.sandwich_norms = r.optional_boolean("sandwich_norms").value_or(false);
  m.embed_scale = r.optional_boolean("embed_scale").value_or(false);
  m.attn_softcap = optional_positive(r, "attn_softcap", 1e9);
  m.final_softcap = optional_positive(r, "final_softcap", 1e9);
  m.query_scale = optional_positive(r, "query_scale", 1e9);
  m.sliding_window = r.optional_integer("sliding_window", 1, kMaxPositions);
  if (const auto list = r.optional_node("sliding_layers")) {
    if (!m.sliding_window) r.fail("sliding_layers", "is set but sliding_window is not");
    m.sliding_layers = read_sliding_layers(doc, r, *list, m.layers);
  }
  m.rope_local_theta = optional_positive(r, "rope_local_theta", kMaxRopeTheta);
  if (m.rope_local_theta) {
    rope_only("rope_local_theta");
    if (!m.sliding_window) r.fail("rope_local_theta", "is for windowed layers: set sliding_window");
  }
  if (m.mla) {
    rope_only("mla");
    if (m.qkv_bias || m.attn_out_bias) {
      r.fail(m.qkv_bias ? "qkv_bias" : "attn_out_bias",
             "is not supported with mla (its projections have no biases)");
    }
    if (m.fused_qkv) r.fail("fused_qkv", "does not apply to mla (its projections are its own)");
    if (m.qk_norm) r.fail("qk_norm", "does not apply to mla (its latents have their own norms)");
  }

  if (const auto moe = r.optional_node("moe")) {
    m.moe = read_moe(doc, *moe, r.path("moe"), m.layers);
  }
  bool has_dense_layers = !m.moe;
  for (std::int64_t i = 0; i < m.layers && !has_dense_layers; ++i) {
    has_dense_layers = !m.moe_layer(i);
  }
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
    case Activation::kGelu:
      return "gelu";
    case Activation::kSwiglu:
      return "swiglu";
    case Activation::kGeglu:
      return "geglu";
  }
  return "?";
}

std::string_view name(Positions positions) {
  return positions == Positions::kLearned ? "learned" : "rope";
}

std::string_view name(RouterScoring scoring) {
  return scoring == RouterScoring::kSigmoid ? "sigmoid" : "softmax";
}

std::string_view name(TopkMethod method) {
  switch (method) {
    case TopkMethod::kGreedy:
      return "greedy";
    case TopkMethod::kGroupLimitedGreedy:
      return "group_limited_greedy";
    case TopkMethod::kNoauxTc:
      return "noaux_tc";
  }
  return "?";
}

}  // namespace gpusim::workloads
