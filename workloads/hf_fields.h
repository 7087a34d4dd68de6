// Internal to the Hugging Face config.json readers (hf_config.cpp and the hf_<family>.cpp files):
// typed lookups that report errors at the key's line, the pieces several model types share
// (attention shape, RMSNorm, RoPE, sliding windows), and the readers of each family.
//
// A reader takes the object that holds the model's fields (the file's root, or an object such
// as `text_config` inside it) and returns the model without its name. Each family's readers
// live in one file and are registered by one line in hf_config.cpp's table.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model_config.h"

namespace gpusim::workloads::hf {

using nlohmann::json;
namespace limits = model_limits;

// ---- locating keys in the text, for error lines

// Where the key at `key_path` ("language_config.num_attention_heads") is written in `text`, a
// well-formed JSON document; npos when it is not. Tracks the keys of the open objects, so that
// a key of the same name in another object is not taken for it.
std::size_t find_key(std::string_view text, std::string_view key_path);

// The 1-based line of `offset` in `text`.
int line_at(std::string_view text, std::size_t offset);

// The text and its label: errors name the label and the line of the key they are about.
class Source {
 public:
  Source(const std::string& text, const std::string& label) : text_(text), label_(label) {}

  // Fails at the line of `key_path`, or at line 0 when the key is not written.
  [[noreturn]] void fail(const std::string& key_path, const std::string& detail) const;

 private:
  const std::string& text_;
  const std::string& label_;
};

// A JSON value as an error message shows it.
std::string describe(const json& value);

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
                                               std::int64_t max) const;

  // A size the file must give: a whole number in [1, max].
  std::int64_t size(std::string_view key, std::int64_t max) const;

  std::optional<double> optional_positive(std::string_view key, double max) const;

  // A number, or nullopt when absent or null.
  std::optional<double> optional_number(std::string_view key) const;

  bool boolean(std::string_view key, bool fallback) const;

  std::string text(std::string_view key, std::string_view fallback) const;

  std::optional<Fields> object(std::string_view key) const;

  // The list at `key`, or nullptr when it is absent or null.
  const json* list(std::string_view key) const;

  // At the key's line, or at line 0 when it is not written.
  [[noreturn]] void fail(std::string_view key, const std::string& detail) const {
    source_.fail(path(key), detail);
  }

 private:
  const Source& source_;
  const json& object_;
  std::string prefix_;
};

// ---- pieces several model types share

inline constexpr std::string_view kHiddenAct = "silu";  // every llama-style class and DeepSeek

struct AttentionKeys {
  std::string_view d_model;  // for messages
  std::string_view heads;
  std::string_view kv_heads;                     // empty: no grouped-query attention
  std::optional<std::int64_t> kv_heads_default;  // when kv_heads is absent; nullopt: heads
  std::string_view head_dim;                     // empty: always d_model / heads
  std::optional<std::int64_t> head_dim_default = std::nullopt;  // absent: d_model / heads
};

// Sets heads, kv_heads and head_dim; m.d_model must be set.
void read_attention_shape(const Fields& c, const AttentionKeys& keys, ModelConfig& m);

// SwiGLU needs SiLU as its gate's activation.
void require_silu(const Fields& c, std::string_view model_type);

// Transformers 5 writes rope_parameters.rope_theta; older files write rope_theta.
double read_rope_theta(const Fields& c, double fallback);

void read_rms_norm(const Fields& c, double eps_fallback, ModelConfig& m);

// The RoPE type of `params` (a rope_parameters or legacy rope_scaling object): its rope_type,
// or its legacy `type`; "default" when neither is written. Types transformers 5.17 does not
// know are errors.
std::string read_rope_type(const Fields& params);

// The RoPE type of the model: rope_parameters (transformers 5) or the legacy rope_scaling;
// "default" when neither is written. A file that writes both with different types is an error.
std::string read_rope_scaling(const Fields& c);

// `layer_types` ("sliding_attention" / "full_attention", one per layer) as windowed flags;
// nullopt when absent. Wrong lengths and unknown entries are errors.
std::optional<std::vector<bool>> read_layer_types(const Fields& c, std::int64_t layers);

// Sets m.sliding_window and m.sliding_layers from the window a file gives (nullopt: none) and
// which layers use it: no windowed layer leaves both empty; every layer windowed leaves
// sliding_layers empty; otherwise one entry per layer. Windowed layers without a window are an
// error at `window_key` (the key that left the window out, with `why`).
void set_sliding(const Fields& c, std::optional<std::int64_t> window,
                 const std::vector<bool>& windowed, std::string_view window_key,
                 std::string_view why, ModelConfig& m);

// Qwen2 and Qwen3: the window applies when use_sliding_window is true; layer_types, when not
// written, makes layers from max_window_layers on windowed (as their config classes do).
void read_qwen_window(const Fields& c, std::int64_t max_window_layers_default, ModelConfig& m);

// ---- the readers, one file per family

// hf_llama_family.cpp
ModelConfig read_llama(const Fields& c);
ModelConfig read_mistral(const Fields& c);
ModelConfig read_qwen2(const Fields& c);
ModelConfig read_mixtral(const Fields& c);
// hf_gpt2.cpp
ModelConfig read_gpt2(const Fields& c);
// hf_deepseek.cpp
ModelConfig read_deepseek_v2(const Fields& c);
ModelConfig read_deepseek_v3(const Fields& c);
// hf_qwen3.cpp
ModelConfig read_qwen3(const Fields& c);
ModelConfig read_qwen3_moe(const Fields& c);
// hf_gemma.cpp
ModelConfig read_gemma2(const Fields& c);
ModelConfig read_gemma3_text(const Fields& c);
ModelConfig read_gemma3(const Fields& c);  // the text model under text_config
// hf_phi3.cpp
ModelConfig read_phi3(const Fields& c);

}  // namespace gpusim::workloads::hf
