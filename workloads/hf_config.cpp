#include "workloads/hf_config.h"

#include <fmt/format.h>

#include <string_view>

#include "sim/error.h"
#include "sim/input_file.h"
#include "workloads/hf_fields.h"

namespace gpusim::workloads {
namespace {

using hf::Fields;
using hf::json;
using hf::Source;

// The model types read, each by one reader (one file per family: workloads/hf_<family>.cpp).
struct Reader {
  std::string_view model_type;
  ModelConfig (*read)(const Fields&);
};
constexpr Reader kReaders[] = {
    {"llama", hf::read_llama},
    {"mistral", hf::read_mistral},
    {"qwen2", hf::read_qwen2},
    {"mixtral", hf::read_mixtral},
    {"gpt2", hf::read_gpt2},
    {"deepseek_v2", hf::read_deepseek_v2},
    {"deepseek_v3", hf::read_deepseek_v3},
    {"qwen3", hf::read_qwen3},
    {"qwen3_moe", hf::read_qwen3_moe},
    {"gemma2", hf::read_gemma2},
    {"gemma3_text", hf::read_gemma3_text},
    {"gemma3", hf::read_gemma3},
    {"phi3", hf::read_phi3},
};

constexpr std::string_view kSupportedTypes =
    "llama, mistral, qwen2, mixtral, gpt2, deepseek_v2, deepseek_v3, qwen3, qwen3_moe, gemma2, "
    "gemma3_text, gemma3 (its text_config), phi3, and deepseek_vl_v2 (its language_config)";

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
    return hf::read_deepseek_v2(*language);
  }
  if (!top.value("model_type")) top.fail("model_type", "missing required key");
  const std::string type = top.text("model_type", "");
  for (const Reader& reader : kReaders) {
    if (type == reader.model_type) return reader.read(top);
  }
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
    const int line = hf::line_at(json_text, e.byte == 0 ? 0 : e.byte - 1);
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
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (m.hf_dtype.empty() && root.contains(key) && root[key].is_string()) {
      m.hf_dtype = root[key].get<std::string>();
      m.hf_dtype_key = key;
    }
  }
  return m;
}

ModelConfig load_hf_config(const std::filesystem::path& file) {
  const std::string text = read_input_file(file);
  std::string name = file.stem().string();
  if (name == "config") {
    const auto folder = std::filesystem::absolute(file).lexically_normal().parent_path();
    if (!folder.filename().empty()) name = folder.filename().string();
  }
  return parse_hf_config(text, file.string(), name);
}

}  // namespace gpusim::workloads
