#include "workloads/model_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "tests/workloads/config_error_matchers.h"
#include "workloads/parameter_count.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::expect_config_error;

const std::filesystem::path kModelsDir = std::filesystem::path(GPUSIM_REPO_DIR) / "configs/models";
const std::filesystem::path kTestModelsDir =
    std::filesystem::path(GPUSIM_TEST_DATA_DIR) / "workloads/models";

ModelConfig preset(const std::string& name) {
  const auto file = find_model_preset(name, kModelsDir);
  if (!file) throw std::runtime_error("no preset " + name);
  return load_model_file(*file);
}

// Reads the `model:` mapping of `text` as an inline model, labelled "m.yaml".
ModelConfig read(const std::string& text) {
  const auto doc = hw::YamlDocument::from_string(text, "m.yaml");
  hw::MappingReader root(doc, doc.root(), "");
  return read_model_config(doc, root.node("model"), "model", "m");
}

// A small valid model; line 1 is `model:`, line N+1 the N-th field.
std::string tiny(const std::string& extra = "", const std::string& without = "") {
  std::string text = "model:\n";
  for (const std::string line :
       {"layers: 2", "d_model: 64", "heads: 4", "kv_heads: 2", "d_ff: 128", "vocab: 100",
        "norm: rmsnorm", "activation: swiglu", "positions: rope"}) {
    if (!without.empty() && line.rfind(without + ":", 0) == 0) continue;
    text += "  " + line + "\n";
  }
  return text + extra;
}

TEST(ModelConfigTest, EveryPresetLoads) {
  const std::vector<std::string> expected = {
      "cs336-2.7b",           "cs336-large", "cs336-medium", "cs336-small", "cs336-xl",
      "deepseek-ocr-decoder", "gpt2-large",  "gpt2-medium",  "gpt2-small",  "gpt2-xl",
      "llama3-70b",           "llama3-8b",   "mixtral-8x7b", "qwen2-1.5b"};
  EXPECT_EQ(model_preset_names(kModelsDir), expected);
  for (const auto& name : expected) {
    SCOPED_TRACE(name);
    const ModelConfig m = preset(name);
    EXPECT_EQ(m.name, name);
    EXPECT_EQ(m.heads % m.kv_heads, 0);
    EXPECT_GT(parameter_count(m), 0);
  }
}

TEST(ModelConfigTest, PresetsCarryTheirSourcesAsComments) {
  for (const auto& name : model_preset_names(kModelsDir)) {
    const auto doc = hw::YamlDocument::from_file(kModelsDir / (name + ".yaml"));
    std::vector<YAML::Node> mappings = {doc.root()["model"]};
    while (!mappings.empty()) {
      const YAML::Node mapping = mappings.back();
      mappings.pop_back();
      for (const auto& kv : mapping) {
        if (kv.second.IsMap()) {
          mappings.push_back(kv.second);
          continue;
        }
        EXPECT_FALSE(doc.trailing_comment(hw::YamlDocument::line_of(kv.first)).empty())
            << name << ": " << kv.first.Scalar() << " has no source comment";
      }
    }
  }
}

TEST(ModelConfigTest, LlamaPresetValues) {
  const ModelConfig m = preset("llama3-8b");
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.d_model, 4096);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.d_ff, 14336);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.norm, Norm::kRmsNorm);
  EXPECT_EQ(m.activation, Activation::kSwiglu);
  EXPECT_EQ(m.positions, Positions::kRope);
  EXPECT_DOUBLE_EQ(m.rope_theta.value(), 500000.0);
  EXPECT_DOUBLE_EQ(m.norm_eps.value(), 1e-5);
  EXPECT_FALSE(m.max_positions.has_value());
  EXPECT_FALSE(m.moe.has_value());
}

TEST(ModelConfigTest, DeepseekOcrDecoderIsDeepseekV2MoeWithoutMla) {
  const ModelConfig m = preset("deepseek-ocr-decoder");
  EXPECT_EQ(m.layers, 12);
  EXPECT_EQ(m.d_model, 1280);
  EXPECT_EQ(m.heads, 10);
  EXPECT_EQ(m.kv_heads, 10);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.d_ff, 6848);
  EXPECT_EQ(m.vocab, 129280);
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->experts, 64);
  EXPECT_EQ(m.moe->top_k, 6);
  EXPECT_EQ(m.moe->expert_d_ff, 896);
  EXPECT_EQ(m.moe->shared_experts, 2);
  EXPECT_EQ(m.moe->shared_expert_d_ff, 896);
  EXPECT_EQ(m.moe->dense_layers, 1);
  EXPECT_EQ(m.moe->norm_topk_prob, false);
}

// Published or Hugging Face counts (sum of numel over model.parameters()).
TEST(ModelParameterCountTest, MatchesHuggingFace) {
  const std::map<std::string, std::int64_t> expected = {
      {"llama3-8b", 8030261248},     {"llama3-70b", 70553706496}, {"qwen2-1.5b", 1543714304},
      {"mixtral-8x7b", 46702792704}, {"gpt2-small", 124439808},   {"gpt2-medium", 354823168},
      {"gpt2-large", 774030080},     {"gpt2-xl", 1557611200},
  };
  for (const auto& [name, count] : expected) {
    EXPECT_EQ(parameter_count(preset(name)), count) << name;
  }
}

// No published figure: these follow from the same formula (and pin the presets down).
TEST(ModelParameterCountTest, OtherPresetsByFormula) {
  const std::map<std::string, std::int64_t> expected = {
      {"cs336-small", 128625408}, {"cs336-medium", 423183360}, {"cs336-large", 969411840},
      {"cs336-xl", 1998235200},   {"cs336-2.7b", 3406809600},  {"deepseek-ocr-decoder", 2934734080},
  };
  for (const auto& [name, count] : expected) {
    EXPECT_EQ(parameter_count(preset(name)), count) << name;
  }
}

TEST(ModelParameterCountTest, CountsEachPartOnceByHand) {
  // 2 layers, d 64, 4 heads of 16, 2 KV heads: q,o 64x64, k,v 64x32; SwiGLU 3 x 64 x 128.
  ModelConfig m = read(tiny());
  const std::int64_t per_layer = 2 * 64 + (2 * 64 * 64 + 2 * 64 * 32) + 3 * 64 * 128;
  EXPECT_EQ(parameter_count(m), 100 * 64 + 2 * per_layer + 64 + 100 * 64);
  m.tied_embeddings = true;
  m.qkv_bias = true;
  EXPECT_EQ(parameter_count(m), 100 * 64 + 2 * (per_layer + 64 + 32 + 32) + 64);
}

TEST(ModelConfigTest, HeadDimDefaultsToDModelOverHeads) {
  EXPECT_EQ(read(tiny()).head_dim, 16);
  EXPECT_EQ(read(tiny("  head_dim: 32\n")).head_dim, 32);
}

TEST(ModelConfigTest, UnknownKeyNamesFileLineAndKeyPath) {
  const ConfigError e = expect_config_error([] { read(tiny("  kv_head: 2\n")); });
  EXPECT_EQ(e.file(), "m.yaml");
  EXPECT_EQ(e.line(), 11);
  EXPECT_EQ(e.key(), "model.kv_head");
  EXPECT_NE(e.detail().find("unknown key"), std::string::npos);
}

TEST(ModelConfigTest, MissingKey) {
  const ConfigError e = expect_config_error([] { read(tiny("", "vocab")); });
  EXPECT_EQ(e.file(), "m.yaml");
  EXPECT_EQ(e.line(), 2);  // the model mapping
  EXPECT_EQ(e.key(), "model.vocab");
  EXPECT_NE(e.detail().find("missing"), std::string::npos);
}

TEST(ModelConfigTest, HeadsMustBeAMultipleOfKvHeads) {
  const ConfigError e = expect_config_error([] { read(tiny("", "kv_heads") + "  kv_heads: 3\n"); });
  EXPECT_EQ(e.line(), 10);
  EXPECT_EQ(e.key(), "model.kv_heads");
  EXPECT_NE(e.detail().find("not a multiple"), std::string::npos);
}

TEST(ModelConfigTest, ZeroLayers) {
  const ConfigError e = expect_config_error([] { read(tiny("", "layers") + "  layers: 0\n"); });
  EXPECT_EQ(e.line(), 10);
  EXPECT_EQ(e.key(), "model.layers");
  EXPECT_NE(e.detail().find("out of range"), std::string::npos);
}

TEST(ModelConfigTest, DModelMustDivideByHeadsWithoutHeadDim) {
  const ConfigError e = expect_config_error([] { read(tiny("", "d_model") + "  d_model: 66\n"); });
  EXPECT_EQ(e.key(), "model.heads");
  EXPECT_NE(e.detail().find("give head_dim"), std::string::npos);
}

TEST(ModelConfigTest, MoeChecks) {
  const std::string moe = "  moe:\n    experts: 4\n    top_k: 5\n    expert_d_ff: 32\n";
  ConfigError e = expect_config_error([&] { read(tiny(moe)); });
  EXPECT_EQ(e.line(), 13);
  EXPECT_EQ(e.key(), "model.moe.top_k");

  // Every layer MoE: d_ff has no meaning and is refused; the model needs none.
  const std::string all_moe = "  moe:\n    experts: 4\n    top_k: 2\n    expert_d_ff: 32\n";
  e = expect_config_error([&] { read(tiny(all_moe)); });
  EXPECT_EQ(e.key(), "model.d_ff");
  const ModelConfig m = read(tiny(all_moe, "d_ff"));
  EXPECT_EQ(m.d_ff, 0);
  EXPECT_EQ(m.moe->shared_expert_d_ff, 32);

  e = expect_config_error([&] { read(tiny(all_moe + "    dense_layers: 2\n")); });
  EXPECT_EQ(e.key(), "model.moe.dense_layers");
  e = expect_config_error([&] { read(tiny(all_moe + "    topk: 2\n", "d_ff")); });
  EXPECT_EQ(e.key(), "model.moe.topk");
  EXPECT_EQ(e.line(), 14);
}

TEST(ModelConfigTest, PositionTableOnlyForLearnedPositions) {
  ConfigError e = expect_config_error([] { read(tiny("  max_positions: 512\n")); });
  EXPECT_EQ(e.key(), "model.max_positions");
  e = expect_config_error([] { read(tiny("  positions: learned\n", "positions")); });
  EXPECT_EQ(e.key(), "model.max_positions");
  EXPECT_EQ(read(tiny("  positions: learned\n  max_positions: 512\n", "positions")).max_positions,
            512);
  e = expect_config_error([] { read(tiny("  norm_eps: 0\n")); });
  EXPECT_EQ(e.key(), "model.norm_eps");
}

TEST(ModelConfigTest, BadChoice) {
  const ConfigError e = expect_config_error([] { read(tiny("  norm: batchnorm\n", "norm")); });
  EXPECT_EQ(e.key(), "model.norm");
  EXPECT_NE(e.detail().find("layernorm, rmsnorm"), std::string::npos);
}

TEST(ModelConfigTest, MalformedYaml) {
  const ConfigError e =
      expect_config_error([] { load_model_file(kTestModelsDir / "malformed.yaml"); });
  EXPECT_EQ(e.file(), (kTestModelsDir / "malformed.yaml").string());
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.key(), "");
  EXPECT_NE(e.detail().find("malformed YAML"), std::string::npos);
}

TEST(ModelConfigTest, PresetNameMustMatchItsFile) {
  const ConfigError e =
      expect_config_error([] { load_model_file(kTestModelsDir / "wrong-name.yaml"); });
  EXPECT_EQ(e.file(), (kTestModelsDir / "wrong-name.yaml").string());
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.key(), "model.name");
}

TEST(ModelConfigTest, PresetLookupTakesPlainNamesOnly) {
  EXPECT_TRUE(find_model_preset("llama3-8b", kModelsDir).has_value());
  EXPECT_FALSE(find_model_preset("llama3-9b", kModelsDir).has_value());
  EXPECT_FALSE(find_model_preset("../models/llama3-8b", kModelsDir).has_value());
  EXPECT_FALSE(find_model_preset("", kModelsDir).has_value());
}

}  // namespace
}  // namespace gpusim::workloads
