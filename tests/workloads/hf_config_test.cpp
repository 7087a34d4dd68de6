#include "workloads/hf_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_files.h"
#include "tests/workloads/config_error_matchers.h"
#include "validation/case_json.h"
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

// `fields` in order with `changes` applied: a changed value replaces the field's (an empty
// value drops the key); keys not in `fields` are added at the end, in key order.
std::string with_changes(const std::vector<std::pair<std::string, std::string>>& fields,
                         const std::map<std::string, std::string>& changes) {
  auto left = changes;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : fields) {
    const auto it = left.find(key);
    const std::string v = it == left.end() ? value : it->second;
    if (it != left.end()) left.erase(it);
    if (!v.empty()) out.emplace_back(key, v);
  }
  for (const auto& [key, value] : left) {
    if (!value.empty()) out.emplace_back(key, value);
  }
  return json_lines(out);
}

// A small llama config; `changes` replace values (an empty value drops the key) or add keys.
// Lines: 2 model_type, 3 hidden_size, 4 intermediate_size, 5 num_hidden_layers,
// 6 num_attention_heads, 7 num_key_value_heads, 8 vocab_size, 9 hidden_act.
std::string tiny_llama(const std::map<std::string, std::string>& changes = {}) {
  return with_changes({{"model_type", "\"llama\""},
                       {"hidden_size", "64"},
                       {"intermediate_size", "128"},
                       {"num_hidden_layers", "2"},
                       {"num_attention_heads", "4"},
                       {"num_key_value_heads", "2"},
                       {"vocab_size", "100"},
                       {"hidden_act", "\"silu\""}},
                      changes);
}

// The same shape as another model type: lines 2-8 as tiny_llama's.
std::string tiny(const std::string& model_type,
                 const std::map<std::string, std::string>& changes = {}, int layers = 2) {
  return with_changes({{"model_type", "\"" + model_type + "\""},
                       {"hidden_size", "64"},
                       {"intermediate_size", "128"},
                       {"num_hidden_layers", std::to_string(layers)},
                       {"num_attention_heads", "4"},
                       {"num_key_value_heads", "2"},
                       {"vocab_size", "100"}},
                      changes);
}

// A JSON list of `n` strings `value`.
std::string repeated(const std::string& value, int n) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? ", \"" : "\"") + value + "\"";
  return out + "]";
}

// Field by field; `same_layers` false compares everything but the layer count (per-layer
// placements over the layers both have), `except` names fields left out.
void expect_same_model(const ModelConfig& a, const ModelConfig& b, bool same_layers = true,
                       const std::set<std::string>& except = {}) {
  if (same_layers) {
    EXPECT_EQ(a.layers, b.layers);
  }
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
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.fused_qkv, b.fused_qkv);
  EXPECT_EQ(a.fused_gate_up, b.fused_gate_up);
  EXPECT_EQ(a.rotary_fraction, b.rotary_fraction);
  if (!except.count("rope_scaling")) {
    EXPECT_EQ(a.rope_scaling, b.rope_scaling);
  }
  EXPECT_EQ(a.norm_weight_offset, b.norm_weight_offset);
  EXPECT_EQ(a.sandwich_norms, b.sandwich_norms);
  EXPECT_EQ(a.embed_scale, b.embed_scale);
  EXPECT_EQ(a.attn_softcap, b.attn_softcap);
  EXPECT_EQ(a.final_softcap, b.final_softcap);
  EXPECT_EQ(a.query_scale, b.query_scale);
  EXPECT_EQ(a.sliding_window, b.sliding_window);
  EXPECT_EQ(a.rope_local_theta, b.rope_local_theta);
  const std::int64_t layers = std::min(a.layers, b.layers);
  for (std::int64_t i = 0; i < layers; ++i) {
    EXPECT_EQ(a.sliding_layer(i), b.sliding_layer(i)) << "layer " << i;
    EXPECT_EQ(a.moe_layer(i), b.moe_layer(i)) << "layer " << i;
  }
  ASSERT_EQ(a.mla.has_value(), b.mla.has_value());
  if (a.mla) {
    EXPECT_EQ(a.mla->q_lora_rank, b.mla->q_lora_rank);
    EXPECT_EQ(a.mla->kv_lora_rank, b.mla->kv_lora_rank);
    EXPECT_EQ(a.mla->qk_nope_head_dim, b.mla->qk_nope_head_dim);
    EXPECT_EQ(a.mla->qk_rope_head_dim, b.mla->qk_rope_head_dim);
    EXPECT_EQ(a.mla->v_head_dim, b.mla->v_head_dim);
    EXPECT_EQ(a.mla->rope_interleave, b.mla->rope_interleave);
  }
  ASSERT_EQ(a.moe.has_value(), b.moe.has_value());
  if (!a.moe) return;
  EXPECT_EQ(a.moe->experts, b.moe->experts);
  EXPECT_EQ(a.moe->top_k, b.moe->top_k);
  EXPECT_EQ(a.moe->expert_d_ff, b.moe->expert_d_ff);
  EXPECT_EQ(a.moe->shared_experts, b.moe->shared_experts);
  EXPECT_EQ(a.moe->shared_expert_d_ff, b.moe->shared_expert_d_ff);
  EXPECT_EQ(a.moe->dense_layers, b.moe->dense_layers);
  EXPECT_EQ(a.moe->norm_topk_prob, b.moe->norm_topk_prob);
  EXPECT_EQ(a.moe->every, b.moe->every);
  EXPECT_EQ(a.moe->phase, b.moe->phase);
  EXPECT_EQ(a.moe->dense_list, b.moe->dense_list);
  EXPECT_EQ(a.moe->scoring, b.moe->scoring);
  EXPECT_EQ(a.moe->topk_method, b.moe->topk_method);
  EXPECT_EQ(a.moe->groups, b.moe->groups);
  EXPECT_EQ(a.moe->topk_groups, b.moe->topk_groups);
  EXPECT_EQ(a.moe->routed_scaling, b.moe->routed_scaling);
  EXPECT_EQ(a.moe->router_fp32, b.moe->router_fp32);
}

// ---- real config.json files

// The config.json of each measured case (written by transformers 5.17's save_pretrained) against
// the parameter count PyTorch reported for the model built from it.
TEST(HfConfigTest, MeasuredConfigsGiveThePyTorchParameterCounts) {
  std::map<std::string, std::int64_t> n_params;
  // Sets 1 to 10 (set 3: its calibration and holdout cases in one file; sets 6 to 10 measured on
  // the H200 only). Only ids and parameter counts are read.
  for (const char* file :
       {"hf_models_h100.json.gz", "hf_models2_h100.json.gz", "hf_models3_h100.json.gz",
        "hf_models4_h100.json.gz", "hf_models5_h100.json.gz", "hf_models6_h200.json.gz",
        "hf_models7_h200.json.gz", "hf_models8_h200.json.gz",
        "hf_models9_h200.json.gz", "hf_models10_h200.json.gz"}) {
    const auto measured = validation::read_json_file(kMeasured / file);
    for (const auto& c : measured.at("cases")) {
      n_params[c.at("id").get<std::string>()] = c.at("n_params").get<std::int64_t>();
    }
  }
  // The training cases (hf_train_h100.json.gz to hf_train4_h100.json.gz), whose configs are saved as
  // train_<id>.json.
  for (const char* file : {"hf_train_h100.json.gz", "hf_train2_h100.json.gz", "hf_train3_h100.json.gz", "hf_train4_h100.json.gz"}) {
    const auto train = validation::read_json_file(kMeasured / file);
    for (const auto& c : train.at("cases")) {
      n_params["train_" + c.at("id").get<std::string>()] = c.at("n_params").get<std::int64_t>();
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
      {"llama3-8b_decode_b1_l512", "llama3-8b"},    {"qwen2-1.5b_decode_b8_l1024", "qwen2-1.5b"},
      {"gpt2-small_decode_b4_l256", "gpt2-small"},  {"gpt2-large_decode_b16_l512", "gpt2-large"},
      {"qwen3-1.7b_decode_b4_l1024", "qwen3-1.7b"}, {"gemma2-2b_decode_b4_l1024", "gemma2-2b"},
      {"gemma3-1b_decode_b4_l1024", "gemma3-1b"},   {"phi3-mini_decode_b4_l1024", "phi3-mini-4k"}};
  for (const auto& [id, preset] : pairs) {
    SCOPED_TRACE(id);
    expect_same_model(load_hf_config(kMeasured / "hf_configs" / (id + ".json")),
                      load_model_file(kModelsDir / (preset + ".yaml")));
  }
}

// Set 3's cases with fewer layers than the published model: the same shape otherwise. The
// DeepSeek cases were built without the published yarn RoPE scaling.
TEST(HfConfigTest, MeasuredConfigsWithFewerLayersMatchTheirPresets) {
  struct Pair {
    std::string id, preset;
    std::set<std::string> except;
  };
  const std::vector<Pair> pairs = {
      {"qwen3-moe-4l_decode_b4_l1024", "qwen3-30b-a3b", {}},
      {"deepseek-v2-lite-4l_decode_b4_l1024", "deepseek-v2-lite", {"rope_scaling"}},
      {"deepseek-v3-4l_decode_b1_l1024", "deepseek-v3", {"rope_scaling"}}};
  for (const auto& [id, preset, except] : pairs) {
    SCOPED_TRACE(id);
    const ModelConfig measured = load_hf_config(kMeasured / "hf_configs" / (id + ".json"));
    const ModelConfig full = load_model_file(kModelsDir / (preset + ".yaml"));
    EXPECT_LT(measured.layers, full.layers);
    expect_same_model(measured, full, false, except);
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

TEST(HfConfigTest, RopeScalingIsReadFromRopeParametersOrTheLegacyKey) {
  EXPECT_EQ(parse(tiny_llama()).rope_scaling, "default");
  EXPECT_EQ(parse(tiny_llama({{"rope_parameters",
                               R"({"rope_theta": 500000, "rope_type": "llama3", "factor": 8})"}}))
                .rope_scaling,
            "llama3");
  EXPECT_EQ(
      parse(tiny_llama({{"rope_scaling", R"({"type": "linear", "factor": 2})"}})).rope_scaling,
      "linear");
  ConfigError e = parse_error(tiny_llama({{"rope_parameters", R"({"rope_type": "fancy"})"}}));
  EXPECT_EQ(e.key(), "rope_parameters.rope_type");
  EXPECT_EQ(e.line(), 10);
  e = parse_error(tiny_llama({{"rope_parameters", R"({"rope_type": "yarn"})"},
                              {"rope_scaling", R"({"rope_type": "linear"})"}}));
  EXPECT_EQ(e.key(), "rope_scaling");
}

TEST(HfConfigTest, MistralAndMixtralWindowEveryLayer) {
  const ModelConfig plain = parse(tiny("mistral", {{"hidden_act", "\"silu\""}}));
  EXPECT_EQ(plain.sliding_window, 4096);  // MistralConfig's default
  EXPECT_TRUE(plain.sliding_layers.empty());
  EXPECT_TRUE(plain.sliding_layer(0) && plain.sliding_layer(1));
  EXPECT_FALSE(parse(tiny("mistral", {{"sliding_window", "null"}})).sliding_window.has_value());
  EXPECT_EQ(parse(tiny("mistral", {{"sliding_window", "1024"}})).sliding_window, 1024);
  EXPECT_FALSE(parse(tiny("mixtral")).sliding_window.has_value());  // MixtralConfig: None
  EXPECT_FALSE(parse(tiny_llama({{"sliding_window", "1024"}})).sliding_window.has_value());
}

TEST(HfConfigTest, Qwen3HasQkNormsAndItsOwnHeadDim) {
  const ModelConfig m =
      parse(tiny("qwen3", {{"num_attention_heads", "32"}, {"num_key_value_heads", ""}}));
  EXPECT_EQ(m.head_dim, 128);  // Qwen3Config's head_dim, not hidden_size / heads
  EXPECT_EQ(m.kv_heads, 32);   // its num_key_value_heads default
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.qkv_bias);
  EXPECT_FALSE(m.sliding_window.has_value());
  EXPECT_EQ(m.rope_theta, 10000.0);
  // q, k, v, o (64 x 32*128 and back), q/k norms, SwiGLU, two norms per layer, final norm.
  const std::int64_t q = 32 * 128, kv = 32 * 128;
  const std::int64_t layer = 64 * (q + 2 * kv) + q * 64 + 2 * 128 + 3 * 64 * 128 + 2 * 64;
  EXPECT_EQ(parameter_count(m), 2 * 100 * 64 + 2 * layer + 64);
  const ModelConfig biased = parse(tiny("qwen3", {{"attention_bias", "true"}}));
  EXPECT_TRUE(biased.qkv_bias && biased.attn_out_bias);
}

TEST(HfConfigTest, Qwen3WindowsLayersFromMaxWindowLayers) {
  // Qwen3Config: with use_sliding_window, layers i >= max_window_layers are windowed.
  ModelConfig m = parse(tiny(
      "qwen3",
      {{"use_sliding_window", "true"}, {"sliding_window", "64"}, {"max_window_layers", "2"}}, 4));
  EXPECT_EQ(m.sliding_window, 64);
  EXPECT_EQ(m.sliding_layers, (std::vector<bool>{false, false, true, true}));
  // Every layer windowed: sliding_layers stays empty.
  m = parse(
      tiny("qwen3",
           {{"use_sliding_window", "true"}, {"sliding_window", "64"}, {"max_window_layers", "0"}}));
  EXPECT_EQ(m.sliding_window, 64);
  EXPECT_TRUE(m.sliding_layers.empty());
  // No window without use_sliding_window, whatever sliding_window says.
  m = parse(tiny("qwen3", {{"sliding_window", "64"}, {"max_window_layers", "0"}}));
  EXPECT_FALSE(m.sliding_window.has_value());
  // layer_types, when written, decides.
  m = parse(tiny("qwen3", {{"use_sliding_window", "true"},
                           {"sliding_window", "64"},
                           {"layer_types", R"(["sliding_attention", "full_attention"])"}}));
  EXPECT_EQ(m.sliding_layers, (std::vector<bool>{true, false}));
  // Windowed layers without a window contradict.
  const ConfigError e =
      parse_error(tiny("qwen3", {{"layer_types", R"(["sliding_attention", "full_attention"])"}}));
  EXPECT_EQ(e.key(), "use_sliding_window");
  EXPECT_NE(e.detail().find("1 of 2 layers"), std::string::npos) << e.detail();
}

TEST(HfConfigTest, Qwen3MoePlacesExpertsByStepAndMlpOnlyLayers) {
  const ModelConfig m = parse(tiny("qwen3_moe",
                                   {{"num_local_experts", "8"},
                                    {"num_experts_per_tok", "2"},
                                    {"moe_intermediate_size", "32"},
                                    {"decoder_sparse_step", "2"},
                                    {"mlp_only_layers", "[3]"}},
                                   6));
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->every, 2);
  EXPECT_EQ(m.moe->phase, 1);
  EXPECT_EQ(m.moe->dense_list, (std::vector<std::int64_t>{3}));
  std::vector<bool> moe_layers;
  for (int i = 0; i < 6; ++i) moe_layers.push_back(m.moe_layer(i));
  EXPECT_EQ(moe_layers, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(m.d_ff, 128);     // the dense layers' intermediate_size
  EXPECT_EQ(m.head_dim, 16);  // no head_dim: hidden_size / heads
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.moe->shared_experts, 0);
  EXPECT_EQ(m.moe->norm_topk_prob, false);
  EXPECT_EQ(m.moe->scoring, RouterScoring::kSoftmax);

  // Every layer MoE: no dense width; the class defaults otherwise.
  const ModelConfig all = parse(tiny("qwen3_moe", {{"num_key_value_heads", ""}}));
  EXPECT_EQ(all.d_ff, 0);
  EXPECT_EQ(all.kv_heads, 4);
  EXPECT_EQ(all.moe->experts, 128);
  EXPECT_EQ(all.moe->top_k, 8);
  EXPECT_EQ(all.moe->expert_d_ff, 768);
  // num_experts is the class's name for num_local_experts.
  EXPECT_EQ(parse(tiny("qwen3_moe", {{"num_experts", "16"}})).moe->experts, 16);
  // No expert, or no layer placed: a dense model.
  EXPECT_FALSE(parse(tiny("qwen3_moe", {{"num_local_experts", "0"}})).moe.has_value());
  EXPECT_FALSE(parse(tiny("qwen3_moe", {{"decoder_sparse_step", "3"}})).moe.has_value());
}

TEST(HfConfigTest, Gemma2Defaults) {
  const ModelConfig m = parse(tiny("gemma2", {}, 4));
  EXPECT_EQ(m.activation, Activation::kGeglu);
  EXPECT_EQ(m.head_dim, 256);
  EXPECT_TRUE(m.norm_weight_offset && m.sandwich_norms && m.embed_scale);
  EXPECT_FALSE(m.qk_norm);
  EXPECT_EQ(m.attn_softcap, 50.0);
  EXPECT_EQ(m.final_softcap, 30.0);
  EXPECT_EQ(m.query_scale, 256.0);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_EQ(m.sliding_layers, (std::vector<bool>{true, false, true, false}));  // even layers
  // Four norms per layer, GeGLU's three matrices.
  const std::int64_t q = 4 * 256, kv = 2 * 256;
  const std::int64_t layer = 4 * 64 + 64 * (q + 2 * kv) + q * 64 + 3 * 64 * 128;
  EXPECT_EQ(parameter_count(m), 100 * 64 + 4 * layer + 64);

  const ModelConfig uncapped = parse(
      tiny("gemma2", {{"attn_logit_softcapping", "null"}, {"final_logit_softcapping", "null"}}));
  EXPECT_FALSE(uncapped.attn_softcap.has_value());
  EXPECT_FALSE(uncapped.final_softcap.has_value());
  const ModelConfig typed = parse(
      tiny("gemma2", {{"layer_types", repeated("full_attention", 2)}, {"sliding_window", "null"}}));
  EXPECT_FALSE(typed.sliding_window.has_value());
}

TEST(HfConfigTest, Gemma3TextWindowsFiveLayersOfSixWithALocalRopeBase) {
  const ModelConfig m = parse(tiny("gemma3_text", {}, 8));
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.attn_softcap.has_value());
  EXPECT_FALSE(m.final_softcap.has_value());
  EXPECT_EQ(m.rope_theta, 1e6);
  EXPECT_EQ(m.rope_local_theta, 1e4);
  EXPECT_EQ(m.sliding_layers, (std::vector<bool>{true, true, true, true, true, false, true, true}));
  EXPECT_EQ(parse(tiny("gemma3_text", {{"sliding_window_pattern", "2"}}, 4)).sliding_layers,
            (std::vector<bool>{true, false, true, false}));

  // transformers 5 nests RoPE per layer type; older files write rope_theta and
  // rope_local_base_freq, and rope_scaling for the global layers.
  const ModelConfig nested = parse(
      tiny("gemma3_text",
           {{"rope_parameters",
             R"({"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 500000},
             "sliding_attention": {"rope_type": "default", "rope_theta": 20000}})"}}));
  EXPECT_EQ(nested.rope_theta, 500000.0);
  EXPECT_EQ(nested.rope_local_theta, 20000.0);
  EXPECT_EQ(nested.rope_scaling, "linear");
  const ModelConfig legacy =
      parse(tiny("gemma3_text", {{"rope_theta", "300000"},
                                 {"rope_local_base_freq", "30000"},
                                 {"rope_scaling", R"({"rope_type": "linear", "factor": 8.0})"}}));
  EXPECT_EQ(legacy.rope_theta, 300000.0);
  EXPECT_EQ(legacy.rope_local_theta, 30000.0);
  EXPECT_EQ(legacy.rope_scaling, "linear");
  // Gemma 2's count plus the q/k norms (head_dim weights each).
  const std::int64_t q = 4 * 256, kv = 2 * 256;
  const std::int64_t layer = 4 * 64 + 64 * (q + 2 * kv) + q * 64 + 2 * 256 + 3 * 64 * 128;
  EXPECT_EQ(parameter_count(m), 100 * 64 + 8 * layer + 64);
}

TEST(HfConfigTest, Gemma3ReadsItsTextConfig) {
  const std::string text = R"({
  "model_type": "gemma3",
  "tie_word_embeddings": true,
  "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"},
  "text_config": {
    "model_type": "gemma3_text",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "rope_scaling": {"rope_type": "linear", "factor": 8.0}
  }
})";
  const ModelConfig m = parse(text);
  EXPECT_EQ(m.layers, 6);
  EXPECT_EQ(m.d_model, 64);
  EXPECT_EQ(m.rope_scaling, "linear");
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_TRUE(m.qk_norm);
  std::string wrong = text;
  wrong.replace(wrong.find("\"num_attention_heads\": 4"), 24, "\"num_attention_heads\": 0");
  const ConfigError e = parse_error(wrong);
  EXPECT_EQ(e.key(), "text_config.num_attention_heads");
  EXPECT_EQ(e.line(), 10);
  EXPECT_EQ(parse_error(R"({"model_type": "gemma3"})").key(), "text_config");
}

TEST(HfConfigTest, Phi3FusesProjectionsAndRotatesPartOfTheHead) {
  const ModelConfig m = parse(tiny("phi3", {{"num_key_value_heads", ""}}));
  EXPECT_TRUE(m.fused_qkv && m.fused_gate_up);
  EXPECT_EQ(m.kv_heads, 4);  // Phi3Config: num_attention_heads when not given
  EXPECT_EQ(m.rotary_fraction, 1.0);
  EXPECT_EQ(m.rope_scaling, "default");
  EXPECT_FALSE(m.sliding_window.has_value());
  EXPECT_EQ(m.norm_eps, 1e-5);
  EXPECT_EQ(
      parameter_count(m),
      parameter_count(parse(tiny_llama({{"num_key_value_heads", ""}, {"rms_norm_eps", "1e-5"}}))));

  // Phi-4-mini: a quarter of each head's 16 dims unrotated, longrope (here as legacy "su").
  const ModelConfig phi4 =
      parse(tiny("phi3", {{"partial_rotary_factor", "0.75"},
                          {"sliding_window", "2047"},
                          {"rope_scaling", R"({"type": "su", "short_factor": [1, 1, 1, 1, 1, 1],
                                    "long_factor": [2, 2, 2, 2, 2, 2]})"}}));
  EXPECT_EQ(phi4.rotary_fraction, 0.75);
  EXPECT_EQ(phi4.rope_scaling, "longrope");
  EXPECT_EQ(phi4.sliding_window, 2047);
  EXPECT_TRUE(phi4.sliding_layers.empty());
  EXPECT_EQ(parse(tiny("phi3", {{"rope_parameters",
                                 R"({"rope_type": "yarn", "partial_rotary_factor": 0.5})"}}))
                .rotary_fraction,
            0.5);
}

TEST(HfConfigTest, DeepseekV2DefaultsToMla) {
  // DeepseekV2Config's kv_lora_rank defaults to 512: MLA unless the file says null.
  const ModelConfig m = parse(json_lines({{"model_type", "\"deepseek_v2\""},
                                          {"hidden_size", "64"},
                                          {"intermediate_size", "128"},
                                          {"num_hidden_layers", "2"},
                                          {"num_attention_heads", "4"},
                                          {"num_experts_per_tok", "2"},
                                          {"vocab_size", "100"}}));
  ASSERT_TRUE(m.mla.has_value());
  EXPECT_EQ(m.mla->q_lora_rank, 1536);
  EXPECT_EQ(m.mla->kv_lora_rank, 512);
  EXPECT_EQ(m.mla->qk_nope_head_dim, 128);
  EXPECT_EQ(m.mla->qk_rope_head_dim, 64);
  EXPECT_EQ(m.mla->v_head_dim, 128);
  EXPECT_FALSE(m.mla->rope_interleave);
  EXPECT_EQ(m.head_dim, 192);  // qk_nope_head_dim + qk_rope_head_dim
  EXPECT_EQ(m.kv_heads, 4);
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->experts, 64);
  EXPECT_EQ(m.moe->shared_experts, 2);
  EXPECT_EQ(m.moe->expert_d_ff, 1407);
  EXPECT_EQ(m.moe->scoring, RouterScoring::kSoftmax);
  EXPECT_EQ(m.moe->topk_method, TopkMethod::kGreedy);
  EXPECT_TRUE(m.moe->router_fp32);
  EXPECT_EQ(m.d_ff, 0);  // first_k_dense_replace 0
  // q_a_proj + q_a_layernorm + q_b_proj, kv_a_proj_with_mqa + kv_a_layernorm, kv_b_proj, o_proj.
  const std::int64_t attention = 64 * 1536 + 1536 + 1536 * 4 * 192 + 64 * (512 + 64) + 512 +
                                 512 * 4 * (128 + 128) + 4 * 128 * 64;
  const std::int64_t moe = 64 * 64 + 64 * 3 * 64 * 1407 + 2 * 3 * 64 * 1407;
  EXPECT_EQ(parameter_count(m), 2 * 100 * 64 + 2 * (2 * 64 + attention + moe) + 64);
}

TEST(HfConfigTest, DeepseekV2GroupedRouting) {
  const ModelConfig m = parse(tiny("deepseek_v2", {{"num_key_value_heads", ""},
                                                   {"n_routed_experts", "16"},
                                                   {"num_experts_per_tok", "4"},
                                                   {"topk_method", "\"group_limited_greedy\""},
                                                   {"n_group", "4"},
                                                   {"topk_group", "2"},
                                                   {"routed_scaling_factor", "16.0"},
                                                   {"first_k_dense_replace", "1"},
                                                   {"q_lora_rank", "null"}}));
  EXPECT_EQ(m.mla->q_lora_rank, 0);
  EXPECT_EQ(m.moe->topk_method, TopkMethod::kGroupLimitedGreedy);
  EXPECT_EQ(m.moe->groups, 4);
  EXPECT_EQ(m.moe->topk_groups, 2);
  EXPECT_EQ(m.moe->routed_scaling, 16.0);
  EXPECT_EQ(m.moe->dense_layers, 1);
  EXPECT_EQ(m.d_ff, 128);
}

TEST(HfConfigTest, DeepseekV3RoutesWithSigmoidAndGroups) {
  const ModelConfig m = parse(tiny("deepseek_v3",
                                   {{"num_key_value_heads", "4"},
                                    {"n_routed_experts", "16"},
                                    {"n_group", "4"},
                                    {"topk_group", "2"},
                                    {"num_experts_per_tok", "4"}},
                                   4));
  ASSERT_TRUE(m.mla.has_value());
  EXPECT_TRUE(m.mla->rope_interleave);
  EXPECT_EQ(m.moe->scoring, RouterScoring::kSigmoid);
  EXPECT_EQ(m.moe->topk_method, TopkMethod::kNoauxTc);
  EXPECT_EQ(m.moe->routed_scaling, 2.5);
  EXPECT_EQ(m.moe->norm_topk_prob, true);
  EXPECT_EQ(m.moe->shared_experts, 1);
  EXPECT_EQ(m.moe->expert_d_ff, 2048);
  EXPECT_EQ(m.moe->dense_layers, 3);  // DeepseekV3Config's first_k_dense_replace
  EXPECT_EQ(m.d_ff, 128);
  EXPECT_TRUE(m.moe->router_fp32);
  // Dense everywhere when first_k_dense_replace covers every layer.
  EXPECT_FALSE(parse(tiny("deepseek_v3", {{"num_key_value_heads", "4"}})).moe.has_value());
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

// DeepSeek-OCR's files say use_mla: it must agree with kv_lora_rank (null: no MLA).
TEST(HfConfigErrorTest, UseMlaMustAgreeWithKvLoraRank) {
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
  EXPECT_NE(e.detail().find("use_mla is false"), std::string::npos) << e.detail();

  text = ocr;
  text.replace(text.find("\"n_group\": 1"), 12, "\"moe_layer_freq\": 2");
  e = parse_error(text);
  EXPECT_EQ(e.key(), "language_config.moe_layer_freq");
  EXPECT_EQ(e.line(), 10);
}

TEST(HfConfigErrorTest, UnsupportedTypesAndActivationsOfTheNewFamilies) {
  ConfigError e = parse_error(tiny("gemma2", {{"hidden_activation", "\"gelu\""}}));
  EXPECT_EQ(e.key(), "hidden_activation");
  EXPECT_EQ(e.line(), 9);
  EXPECT_NE(e.detail().find("GeGLU"), std::string::npos) << e.detail();
  e = parse_error(tiny("gemma3_text", {{"use_bidirectional_attention", "true"}}));
  EXPECT_EQ(e.key(), "use_bidirectional_attention");
  e = parse_error(tiny("qwen3", {{"hidden_act", "\"gelu\""}}));
  EXPECT_EQ(e.key(), "hidden_act");
  e = parse_error(tiny("phi3", {{"rope_parameters", R"({"rope_type": "dynamic"})"}}));
  EXPECT_EQ(e.key(), "rope_parameters.rope_type");
  EXPECT_EQ(e.line(), 9);
  e = parse_error(tiny_llama({{"model_type", "\"gemma\""}}));
  EXPECT_NE(e.detail().find("qwen3, qwen3_moe, gemma2, gemma3_text"), std::string::npos)
      << e.detail();
}

TEST(HfConfigErrorTest, LayerTypesOfTheWrongLengthOrKind) {
  ConfigError e = parse_error(tiny("gemma2", {{"layer_types", repeated("full_attention", 3)}}));
  EXPECT_EQ(e.key(), "layer_types");
  EXPECT_EQ(e.line(), 9);
  EXPECT_NE(e.detail().find("3 entries for 2 layers"), std::string::npos) << e.detail();
  e = parse_error(
      tiny("gemma3_text", {{"layer_types", R"(["full_attention", "chunked_attention"])"}}));
  EXPECT_EQ(e.key(), "layer_types");
  EXPECT_NE(e.detail().find("entry 1 is \"chunked_attention\""), std::string::npos) << e.detail();
  e = parse_error(tiny("gemma3_text", {{"layer_types", repeated("full_attention", 2)},
                                       {"sliding_window_pattern", "6"}}));
  EXPECT_EQ(e.key(), "sliding_window_pattern");
  e = parse_error(tiny("gemma2", {{"sliding_window", "null"}}));
  EXPECT_EQ(e.key(), "sliding_window");
  EXPECT_NE(e.detail().find("1 of 2 layers"), std::string::npos) << e.detail();
  e = parse_error(tiny("qwen3", {{"use_sliding_window", "true"},
                                 {"sliding_window", "null"},
                                 {"max_window_layers", "0"},
                                 {"layer_types", repeated("sliding_attention", 2)}}));
  EXPECT_EQ(e.key(), "sliding_window");
  e = parse_error(tiny("mistral", {{"sliding_window", "0"}}));
  EXPECT_EQ(e.key(), "sliding_window");
}

TEST(HfConfigErrorTest, PartialRotaryFactor) {
  ConfigError e = parse_error(tiny("phi3", {{"partial_rotary_factor", "1.5"}}));
  EXPECT_EQ(e.key(), "partial_rotary_factor");
  EXPECT_EQ(e.line(), 9);
  EXPECT_NE(e.detail().find("outside (0, 1]"), std::string::npos) << e.detail();
  e = parse_error(tiny("phi3", {{"partial_rotary_factor", "0"}}));
  EXPECT_EQ(e.key(), "partial_rotary_factor");
  // head_dim 16 * 0.3125 rotates 5 dims: odd.
  e = parse_error(tiny("phi3", {{"rope_parameters", R"({"partial_rotary_factor": 0.3125})"}}));
  EXPECT_EQ(e.key(), "rope_parameters.partial_rotary_factor");
  EXPECT_NE(e.detail().find("rotary dimension of 5"), std::string::npos) << e.detail();
  e = parse_error(tiny("phi3", {{"partial_rotary_factor", "0.5"},
                                {"rope_parameters", R"({"partial_rotary_factor": 0.75})"}}));
  EXPECT_EQ(e.key(), "partial_rotary_factor");
  // longrope's factors: one per rotated pair (16 * 0.5 / 2 = 4).
  e = parse_error(
      tiny("phi3", {{"partial_rotary_factor", "0.5"},
                    {"rope_scaling", R"({"type": "longrope", "long_factor": [1, 1]})"}}));
  EXPECT_EQ(e.key(), "rope_scaling.long_factor");
  EXPECT_NE(e.detail().find("needs 4"), std::string::npos) << e.detail();
}

TEST(HfConfigErrorTest, MoeFieldsThatContradictEachOther) {
  ConfigError e =
      parse_error(tiny("qwen3_moe", {{"num_local_experts", "4"}, {"num_experts_per_tok", "8"}}));
  EXPECT_EQ(e.key(), "num_experts_per_tok");
  EXPECT_NE(e.detail().find("more than num_local_experts (4)"), std::string::npos) << e.detail();
  e = parse_error(tiny("qwen3_moe", {{"num_local_experts", "4"}, {"num_experts", "8"}}));
  EXPECT_EQ(e.key(), "num_experts");
  e = parse_error(tiny("qwen3_moe", {{"mlp_only_layers", "[0, 2]"}}));
  EXPECT_EQ(e.key(), "mlp_only_layers");
  EXPECT_NE(e.detail().find("entry 1 is 2"), std::string::npos) << e.detail();

  const std::map<std::string, std::string> grouped = {{"num_key_value_heads", ""},
                                                      {"n_routed_experts", "16"},
                                                      {"num_experts_per_tok", "4"},
                                                      {"topk_method", "\"group_limited_greedy\""},
                                                      {"n_group", "4"},
                                                      {"topk_group", "2"}};
  auto with = [&grouped](const std::map<std::string, std::string>& more) {
    auto fields = grouped;
    for (const auto& [k, v] : more) fields[k] = v;
    return tiny("deepseek_v2", fields);
  };
  e = parse_error(with({{"topk_group", "5"}}));
  EXPECT_EQ(e.key(), "topk_group");
  EXPECT_NE(e.detail().find("more than n_group (4)"), std::string::npos) << e.detail();
  e = parse_error(with({{"n_group", "3"}, {"topk_group", "1"}}));
  EXPECT_EQ(e.key(), "n_group");
  EXPECT_NE(e.detail().find("not divisible"), std::string::npos) << e.detail();
  e = parse_error(with({{"n_group", "null"}}));
  EXPECT_EQ(e.key(), "n_group");
  e = parse_error(with({{"topk_group", "1"}, {"num_experts_per_tok", "5"}}));  // 1 group of 4 kept
  EXPECT_EQ(e.key(), "num_experts_per_tok");
  e = parse_error(with({{"num_experts_per_tok", "17"}}));
  EXPECT_EQ(e.key(), "num_experts_per_tok");
  EXPECT_NE(e.detail().find("more than n_routed_experts (16)"), std::string::npos) << e.detail();
  e = parse_error(with({{"topk_method", "\"noaux_tc\""}}));
  EXPECT_EQ(e.key(), "topk_method");
  e = parse_error(tiny("deepseek_v3", {{"num_key_value_heads", "4"},
                                       {"first_k_dense_replace", "0"},
                                       {"topk_method", "\"greedy\""}}));
  EXPECT_EQ(e.key(), "topk_method");
  e = parse_error(tiny("deepseek_v3", {{"num_key_value_heads", "4"},
                                       {"first_k_dense_replace", "0"},
                                       {"scoring_func", "\"softmax\""}}));
  EXPECT_EQ(e.key(), "scoring_func");
  e = parse_error(tiny("deepseek_v3", {{"num_key_value_heads", "4"},
                                       {"first_k_dense_replace", "0"},
                                       {"n_routed_experts", "8"},
                                       {"n_group", "8"},
                                       {"topk_group", "1"},
                                       {"num_experts_per_tok", "1"}}));
  EXPECT_EQ(e.key(), "n_group");  // groups of one expert: noaux_tc sums each group's top 2
}

TEST(HfConfigErrorTest, MlaShapes) {
  const std::map<std::string, std::string> base = {{"num_key_value_heads", ""},
                                                   {"num_experts_per_tok", "2"}};
  auto with = [&base](const std::map<std::string, std::string>& more) {
    auto fields = base;
    for (const auto& [k, v] : more) fields[k] = v;
    return tiny("deepseek_v2", fields);
  };
  ConfigError e = parse_error(with({{"kv_lora_rank", "0"}}));
  EXPECT_EQ(e.key(), "kv_lora_rank");
  EXPECT_NE(e.line(), 0);
  EXPECT_NE(e.detail().find("greater than 0"), std::string::npos) << e.detail();
  e = parse_error(with({{"kv_lora_rank", "-512"}}));
  EXPECT_EQ(e.key(), "kv_lora_rank");
  e = parse_error(with({{"qk_head_dim", "128"}}));  // 128 + 64 is 192
  EXPECT_EQ(e.key(), "qk_head_dim");
  e = parse_error(with({{"qk_rope_head_dim", "63"}}));
  EXPECT_EQ(e.key(), "qk_rope_head_dim");
  e = parse_error(with({{"num_key_value_heads", "2"}}));
  EXPECT_EQ(e.key(), "num_key_value_heads");
  EXPECT_NE(e.detail().find("every head"), std::string::npos) << e.detail();
  e = parse_error(with({{"attention_bias", "true"}}));
  EXPECT_EQ(e.key(), "attention_bias");
  // DeepseekV3Config's num_key_value_heads default (128) is not these 4 heads.
  e = parse_error(tiny("deepseek_v3", {{"num_key_value_heads", ""}}));
  EXPECT_EQ(e.key(), "num_key_value_heads");
  EXPECT_EQ(e.line(), 0);
  e = parse_error(tiny("deepseek_v3", {{"num_key_value_heads", "4"}, {"kv_lora_rank", "null"}}));
  EXPECT_EQ(e.key(), "kv_lora_rank");
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
