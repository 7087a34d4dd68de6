// Hugging Face readers for deepseek_v2 and deepseek_v3: multi-head latent attention (MLA), or
// plain multi-head attention for deepseek_v2 files whose kv_lora_rank is null (DeepSeek-OCR's
// decoder), and MoE layers with shared experts after the first first_k_dense_replace dense ones.
//
// For MLA models head_dim is the query/key head dim qk_nope_head_dim + qk_rope_head_dim (192
// for DeepSeek-V2/V3), the width q_proj (or q_b_proj) gives each head; transformers' own
// config sets head_dim to qk_rope_head_dim, which is not read. kv_heads equals heads: kv_b_proj
// expands the latent to keys and values for every head.
#include <limits>

#include "workloads/hf_fields.h"

namespace gpusim::workloads::hf {
namespace {

// transformers 5.17's DeepseekV2Config and DeepseekV3Config defaults
// (configuration_deepseek_v2.py, configuration_deepseek_v3.py;
// validation/data/hf_defaults_transformers-5.17.json has deepseek_v2's).
struct DeepseekVersion {
  std::string_view model_type;
  std::optional<std::int64_t> num_key_value_heads;  // nullopt: num_attention_heads
  std::int64_t n_routed_experts;
  std::int64_t n_shared_experts;
  std::int64_t moe_intermediate_size;
  bool norm_topk_prob;
  std::optional<std::int64_t> num_experts_per_tok;
  std::int64_t first_k_dense_replace;
  std::optional<std::int64_t> n_group;
  std::optional<std::int64_t> topk_group;
  double routed_scaling_factor;
};
constexpr DeepseekVersion kV2{"deepseek_v2", std::nullopt, 64, 2, 1407, false, std::nullopt, 0,
                              std::nullopt,  std::nullopt, 1.0};
constexpr DeepseekVersion kV3{"deepseek_v3", 128, 256, 1, 2048, true, 8, 3, 8, 4, 2.5};
constexpr double kDeepseekRmsNormEps = 1e-6;
constexpr double kDeepseekRopeTheta = 10000.0;
constexpr bool kDeepseekTieWordEmbeddings = false;
// MLA: both classes' defaults.
constexpr std::int64_t kDeepseekKvLoraRank = 512;  // not null: MLA unless a file says null
constexpr std::int64_t kDeepseekQLoraRank = 1536;
constexpr std::int64_t kDeepseekQkNopeHeadDim = 128;
constexpr std::int64_t kDeepseekQkRopeHeadDim = 64;
constexpr std::int64_t kDeepseekVHeadDim = 128;

bool is_v3(const DeepseekVersion& v) {
  return v.model_type == kV3.model_type;
}

// Checks every version makes before reading the model.
void check_unsupported(const Fields& c, const DeepseekVersion& v) {
  if (c.boolean("attention_bias", false)) {
    c.fail("attention_bias",
           fmt::format("attention biases are not supported for {}", v.model_type));
  }
  if (!is_v3(v) && c.boolean("mlp_bias", false)) {
    c.fail("mlp_bias", "MLP biases are not supported for deepseek_v2");
  }
  if (!c.boolean("lm_head", true)) c.fail("lm_head", "a model without lm_head is not supported");
  // Neither class has moe_layer_freq: transformers 5.17 makes every layer after the dense ones
  // MoE, where DeepSeek's own code would skip layers. Only 1 means the same in both.
  const auto layer_freq = c.optional_integer("moe_layer_freq", 1, limits::kMaxLayers);
  if (layer_freq.value_or(1) != 1) {
    c.fail("moe_layer_freq", "only 1 is supported (every layer after the dense ones is MoE)");
  }
}

// Multi-head latent attention: heads, kv_heads, head_dim and m.mla.
void read_mla(const Fields& c, const DeepseekVersion& v, ModelConfig& m) {
  m.heads = c.size("num_attention_heads", limits::kMaxHeads);
  const auto kv = c.optional_integer("num_key_value_heads", 1, limits::kMaxHeads);
  const bool use_default = !c.written("num_key_value_heads") && v.num_key_value_heads;
  const std::int64_t kv_heads = kv ? *kv : use_default ? *v.num_key_value_heads : m.heads;
  if (kv_heads != m.heads) {
    c.fail(
        "num_key_value_heads",
        fmt::format("{}{} differs from num_attention_heads ({}): multi-head latent attention "
                    "expands keys and values to every head",
                    kv_heads, use_default ? " (the default when the key is absent)" : "", m.heads));
  }
  m.kv_heads = m.heads;

  MlaConfig mla;
  // q_lora_rank null: q_proj straight from the hidden state.
  mla.q_lora_rank = c.written("q_lora_rank")
                        ? c.optional_integer("q_lora_rank", 1, limits::kMaxWidth).value_or(0)
                        : kDeepseekQLoraRank;
  const auto kv_rank = c.optional_integer("kv_lora_rank", std::numeric_limits<std::int64_t>::min(),
                                          limits::kMaxWidth);
  mla.kv_lora_rank = kv_rank.value_or(kDeepseekKvLoraRank);
  if (mla.kv_lora_rank <= 0) {
    c.fail("kv_lora_rank", fmt::format("{} must be greater than 0 (the rank of multi-head latent "
                                       "attention's key/value latent)",
                                       mla.kv_lora_rank));
  }
  mla.qk_nope_head_dim = c.optional_integer("qk_nope_head_dim", 0, limits::kMaxHeadDim)
                             .value_or(kDeepseekQkNopeHeadDim);
  mla.qk_rope_head_dim = c.optional_integer("qk_rope_head_dim", 2, limits::kMaxHeadDim)
                             .value_or(kDeepseekQkRopeHeadDim);
  if (mla.qk_rope_head_dim % 2 != 0) {
    c.fail("qk_rope_head_dim",
           fmt::format("{} is odd: RoPE rotates pairs of dimensions", mla.qk_rope_head_dim));
  }
  mla.v_head_dim =
      c.optional_integer("v_head_dim", 1, limits::kMaxHeadDim).value_or(kDeepseekVHeadDim);
  // DeepseekV3Attention rotates interleaved pairs when rope_interleave (default true);
  // DeepseekV2Attention always uses the complex form.
  mla.rope_interleave = is_v3(v) && c.boolean("rope_interleave", true);
  m.head_dim = mla.qk_head_dim();
  if (m.head_dim > limits::kMaxHeadDim) {
    c.fail("qk_nope_head_dim", fmt::format("qk_nope_head_dim + qk_rope_head_dim ({}) is more "
                                           "than {}",
                                           m.head_dim, limits::kMaxHeadDim));
  }
  // The query/key head dim some files state (transformers derives it).
  if (const auto stated = c.optional_integer("qk_head_dim", 1, limits::kMaxHeadDim)) {
    if (*stated != m.head_dim) {
      c.fail("qk_head_dim",
             fmt::format("{} differs from qk_nope_head_dim + qk_rope_head_dim ({} + {})", *stated,
                         mla.qk_nope_head_dim, mla.qk_rope_head_dim));
    }
  }
  m.mla = mla;
}

// The router: scores, top-k method and groups, scaling.
void read_routing(const Fields& c, const DeepseekVersion& v, MoeConfig& moe) {
  if (is_v3(v)) {
    // DeepseekV3TopkRouter always routes as noaux_tc: sigmoid scores, plus the correction bias
    // for the choice, top-2 sums per group, topk_group groups kept.
    const std::string method = c.text("topk_method", "noaux_tc");
    if (method != "noaux_tc") {
      c.fail("topk_method", fmt::format("'{}' is not how deepseek_v3 routes: transformers' "
                                        "DeepseekV3TopkRouter always uses noaux_tc",
                                        method));
    }
    const std::string scoring = c.text("scoring_func", "sigmoid");
    if (scoring != "sigmoid") {
      c.fail("scoring_func", fmt::format("'{}' is not how deepseek_v3 routes: "
                                         "DeepseekV3TopkRouter scores with a sigmoid",
                                         scoring));
    }
    moe.topk_method = TopkMethod::kNoauxTc;
    moe.scoring = RouterScoring::kSigmoid;
  } else {
    // DeepseekV2TopkRouter: softmax scores, greedy or group_limited_greedy.
    const std::string method = c.text("topk_method", "greedy");
    if (method == "greedy") {
      moe.topk_method = TopkMethod::kGreedy;
    } else if (method == "group_limited_greedy") {
      moe.topk_method = TopkMethod::kGroupLimitedGreedy;
    } else {
      c.fail("topk_method", fmt::format("'{}' is not supported for deepseek_v2 (greedy or "
                                        "group_limited_greedy; noaux_tc is deepseek_v3's)",
                                        method));
    }
    const std::string scoring = c.text("scoring_func", "softmax");
    if (scoring != "softmax") {
      c.fail("scoring_func", fmt::format("'{}' is not supported for deepseek_v2, whose router "
                                         "scores with a softmax",
                                         scoring));
    }
    moe.scoring = RouterScoring::kSoftmax;
  }
  const bool grouped = moe.topk_method != TopkMethod::kGreedy;
  const auto n_group =
      c.written("n_group") ? c.optional_integer("n_group", 1, limits::kMaxExperts) : v.n_group;
  const auto topk_group = c.written("topk_group")
                              ? c.optional_integer("topk_group", 1, limits::kMaxExperts)
                              : v.topk_group;
  if (grouped && !n_group) {
    c.fail("n_group", fmt::format("is null, but the router's {} groups the experts",
                                  is_v3(v) ? "noaux_tc" : "group_limited_greedy"));
  }
  if (grouped && !topk_group) {
    c.fail("topk_group", fmt::format("is null, but the router's {} keeps topk_group groups",
                                     is_v3(v) ? "noaux_tc" : "group_limited_greedy"));
  }
  moe.groups = n_group.value_or(1);
  moe.topk_groups = topk_group.value_or(1);
  if (n_group && topk_group && *topk_group > *n_group) {
    c.fail("topk_group", fmt::format("{} is more than n_group ({})", *topk_group, *n_group));
  }
  if (n_group && moe.experts % *n_group != 0) {
    c.fail("n_group", fmt::format("n_routed_experts ({}) is not divisible by n_group ({})",
                                  moe.experts, *n_group));
  }
  if (grouped) {
    const std::int64_t per_group = moe.experts / moe.groups;
    if (is_v3(v) && per_group < 2) {
      c.fail("n_group", fmt::format("{} groups of {} leave fewer than the 2 experts per group "
                                    "noaux_tc scores a group by",
                                    moe.groups, per_group));
    }
    if (moe.top_k > moe.topk_groups * per_group) {
      c.fail("num_experts_per_tok",
             fmt::format("{} is more than the experts in the topk_group ({}) groups kept ({})",
                         moe.top_k, moe.topk_groups, moe.topk_groups * per_group));
    }
  }
  moe.routed_scaling =
      c.optional_positive("routed_scaling_factor", 1e6).value_or(v.routed_scaling_factor);
}

ModelConfig read_deepseek(const Fields& c, const DeepseekVersion& v, bool mla) {
  check_unsupported(c, v);
  ModelConfig m;
  m.d_model = c.size("hidden_size", limits::kMaxWidth);
  m.layers = c.size("num_hidden_layers", limits::kMaxLayers);
  if (mla) {
    read_mla(c, v, m);
  } else {
    read_attention_shape(
        c, {"hidden_size", "num_attention_heads", "num_key_value_heads", v.num_key_value_heads, ""},
        m);
  }
  m.vocab = c.size("vocab_size", limits::kMaxVocab);
  read_rms_norm(c, kDeepseekRmsNormEps, m);
  require_silu(c, v.model_type);
  m.activation = Activation::kSwiglu;
  m.positions = Positions::kRope;
  m.rope_theta = read_rope_theta(c, kDeepseekRopeTheta);
  if (mla) m.rope_scaling = read_rope_scaling(c);
  m.tied_embeddings = c.boolean("tie_word_embeddings", kDeepseekTieWordEmbeddings);

  // n_routed_experts null means no MoE layers; so does a first_k_dense_replace covering them all.
  const auto experts = c.written("n_routed_experts")
                           ? c.optional_integer("n_routed_experts", 1, limits::kMaxExperts)
                           : std::optional<std::int64_t>(v.n_routed_experts);
  const std::int64_t dense_layers =
      c.optional_integer("first_k_dense_replace", 0, limits::kMaxLayers)
          .value_or(v.first_k_dense_replace);
  if (!experts || dense_layers >= m.layers) {
    m.d_ff = c.size("intermediate_size", limits::kMaxWidth);
    return m;
  }
  MoeConfig moe;
  moe.experts = *experts;
  const auto top_k = c.optional_integer("num_experts_per_tok", 1, limits::kMaxExperts);
  if (!top_k && !v.num_experts_per_tok) {
    c.fail("num_experts_per_tok",
           fmt::format("missing: the MoE layers (n_routed_experts {}) need it", moe.experts));
  }
  moe.top_k = top_k ? *top_k : *v.num_experts_per_tok;
  if (moe.top_k > moe.experts) {
    c.fail("num_experts_per_tok",
           fmt::format("{} is more than n_routed_experts ({})", moe.top_k, moe.experts));
  }
  moe.expert_d_ff = c.optional_integer("moe_intermediate_size", 1, limits::kMaxWidth)
                        .value_or(v.moe_intermediate_size);
  // Null means none (DeepseekV2MoE builds its shared experts only when the count is set).
  moe.shared_experts =
      c.written("n_shared_experts")
          ? c.optional_integer("n_shared_experts", 0, limits::kMaxSharedExperts).value_or(0)
          : v.n_shared_experts;
  moe.shared_expert_d_ff = moe.expert_d_ff;
  moe.dense_layers = dense_layers;
  moe.norm_topk_prob = c.boolean("norm_topk_prob", v.norm_topk_prob);
  if (mla) {
    read_routing(c, v, moe);
    // DeepseekV2/V3TopkRouter: F.linear(hidden.float(), weight.float()).
    moe.router_fp32 = true;
  }
  m.moe = moe;
  m.d_ff = dense_layers > 0 ? c.size("intermediate_size", limits::kMaxWidth) : 0;
  return m;
}

}  // namespace

ModelConfig read_deepseek_v2(const Fields& c) {
  // MLA unless kv_lora_rank is null (DeepseekV2Config's default is 512). DeepSeek's own
  // configs may say use_mla, which must agree.
  const bool mla = !c.written("kv_lora_rank") || c.value("kv_lora_rank") != nullptr;
  if (c.written("use_mla")) {
    const bool use_mla = c.boolean("use_mla", false);
    if (use_mla && !mla) {
      c.fail("use_mla",
             "is true, but kv_lora_rank is null: multi-head latent attention (MLA) "
             "needs the latent's rank");
    }
    if (!use_mla && mla) {
      c.fail("kv_lora_rank",
             c.written("kv_lora_rank")
                 ? std::string("is set (multi-head latent attention, MLA), but use_mla is false")
                 : fmt::format("is not given, so DeepseekV2Config's default {} applies: "
                               "multi-head latent attention (MLA), but use_mla is false",
                               kDeepseekKvLoraRank));
    }
  }
  return read_deepseek(c, kV2, mla);
}

ModelConfig read_deepseek_v3(const Fields& c) {
  if (c.written("kv_lora_rank") && !c.value("kv_lora_rank")) {
    c.fail("kv_lora_rank", "is null: deepseek_v3 always uses multi-head latent attention (MLA)");
  }
  if (c.written("use_mla") && !c.boolean("use_mla", true)) {
    c.fail("use_mla", "is false: deepseek_v3 always uses multi-head latent attention (MLA)");
  }
  return read_deepseek(c, kV3, true);
}

}  // namespace gpusim::workloads::hf
