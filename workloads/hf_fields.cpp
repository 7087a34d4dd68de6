#include "workloads/hf_fields.h"

#include <algorithm>

#include "sim/error.h"

namespace gpusim::workloads::hf {

// ---- locating keys in the text

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

void Source::fail(const std::string& key_path, const std::string& detail) const {
  const auto at = find_key(text_, key_path);
  throw ConfigError(label_, at == std::string_view::npos ? 0 : line_at(text_, at), key_path,
                    detail);
}

std::string describe(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "a list";
  return value.dump();
}

// ---- Fields

std::optional<std::int64_t> Fields::optional_integer(std::string_view key, std::int64_t min,
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

std::int64_t Fields::size(std::string_view key, std::int64_t max) const {
  if (!written(key)) fail(key, "missing required key");
  if (!value(key)) fail(key, "has no value");
  return *optional_integer(key, 1, max);
}

std::optional<double> Fields::optional_positive(std::string_view key, double max) const {
  const auto x = optional_number(key);
  if (!x) return std::nullopt;
  if (!(*x > 0)) fail(key, "must be greater than 0");
  if (*x > max) fail(key, fmt::format("{} is more than {}", *x, max));
  return x;
}

std::optional<double> Fields::optional_number(std::string_view key) const {
  const json* v = value(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(key, "expected a number, got " + describe(*v));
  return v->get<double>();
}

bool Fields::boolean(std::string_view key, bool fallback) const {
  const json* v = value(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + describe(*v));
  return v->get<bool>();
}

std::string Fields::text(std::string_view key, std::string_view fallback) const {
  const json* v = value(key);
  if (!v) return std::string(fallback);
  if (!v->is_string()) fail(key, "expected a string, got " + describe(*v));
  return v->get<std::string>();
}

std::optional<Fields> Fields::object(std::string_view key) const {
  const json* v = value(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) fail(key, "expected an object, got " + describe(*v));
  return Fields(source_, *v, path(key));
}

const json* Fields::list(std::string_view key) const {
  const json* v = value(key);
  if (v && !v->is_array()) fail(key, "expected a list, got " + describe(*v));
  return v;
}

// ---- shared pieces

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
    if (keys.head_dim_default) {
      m.head_dim = *keys.head_dim_default;
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

void require_silu(const Fields& c, std::string_view model_type) {
  const std::string act = c.text("hidden_act", kHiddenAct);
  if (act != kHiddenAct) {
    c.fail("hidden_act", fmt::format("'{}' is not supported: {} is read as a SwiGLU MLP, whose "
                                     "gate uses silu",
                                     act, model_type));
  }
}

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

namespace {
// The RoPE types of transformers 5.17's ROPE_INIT_FUNCTIONS that ModelConfig names, and
// "default". (Its "proportional" type is not modeled.)
constexpr std::string_view kRopeTypes[] = {"default", "linear",   "dynamic",
                                           "yarn",    "longrope", "llama3"};
}  // namespace

std::string read_rope_type(const Fields& params) {
  // standardize_rope_params: rope_type, else the legacy `type`, else "default".
  const char* key = params.value("rope_type") ? "rope_type" : "type";
  const std::string type = params.text(key, "default");
  if (std::find(std::begin(kRopeTypes), std::end(kRopeTypes), type) == std::end(kRopeTypes)) {
    params.fail(key, fmt::format("'{}' is not supported (default, linear, dynamic, yarn, "
                                 "longrope or llama3)",
                                 type));
  }
  return type;
}

std::string read_rope_scaling(const Fields& c) {
  const auto params = c.object("rope_parameters");
  const auto legacy = c.object("rope_scaling");
  if (!params && !legacy) return "default";
  if (!legacy) return read_rope_type(*params);
  // transformers 5.17 takes rope_scaling over rope_parameters when a file writes both.
  const std::string type = read_rope_type(*legacy);
  if (params) {
    const std::string other = read_rope_type(*params);
    if (other != type) {
      c.fail("rope_scaling",
             fmt::format("its RoPE type '{}' differs from rope_parameters' ('{}')", type, other));
    }
  }
  return type;
}

std::optional<std::vector<bool>> read_layer_types(const Fields& c, std::int64_t layers) {
  const json* types = c.list("layer_types");
  if (!types) return std::nullopt;
  if (static_cast<std::int64_t>(types->size()) != layers) {
    c.fail("layer_types",
           fmt::format("has {} entries for {} layers (num_hidden_layers)", types->size(), layers));
  }
  std::vector<bool> windowed;
  for (std::size_t i = 0; i < types->size(); ++i) {
    const json& t = (*types)[i];
    const std::string s = t.is_string() ? t.get<std::string>() : "";
    if (s != "sliding_attention" && s != "full_attention") {
      c.fail("layer_types", fmt::format("entry {} is {}: only sliding_attention and "
                                        "full_attention are supported",
                                        i, describe(t)));
    }
    windowed.push_back(s == "sliding_attention");
  }
  return windowed;
}

void set_sliding(const Fields& c, std::optional<std::int64_t> window,
                 const std::vector<bool>& windowed, std::string_view window_key,
                 std::string_view why, ModelConfig& m) {
  const auto n = std::count(windowed.begin(), windowed.end(), true);
  m.sliding_window.reset();
  m.sliding_layers.clear();
  if (n == 0) return;
  if (!window) {
    c.fail(window_key, fmt::format("{}, but layer_types makes {} of {} layers sliding_attention",
                                   why, n, windowed.size()));
  }
  m.sliding_window = window;
  if (n != static_cast<std::int64_t>(windowed.size())) m.sliding_layers = windowed;
}

void read_qwen_window(const Fields& c, std::int64_t max_window_layers_default, ModelConfig& m) {
  // Qwen2Config / Qwen3Config.__post_init__: sliding_window = sliding_window if
  // use_sliding_window else None; layer_types, when not given, is sliding_attention for layers
  // i >= max_window_layers when there is a window.
  const bool use = c.boolean("use_sliding_window", false);
  const auto window =
      use ? c.optional_integer("sliding_window", 1, limits::kMaxPositions) : std::nullopt;
  std::vector<bool> windowed;
  if (const auto types = read_layer_types(c, m.layers)) {
    windowed = *types;
  } else {
    const std::int64_t first = c.optional_integer("max_window_layers", 0, limits::kMaxLayers)
                                   .value_or(max_window_layers_default);
    for (std::int64_t i = 0; i < m.layers; ++i) windowed.push_back(window && i >= first);
  }
  if (!use) {
    set_sliding(c, std::nullopt, windowed, "use_sliding_window",
                "is false (or not given), so there is no window", m);
  } else {
    set_sliding(c, window, windowed, "sliding_window", "is null", m);
  }
}

}  // namespace gpusim::workloads::hf
