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
enum class Activation { kGelu, kSwiglu };
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
std::string_view name(Activation activation);  // "gelu", "swiglu"
std::string_view name(Positions positions);    // "learned", "rope"

}  // namespace gpusim::workloads
