#include "workloads/hf_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_files.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/parameter_count.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::expect_config_error;
using gpusim::testing::TempDir;

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;
const std::filesystem::path kModelsDir = kRepo / "configs/models";
const std::filesystem::path kMeasured = kRepo / "validation/data";
const std::filesystem::path kDeepseekOcr =
    std::filesystem::path(GPUSIM_TEST_DATA_DIR) / "hf/deepseek-ocr/config.json";

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ModelConfig parse(const std::string& text) {
  return parse_hf_config(text, "c.json", "c");
}

ConfigError parse_error(const std::string& text) {
  return expect_config_error([&] { parse(text); });
}

// A JSON object of `fields` (key, JSON value), one per line: line 1 is `{`, line N+1 the N-th.
std::string json_lines(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string text = "{\n";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    text += "  \"" + fields[i].first + "\": " + fields[i].second +
            (i + 1 < fields.size() ? ",\n" : "\n");
  }
  return text + "}\n";
}

// A small llama config; `changes` replace values (an empty value drops the key) or add keys.
// Lines: 2 model_type, 3 hidden_size, 4 intermediate_size, 5 num_hidden_layers,
// 6 num_attention_heads, 7 num_key_value_heads, 8 vocab_size, 9 hidden_act.
std::string tiny_llama(const std::map<std::string, std::string>& changes = {}) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"model_type", "\"llama\""}, {"hidden_size", "64"},        {"intermediate_size", "128"},
      {"num_hidden_layers", "2"},  {"num_attention_heads", "4"}, {"num_key_value_heads", "2"},
      {"vocab_size", "100"},       {"hidden_act", "\"silu\""}};
  auto left = changes;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : fields) {
    const auto it = left.find(key);
    const std::string v = it == left.end() ? value : it->second;
    if (it != left.end()) left.erase(it);
    if (!v.empty()) out.emplace_back(key, v);
  }
  for (const auto& [key, value] : left) out.emplace_back(key, value);
  return json_lines(out);
}

void expect_same_model(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.d_model, b.d_model);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.d_ff, b.d_ff);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.max_positions, b.max_positions);
  EXPECT_EQ(a.norm, b.norm);
  EXPECT_EQ(a.norm_eps, b.norm_eps);
  EXPECT_EQ(a.activation, b.activation);
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.attn_out_bias, b.attn_out_bias);
  EXPECT_EQ(a.mlp_bias, b.mlp_bias);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  ASSERT_EQ(a.moe.has_value(), b.moe.has_value());
  if (!a.moe) return;
  EXPECT_EQ(a.moe->experts, b.moe->experts);
  EXPECT_EQ(a.moe->top_k, b.moe->top_k);
  EXPECT_EQ(a.moe->expert_d_ff, b.moe->expert_d_ff);
  EXPECT_EQ(a.moe->shared_experts, b.moe->shared_experts);
  EXPECT_EQ(a.moe->shared_expert_d_ff, b.moe->shared_expert_d_ff);
  EXPECT_EQ(a.moe->dense_layers, b.moe->dense_layers);
  EXPECT_EQ(a.moe->norm_topk_prob, b.moe->norm_topk_prob);
}

// ---- real config.json files

// The config.json of each measured case (written by transformers 5.17's save_pretrained) against
// the parameter count PyTorch reported for the model built from it.
TEST(HfConfigTest, MeasuredConfigsGiveThePyTorchParameterCounts) {
  std::map<std::string, std::int64_t> n_params;
  for (const char* file : {"hf_models_h100.json", "hf_models2_h100.json"}) {  // sets 1 and 2
    const auto measured = nlohmann::json::parse(read_text(kMeasured / file));
    for (const auto& c : measured.at("cases")) {
      n_params[c.at("id").get<std::string>()] = c.at("n_params").get<std::int64_t>();
    }
  }
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kMeasured / "hf_configs")) {
    if (entry.path().extension() != ".json") continue;
    const std::string id = entry.path().stem().string();
    SCOPED_TRACE(id);
    ASSERT_TRUE(n_params.count(id)) << "no measured case " << id;
    const ModelConfig m = load_hf_config(entry.path());
    EXPECT_EQ(m.name, id);
    EXPECT_EQ(parameter_count(m), n_params.at(id));
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(n_params.size()));
}

TEST(HfConfigTest, MeasuredConfigsMatchTheirPresets) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"llama3-8b_decode_b1_l512", "llama3-8b"},
      {"qwen2-1.5b_decode_b8_l1024", "qwen2-1.5b"},
      {"gpt2-small_decode_b4_l256", "gpt2-small"},
      {"gpt2-large_decode_b16_l512", "gpt2-large"}};
  for (const auto& [id, preset] : pairs) {
    SCOPED_TRACE(id);
    expect_same_model(load_hf_config(kMeasured / "hf_configs" / (id + ".json")),
                      load_model_file(kModelsDir / (preset + ".yaml")));
  }
}

TEST(HfConfigTest, DeepseekOcrLanguageConfigIsTheDecoderPreset) {
  const ModelConfig m = load_hf_config(kDeepseekOcr);
  EXPECT_EQ(m.name, "deepseek-ocr");  // the folder's name: the file is config.json
  expect_same_model(m, load_model_file(kModelsDir / "deepseek-ocr-decoder.yaml"));
  EXPECT_EQ(parameter_count(m), 2934734080);
}

// ---- defaults

TEST(HfConfigTest, Gpt2TakesTheClassDefaults) {
  const ModelConfig m = parse(json_lines({{"model_type", "\"gpt2\""},
                                          {"n_embd", "768"},
                                          {"n_layer", "12"},
                                          {"n_head", "12"},
                                          {"n_inner", "null"},
                                          {"vocab_size", "50257"}}));
  EXPECT_EQ(m.name, "c");
  EXPECT_EQ(m.d_ff, 3072);  // 4 * n_embd
  EXPECT_EQ(m.max_positions, 1024);
  EXPECT_EQ(m.head_dim, 64);
  EXPECT_EQ(m.norm, Norm::kLayerNorm);
  EXPECT_EQ(m.activation, Activation::kGelu);
  EXPECT_EQ(m.positions, Positions::kLearned);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(parameter_count(m), 124439808);
}

TEST(HfConfigTest, KvHeadsDefaultAsEachClassDoes) {
  EXPECT_EQ(parse(tiny_llama({{"num_key_value_heads", ""}})).kv_heads, 4);  // LlamaConfig: heads
  EXPECT_EQ(parse(tiny_llama({{"num_key_value_heads", "null"}})).kv_heads, 4);
  // MistralConfig's num_key_value_heads defaults to 8; a null means heads.
  const auto mistral = [](const std::string& kv) {
    return tiny_llama({{"model_type", "\"mistral\""},
                       {"hidden_size", "256"},
                       {"num_attention_heads", "16"},
                       {"num_key_value_heads", kv}});
  };
  EXPECT_EQ(parse(mistral("")).kv_heads, 8);
  EXPECT_EQ(parse(mistral("null")).kv_heads, 16);
  // Qwen2Config's default is 32, which 4 heads cannot share.
  const ConfigError e =
      parse_error(tiny_llama({{"model_type", "\"qwen2\""}, {"num_key_value_heads", ""}}));
  EXPECT_EQ(e.key(), "num_key_value_heads");
  EXPECT_EQ(e.line(), 0);
  EXPECT_NE(e.detail().find("(32, the default"), std::string::npos) << e.detail();
}

TEST(HfConfigTest, HeadDimAndRopeTheta) {
  const ModelConfig plain = parse(tiny_llama());
  EXPECT_EQ(plain.head_dim, 16);
  EXPECT_EQ(plain.rope_theta, 10000.0);  // LlamaConfig default
  EXPECT_EQ(plain.norm_eps, 1e-6);
  EXPECT_FALSE(plain.tied_embeddings);
  EXPECT_EQ(parse(tiny_llama({{"head_dim", "32"}})).head_dim, 32);
  EXPECT_EQ(parse(tiny_llama({{"head_dim", "null"}})).head_dim, 16);
  EXPECT_EQ(parse(tiny_llama({{"rope_theta", "500000.0"}})).rope_theta, 500000.0);
  EXPECT_EQ(
      parse(tiny_llama({{"rope_parameters", R"({"rope_theta": 500000, "rope_type": "llama3"})"}}))
          .rope_theta,
      500000.0);
  const ConfigError e = parse_error(
      tiny_llama({{"rope_parameters", R"({"rope_theta": 500000})"}, {"rope_theta", "10000"}}));
  EXPECT_EQ(e.key(), "rope_theta");
  EXPECT_EQ(e.line(), 11);
}

TEST(HfConfigTest, BiasesFollowTheModelType) {
  const ModelConfig llama = parse(tiny_llama({{"attention_bias", "true"}, {"mlp_bias", "true"}}));
  EXPECT_TRUE(llama.qkv_bias);
  EXPECT_TRUE(llama.attn_out_bias);
  EXPECT_TRUE(llama.mlp_bias);
  const ModelConfig qwen2 = parse(tiny_llama({{"model_type", "\"qwen2\""}}));
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.attn_out_bias);
  EXPECT_FALSE(qwen2.mlp_bias);
  // MistralConfig has no bias fields: the key is ignored, as transformers ignores it.
  const ModelConfig mistral =
      parse(tiny_llama({{"model_type", "\"mistral\""}, {"attention_bias", "true"}}));
  EXPECT_FALSE(mistral.qkv_bias);
}

TEST(HfConfigTest, MixtralIsAllMoe) {
  const ModelConfig m = parse(tiny_llama({{"model_type", "\"mixtral\""}}));
  EXPECT_EQ(m.d_ff, 0);
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->experts, 8);  // MixtralConfig defaults
  EXPECT_EQ(m.moe->top_k, 2);
  EXPECT_EQ(m.moe->expert_d_ff, 128);
  EXPECT_EQ(m.moe->dense_layers, 0);
  EXPECT_EQ(m.moe->norm_topk_prob, true);
  EXPECT_EQ(m.norm_eps, 1e-5);
  EXPECT_EQ(m.rope_theta, 1e6);
}

TEST(HfConfigTest, DeepseekWithoutRoutedExpertsIsDense) {
  std::string text = read_text(kDeepseekOcr);
  text.replace(text.find("\"n_routed_experts\": 64"), 22, "\"n_routed_experts\": null");
  const ModelConfig m = parse(text);
  EXPECT_FALSE(m.moe.has_value());
  EXPECT_EQ(m.d_ff, 6848);
}

// ---- errors

TEST(HfConfigErrorTest, UnsupportedModelTypeListsTheSupportedOnes) {
  const ConfigError e = parse_error(tiny_llama({{"model_type", "\"bert\""}}));
  EXPECT_EQ(e.file(), "c.json");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "model_type");
  EXPECT_NE(e.detail().find("'bert'"), std::string::npos);
  EXPECT_NE(e.detail().find("llama, mistral, qwen2, mixtral, gpt2, deepseek_v2"), std::string::npos)
      << e.detail();
  EXPECT_EQ(parse_error(tiny_llama({{"model_type", ""}})).key(), "model_type");
  EXPECT_NE(
      parse_error(R"({"model_type": "llava", "text_config": {}})").detail().find("text_config"),
      std::string::npos);
}

TEST(HfConfigErrorTest, MissingAndMistypedSizes) {
  ConfigError e = parse_error(tiny_llama({{"hidden_size", ""}}));
  EXPECT_EQ(e.key(), "hidden_size");
  EXPECT_EQ(e.line(), 0);  // not in the file
  EXPECT_NE(e.detail().find("missing"), std::string::npos);

  e = parse_error(tiny_llama({{"hidden_size", "-64"}}));
  EXPECT_EQ(e.key(), "hidden_size");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.detail().find("-64 is out of range"), std::string::npos) << e.detail();

  e = parse_error(tiny_llama({{"num_hidden_layers", "0"}}));
  EXPECT_EQ(e.key(), "num_hidden_layers");
  EXPECT_EQ(e.line(), 5);

  e = parse_error(tiny_llama({{"vocab_size", "\"100\""}}));
  EXPECT_EQ(e.key(), "vocab_size");
  EXPECT_EQ(e.line(), 8);
  EXPECT_NE(e.detail().find("whole number"), std::string::npos);

  e = parse_error(tiny_llama({{"intermediate_size", "128.5"}}));
  EXPECT_EQ(e.key(), "intermediate_size");
  EXPECT_EQ(e.line(), 4);

  e = parse_error(tiny_llama({{"rms_norm_eps", "-1e-6"}}));
  EXPECT_EQ(e.key(), "rms_norm_eps");
  EXPECT_EQ(e.line(), 10);
}

TEST(HfConfigErrorTest, HeadsThatKvHeadsDoNotDivide) {
  ConfigError e = parse_error(tiny_llama({{"num_key_value_heads", "3"}}));
  EXPECT_EQ(e.key(), "num_key_value_heads");
  EXPECT_EQ(e.line(), 7);
  EXPECT_NE(e.detail().find("num_attention_heads (4) is not a multiple of num_key_value_heads (3)"),
            std::string::npos)
      << e.detail();

  e = parse_error(tiny_llama({{"num_attention_heads", "6"}, {"num_key_value_heads", "3"}}));
  EXPECT_EQ(e.key(), "num_attention_heads");  // 64 / 6 is no head dim
  EXPECT_EQ(e.line(), 6);
}

TEST(HfConfigErrorTest, HiddenActMustBeSilu) {
  const ConfigError e = parse_error(tiny_llama({{"hidden_act", "\"gelu\""}}));
  EXPECT_EQ(e.key(), "hidden_act");
  EXPECT_EQ(e.line(), 9);
  EXPECT_NE(e.detail().find("'gelu'"), std::string::npos);

  const ConfigError gpt2 = parse_error(json_lines({{"model_type", "\"gpt2\""},
                                                   {"n_embd", "64"},
                                                   {"n_layer", "2"},
                                                   {"n_head", "4"},
                                                   {"vocab_size", "100"},
                                                   {"activation_function", "\"relu\""}}));
  EXPECT_EQ(gpt2.key(), "activation_function");
  EXPECT_EQ(gpt2.line(), 7);
}

TEST(HfConfigErrorTest, MlaIsNotSupported) {
  const std::string ocr = read_text(kDeepseekOcr);
  std::string text = ocr;
  text.replace(text.find("\"use_mla\": false"), 16, "\"use_mla\": true");
  ConfigError e = parse_error(text);
  EXPECT_EQ(e.key(), "language_config.use_mla");
  EXPECT_EQ(e.line(), 22);
  EXPECT_NE(e.detail().find("MLA"), std::string::npos);

  text = ocr;
  text.replace(text.find("\"kv_lora_rank\": null"), 20, "\"kv_lora_rank\": 512");
  e = parse_error(text);
  EXPECT_EQ(e.key(), "language_config.kv_lora_rank");
  EXPECT_EQ(e.line(), 6);

  // DeepseekV2Config's kv_lora_rank defaults to 512: MLA unless the file says null.
  e = parse_error(json_lines({{"model_type", "\"deepseek_v2\""},
                              {"hidden_size", "64"},
                              {"intermediate_size", "128"},
                              {"num_hidden_layers", "2"},
                              {"num_attention_heads", "4"},
                              {"vocab_size", "100"}}));
  EXPECT_EQ(e.key(), "kv_lora_rank");
  EXPECT_EQ(e.line(), 0);

  text = ocr;
  text.replace(text.find("\"n_group\": 1"), 12, "\"moe_layer_freq\": 2");
  e = parse_error(text);
  EXPECT_EQ(e.key(), "language_config.moe_layer_freq");
  EXPECT_EQ(e.line(), 10);
}

// Keys inside language_config are found there, not in an object before it.
TEST(HfConfigErrorTest, NestedKeysAreLocatedInTheirObject) {
  std::string text = read_text(kDeepseekOcr);
  text.replace(text.find("\"num_attention_heads\": 10"), 25, "\"num_attention_heads\": 0");
  text.replace(0, 1, "{\n  \"aaa_config\": {\"num_attention_heads\": 3},");
  const ConfigError e = parse_error(text);
  EXPECT_EQ(e.key(), "language_config.num_attention_heads");
  EXPECT_EQ(e.line(), 14);
}

TEST(HfConfigErrorTest, MalformedJsonNamesTheLine) {
  std::string text = tiny_llama({{"vocab_size", "1OO"}});
  ConfigError e = parse_error(text);
  EXPECT_EQ(e.file(), "c.json");
  EXPECT_EQ(e.line(), 8);
  EXPECT_NE(e.detail().find("malformed JSON"), std::string::npos);

  // A missing comma is found where the next key starts, as Python's json reports it.
  text = tiny_llama();
  text.erase(text.find("2,\n  \"num_attention_heads\"") + 1, 1);
  e = parse_error(text);
  EXPECT_EQ(e.line(), 6);

  e = parse_error("[1, 2]");
  EXPECT_NE(e.detail().find("JSON object"), std::string::npos);
}

TEST(HfConfigErrorTest, UnreadableFile) {
  const ConfigError e = expect_config_error([] { load_hf_config(kRepo / "no/such/config.json"); });
  EXPECT_EQ(e.file(), (kRepo / "no/such/config.json").string());
  EXPECT_EQ(e.line(), 0);
}

// ---- model-level workloads naming a config.json

const std::string kPhase = "phase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n";

TEST(HfConfigWorkloadTest, ReadsTheConfigNextToTheWorkload) {
  TempDir dir;
  dir.write("tiny-llama/config.json", tiny_llama());
  const auto file = dir.write("w.yaml", "hf_config: tiny-llama/config.json\n" + kPhase);
  const auto w = std::get<ModelWorkload>(load_workload(file, {}, kModelsDir));
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.model.name, "tiny-llama");
  EXPECT_EQ(w.model.kv_heads, 2);

  // An absolute path is taken as it is.
  const auto absolute =
      dir.write("sub/a.yaml",
                "hf_config: " + (dir.path() / "tiny-llama/config.json").string() + "\n" + kPhase);
  EXPECT_EQ(std::get<ModelWorkload>(load_workload(absolute, {}, kModelsDir)).model.name,
            "tiny-llama");
}

TEST(HfConfigWorkloadTest, ModelAndHfConfigTogetherIsAnError) {
  TempDir dir;
  dir.write("config.json", tiny_llama());
  const auto file = dir.write("w.yaml", "model: llama3-8b\nhf_config: config.json\n" + kPhase);
  const ConfigError e = expect_config_error([&] { load_workload(file, {}, kModelsDir); });
  EXPECT_EQ(e.file(), file.string());
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "hf_config");
  EXPECT_NE(e.detail().find("not both"), std::string::npos);
}

TEST(HfConfigWorkloadTest, MissingConfigFile) {
  TempDir dir;
  const auto file = dir.write("w.yaml", kPhase + "hf_config: nowhere/config.json\n");
  const ConfigError e = expect_config_error([&] { load_workload(file, {}, kModelsDir); });
  EXPECT_EQ(e.file(), file.string());
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.key(), "hf_config");
  EXPECT_NE(e.detail().find((dir.path() / "nowhere/config.json").string()), std::string::npos);
}

TEST(HfConfigWorkloadTest, ErrorsInTheConfigNameTheConfigFile) {
  TempDir dir;
  const auto config = dir.write("m.json", tiny_llama({{"hidden_act", "\"relu\""}}));
  const auto file = dir.write("w.yaml", "hf_config: m.json\n" + kPhase);
  const ConfigError e = expect_config_error([&] { load_workload(file, {}, kModelsDir); });
  EXPECT_EQ(e.file(), config.string());
  EXPECT_EQ(e.line(), 9);
  EXPECT_EQ(e.key(), "hidden_act");
}

}  // namespace
}  // namespace gpusim::workloads
