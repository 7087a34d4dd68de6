// The architecture of a decoder-only transformer: what a model-level workload runs, read from a
// preset in configs/models/ or from fields written inline in the workload.
//
// A model file and an inline model have the same form, a mapping under the key `model`:
//
//   model:
//     name: llama3-8b          # optional; a preset's name must match its file name
//     layers: 32
//     d_model: 4096
//     heads: 32
//     kv_heads: 8              # default: heads
//     head_dim: 128            # default: d_model / heads
//     d_ff: 14336              # MLP width of dense layers (omit when every layer is MoE)
//     vocab: 128256
//     max_positions: 1024      # learned positions only
//     norm: rmsnorm            # layernorm (weight and bias) | rmsnorm (weight)
//     norm_eps: 1.0e-5         # optional
//     activation: swiglu       # gelu (up, down) | swiglu (gate, up, down)
//     positions: rope          # learned | rope
//     rope_theta: 500000       # optional, rope only
//     qkv_bias: false          # these four default to false
//     attn_out_bias: false
//     mlp_bias: false
//     tied_embeddings: false   # lm_head shares the token embedding
//     moe:                     # optional
//       experts: 8
//       top_k: 2
//       expert_d_ff: 14336
//       shared_experts: 0      # default 0
//       shared_expert_d_ff: 896  # default expert_d_ff
//       dense_layers: 0        # the first N layers use a dense MLP of width d_ff; default 0
//       norm_topk_prob: true   # optional: renormalize the top-k routing weights
//       every: 1               # MoE on layers i >= dense_layers with i % every == phase
//       phase: 0               #   (Qwen3-MoE decoder_sparse_step s: every s, phase s - 1)
//       dense_list: [0]        # more dense layers by index (Qwen3-MoE mlp_only_layers)
//       scoring: softmax       # router scores: softmax | sigmoid (DeepSeek-V3)
//       topk_method: greedy    # greedy | group_limited_greedy | noaux_tc (with the bias)
//       groups: 1              # n_group; topk_group: groups kept (grouped top-k)
//       topk_groups: 1
//       routed_scaling: 1.0    # routed_scaling_factor
//       router_fp32: false     # the gate GEMM in fp32 (DeepSeek)
//       weights_in_dtype: false # top-k weights cast to the model dtype (Qwen3-MoE; training)
//     # This year's families (issue 13); all optional, off by default:
//     qk_norm: false           # RMSNorm over head_dim on q and k before RoPE (Qwen3, Gemma 3)
//     fused_qkv: false         # one qkv_proj (Phi-3)
//     fused_gate_up: false     # one gate_up_proj (Phi-3)
//     rotary_fraction: 1.0     # share of head_dim RoPE rotates (partial_rotary_factor)
//     rope_scaling: default    # default | linear | dynamic | yarn | longrope | llama3
//     norm_weight_offset: false  # RMSNorm scales by (1 + weight) (Gemma)
//     sandwich_norms: false    # norms after attention and after the MLP too (Gemma 2/3)
//     embed_scale: false       # embeddings times sqrt(d_model) (Gemma)
//     attn_softcap: 50.0       # attention logit soft-capping (Gemma 2)
//     final_softcap: 30.0      # final logit soft-capping (Gemma 2)
//     query_scale: 256         # scores scaled by query_scale^-0.5 (query_pre_attn_scalar)
//     sliding_window: 4096     # keys a windowed layer attends (itself included)
//     sliding_layers: [true, false]  # per layer, repeated over the layers; default: all windowed
//     rope_local_theta: 10000  # RoPE base of windowed layers when it differs (Gemma 3)
//     mla:                     # multi-head latent attention (DeepSeek-V2/V3)
//       q_lora_rank: 0         # 0: q projected directly
//       kv_lora_rank: 512
//       qk_nope_head_dim: 128
//       qk_rope_head_dim: 64
//       v_head_dim: 128
//       rope_interleave: false  # interleaved real RoPE (DeepSeek-V3) instead of complex (V2)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/yaml_document.h"

namespace gpusim::workloads {

// Bounds on model fields, shared by every reader of model configurations (model files and
// Hugging Face config.json): well above any published model, and low enough that parameter
// counts fit int64.
namespace model_limits {
inline constexpr std::int64_t kMaxLayers = 1024;
inline constexpr std::int64_t kMaxWidth = std::int64_t{1} << 20;  // d_model, d_ff, expert widths
inline constexpr std::int64_t kMaxHeads = 1024;
inline constexpr std::int64_t kMaxHeadDim = 16384;
inline constexpr std::int64_t kMaxVocab = std::int64_t{1} << 22;
inline constexpr std::int64_t kMaxPositions = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxExperts = 1024;
inline constexpr std::int64_t kMaxSharedExperts = 64;
inline constexpr double kMaxNormEps = 1.0;
inline constexpr double kMaxRopeTheta = 1e12;
}  // namespace model_limits

enum class Norm { kLayerNorm, kRmsNorm };
enum class Activation {
  kGelu,    // up, GELU, down (GPT-2)
  kSwiglu,  // silu(gate) * up, down
  kGeglu,   // gelu_tanh(gate) * up, down (Gemma)
};
enum class RouterScoring { kSoftmax, kSigmoid };
enum class TopkMethod { kGreedy, kGroupLimitedGreedy, kNoauxTc };
enum class Positions { kLearned, kRope };

struct MoeConfig {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_d_ff = 0;
  // DeepSeek-V2 runs its shared experts as one MLP of width shared_experts * shared_expert_d_ff;
  // the parameters are the same either way.
  std::int64_t shared_experts = 0;
  std::int64_t shared_expert_d_ff = 0;
  std::int64_t dense_layers = 0;  // the first N layers are dense (DeepSeek first_k_dense_replace)
  std::optional<bool> norm_topk_prob;
  // Which layers after the dense prefix are MoE: i % every == phase, and i not in dense_list.
  std::int64_t every = 1;
  std::int64_t phase = 0;
  std::vector<std::int64_t> dense_list;
  RouterScoring scoring = RouterScoring::kSoftmax;
  TopkMethod topk_method = TopkMethod::kGreedy;
  std::int64_t groups = 1;       // n_group
  std::int64_t topk_groups = 1;  // topk_group
  double routed_scaling = 1.0;   // routed_scaling_factor
  // DeepSeek's router: the gate GEMM in fp32 (hidden state and weight cast up), its scores
  // scaled by routed_scaling; others run the gate in the model dtype and softmax in fp32.
  bool router_fp32 = false;
  // Qwen3-MoE's router casts its top-k weights to the hidden states' type (the experts weight
  // and sum in it); Mixtral's stay fp32 (the weighting promotes). Used by the training lowering.
  bool weights_in_dtype = false;

  bool moe_layer(std::int64_t i) const {
    if (i < dense_layers || i % every != phase) return false;
    for (const std::int64_t d : dense_list) {
      if (d == i) return false;
    }
    return true;
  }
};

// Multi-head latent attention (DeepSeek-V2/V3): keys and values come from a compressed latent of
// kv_lora_rank per token (plus a shared RoPE key of qk_rope_head_dim).
struct MlaConfig {
  std::int64_t q_lora_rank = 0;  // 0: q is projected from the hidden state directly
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  // RoPE on interleaved pairs with a cos/sin table (DeepSeek-V3's rope_interleave); false:
  // DeepSeek-V2's complex form.
  bool rope_interleave = false;
  std::int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

struct ModelConfig {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t d_model = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t d_ff = 0;  // 0 when every layer is MoE
  std::int64_t vocab = 0;
  std::optional<std::int64_t> max_positions;  // learned positions only
  Norm norm = Norm::kRmsNorm;
  std::optional<double> norm_eps;
  Activation activation = Activation::kSwiglu;
  Positions positions = Positions::kRope;
  std::optional<double> rope_theta;
  bool qkv_bias = false;
  bool attn_out_bias = false;
  bool mlp_bias = false;
  bool tied_embeddings = false;
  std::optional<MoeConfig> moe;

  // This year's families (see the file comment); defaults leave a model as before.
  bool qk_norm = false;
  bool fused_qkv = false;
  bool fused_gate_up = false;
  double rotary_fraction = 1.0;
  std::string rope_scaling = "default";
  bool norm_weight_offset = false;
  bool sandwich_norms = false;
  bool embed_scale = false;
  std::optional<double> attn_softcap;
  std::optional<double> final_softcap;
  std::optional<double> query_scale;
  std::optional<std::int64_t> sliding_window;
  std::vector<bool> sliding_layers;  // repeated over the layers; empty: every layer
  std::optional<double> rope_local_theta;
  std::optional<MlaConfig> mla;

  // A Hugging Face config's `torch_dtype` (or `dtype`, which newer transformers writes) as
  // written, e.g. "bfloat16", and which key held it: the dtype of a workload that gives none.
  // Empty for presets and inline models.
  std::string hf_dtype, hf_dtype_key;

  // Whether layer i attends within the window.
  bool sliding_layer(std::int64_t i) const {
    if (!sliding_window) return false;
    if (sliding_layers.empty()) return true;
    return sliding_layers[static_cast<std::size_t>(i) % sliding_layers.size()];
  }
  bool moe_layer(std::int64_t i) const { return moe && moe->moe_layer(i); }
};

// Reads the model mapping `node` of `doc`; `key_path` prefixes error keys ("model"), and
// `default_name` is used when the mapping has no `name`. Bad input is a ConfigError.
ModelConfig read_model_config(const hw::YamlDocument& doc, const YAML::Node& node,
                              const std::string& key_path, const std::string& default_name);

// Reads a model file (a document whose only key is `model`). The name defaults to the file's
// stem, and a `name` written in the file must equal it.
ModelConfig load_model_file(const std::filesystem::path& file);

// The file of preset `name` in `models_dir`, or nullopt when there is none (or `name` is not a
// plain file name).
std::optional<std::filesystem::path> find_model_preset(std::string_view name,
                                                       const std::filesystem::path& models_dir);

// Names of the presets in `models_dir` (the stems of its .yaml files), sorted.
std::vector<std::string> model_preset_names(const std::filesystem::path& models_dir);

std::string_view name(Norm norm);              // "layernorm", "rmsnorm"
std::string_view name(Activation activation);  // "gelu", "swiglu", "geglu"
std::string_view name(Positions positions);    // "learned", "rope"
std::string_view name(RouterScoring scoring);  // "softmax", "sigmoid"
std::string_view name(TopkMethod method);      // "greedy", "group_limited_greedy", "noaux_tc"

}  // namespace gpusim::workloads
