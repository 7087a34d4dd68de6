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
      "cs336-2.7b",       "cs336-large",     "cs336-medium",
      "cs336-small",      "cs336-xl",        "deepseek-ocr-decoder",
      "deepseek-v2-lite", "deepseek-v3",     "gemma2-2b",
      "gemma3-1b",        "gpt2-large",      "gpt2-medium",
      "gpt2-small",       "gpt2-xl",         "llama3-70b",
      "llama3-8b",        "llama3.2-1b",     "mistral-7b-v0.1",
      "mixtral-8x7b",     "phi3-mini-4k",    "qwen2-1.5b",
      "qwen3-1.7b",       "qwen3-30b-a3b"};
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
  // Llama 3.2 1B: 64-wide heads, tied embeddings; Hugging Face counts 1,235,814,400 parameters.
  const ModelConfig small = preset("llama3.2-1b");
  EXPECT_EQ(small.head_dim, 64);
  EXPECT_TRUE(small.tied_embeddings);
  EXPECT_EQ(parameter_count(small), 1235814400);
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
      {"llama3-8b", 8030261248},
      {"llama3-70b", 70553706496},
      {"qwen2-1.5b", 1543714304},
      {"mixtral-8x7b", 46702792704},
      {"gpt2-small", 124439808},
      {"gpt2-medium", 354823168},
      {"gpt2-large", 774030080},
      {"gpt2-xl", 1557611200},
      // This year's families: the measured cases of the same shape
      // (validation/data/hf_models3_h100.json.gz) and published counts.
      {"qwen3-1.7b", 1720574976},
      {"gemma2-2b", 2614341888},
      {"gemma3-1b", 999885952},
      {"phi3-mini-4k", 3821079552},
      {"qwen3-30b-a3b", 30532122624},
      {"mistral-7b-v0.1", 7241732096},
      {"deepseek-v2-lite", 15706484224},
      // DeepSeek's own code counts e_score_correction_bias too (671,026,419,200: 256 per MoE
      // layer); transformers 5.17 registers it as a buffer.
      {"deepseek-v3", 671026404352},
  };
  for (const auto& [name, count] : expected) {
    EXPECT_EQ(parameter_count(preset(name)), count) << name;
  }
}

// No published figure: these follow from the same formula (and pin the presets down).

TEST(ModelConfigTest, ActiveParametersCountTheExpertsATokenVisits) {
  // The model cards' activated parameters: Qwen3-30B-A3B 3.3 B, DeepSeek-V2-Lite 2.4 B (without
  // its 0.21 B token embedding, which is counted here), DeepSeek-V3 37 B, Mixtral 8x7B 12.9 B;
  // dense models are all active.
  const std::map<std::string, double> active_b{
      {"qwen3-30b-a3b", 3.3}, {"deepseek-v2-lite", 2.4 + 0.21}, {"deepseek-v3", 37.0}, {"mixtral-8x7b", 12.9}};
  for (const auto& [name, billions] : active_b) {
    const double a = static_cast<double>(active_parameter_count(preset(name))) / 1e9;
    EXPECT_NEAR(a, billions, 0.05 * billions) << name;
    EXPECT_LT(active_parameter_count(preset(name)), parameter_count(preset(name))) << name;
  }
  EXPECT_EQ(active_parameter_count(preset("llama3-8b")), parameter_count(preset("llama3-8b")));
}

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

TEST(ModelConfigTest, ThisYearsFieldsDefaultOff) {
  const ModelConfig m = read(tiny());
  EXPECT_FALSE(m.qk_norm || m.fused_qkv || m.fused_gate_up || m.norm_weight_offset ||
               m.sandwich_norms || m.embed_scale);
  EXPECT_EQ(m.rotary_fraction, 1.0);
  EXPECT_EQ(m.rope_scaling, "default");
  EXPECT_FALSE(m.attn_softcap || m.final_softcap || m.query_scale || m.sliding_window ||
               m.rope_local_theta || m.mla);
  EXPECT_TRUE(m.sliding_layers.empty());
}

TEST(ModelConfigTest, ThisYearsFieldsAreRead) {
  const ModelConfig m = read(
      tiny("  qk_norm: true\n  fused_qkv: true\n  fused_gate_up: true\n  rotary_fraction: 0.75\n"
           "  rope_scaling: longrope\n  norm_weight_offset: true\n  sandwich_norms: true\n"
           "  embed_scale: true\n  attn_softcap: 50.0\n  final_softcap: 30\n  query_scale: 256\n"
           "  sliding_window: 512\n  sliding_layers: [true, false]\n  rope_local_theta: 10000\n"
           "  activation: geglu\n",
           "activation"));
  EXPECT_TRUE(m.qk_norm && m.fused_qkv && m.fused_gate_up && m.norm_weight_offset &&
              m.sandwich_norms && m.embed_scale);
  EXPECT_EQ(m.activation, Activation::kGeglu);
  EXPECT_EQ(m.rotary_fraction, 0.75);
  EXPECT_EQ(m.rope_scaling, "longrope");
  EXPECT_EQ(m.attn_softcap, 50.0);
  EXPECT_EQ(m.final_softcap, 30.0);
  EXPECT_EQ(m.query_scale, 256.0);
  EXPECT_EQ(m.sliding_window, 512);
  EXPECT_EQ(m.sliding_layers, (std::vector<bool>{true, false}));
  EXPECT_TRUE(m.sliding_layer(0));
  EXPECT_FALSE(m.sliding_layer(1));
  EXPECT_EQ(m.rope_local_theta, 10000.0);
  // Sandwich norms double the per-layer norms; q/k norms add head_dim each; GeGLU has 3 matrices.
  const std::int64_t per_layer = 4 * 64 + (2 * 64 * 64 + 2 * 64 * 32) + 2 * 16 + 3 * 64 * 128;
  EXPECT_EQ(parameter_count(m), 100 * 64 + 2 * per_layer + 64 + 100 * 64);
}

TEST(ModelConfigTest, MlaReplacesTheHeadDim) {
  const std::string mla =
      "  mla:\n    q_lora_rank: 32\n    kv_lora_rank: 16\n    qk_nope_head_dim: 8\n"
      "    qk_rope_head_dim: 4\n    v_head_dim: 8\n";
  const ModelConfig m = read(tiny(mla, "kv_heads"));
  ASSERT_TRUE(m.mla.has_value());
  EXPECT_EQ(m.head_dim, 12);
  EXPECT_EQ(m.mla->q_lora_rank, 32);
  EXPECT_EQ(m.mla->kv_lora_rank, 16);
  EXPECT_FALSE(m.mla->rope_interleave);
  const std::int64_t attention =
      64 * 32 + 32 + 32 * 4 * 12 + 64 * (16 + 4) + 16 + 16 * 4 * (8 + 8) + 4 * 8 * 64;
  EXPECT_EQ(parameter_count(m), 2 * 100 * 64 + 2 * (2 * 64 + attention + 3 * 64 * 128) + 64);

  ConfigError e = expect_config_error([&] { read(tiny(mla)); });  // kv_heads 2 of 4 heads
  EXPECT_EQ(e.key(), "model.kv_heads");
  e = expect_config_error([&] { read(tiny(mla + "  head_dim: 16\n", "kv_heads")); });
  EXPECT_EQ(e.key(), "model.head_dim");
  e = expect_config_error([&] { read(tiny(mla + "  qkv_bias: true\n", "kv_heads")); });
  EXPECT_EQ(e.key(), "model.qkv_bias");
  e = expect_config_error([&] {
    read(
        tiny("  mla:\n    kv_lora_rank: 0\n    qk_nope_head_dim: 8\n    qk_rope_head_dim: 4\n"
             "    v_head_dim: 8\n",
             "kv_heads"));
  });
  EXPECT_EQ(e.key(), "model.mla.kv_lora_rank");
  EXPECT_EQ(e.line(), 11);
  e = expect_config_error([&] {
    read(
        tiny("  mla:\n    kv_lora_rank: 16\n    qk_nope_head_dim: 8\n    qk_rope_head_dim: 5\n"
             "    v_head_dim: 8\n",
             "kv_heads"));
  });
  EXPECT_EQ(e.key(), "model.mla.qk_rope_head_dim");
  e = expect_config_error([&] { read(tiny("  mla:\n    kv_lora_rank: 16\n", "kv_heads")); });
  EXPECT_EQ(e.key(), "model.mla.qk_nope_head_dim");
}

TEST(ModelConfigTest, ThisYearsFieldsAreValidated) {
  const auto error = [](const std::string& extra, const std::string& without = "") {
    return expect_config_error([&] { read(tiny(extra, without)); });
  };
  ConfigError e = error("  rotary_fraction: 0\n");
  EXPECT_EQ(e.key(), "model.rotary_fraction");
  e = error("  rotary_fraction: 1.5\n");
  EXPECT_EQ(e.key(), "model.rotary_fraction");
  e = error("  rotary_fraction: 0.3125\n");  // 5 of head_dim 16: odd
  EXPECT_EQ(e.key(), "model.rotary_fraction");
  EXPECT_NE(e.detail().find("even"), std::string::npos) << e.detail();
  e = error("  rope_scaling: ntk\n");
  EXPECT_EQ(e.key(), "model.rope_scaling");
  EXPECT_EQ(e.line(), 11);
  EXPECT_NE(e.detail().find("default, linear, dynamic, yarn, longrope, llama3"), std::string::npos);
  e = error("  positions: learned\n  max_positions: 64\n  rope_scaling: yarn\n", "positions");
  EXPECT_EQ(e.key(), "model.rope_scaling");
  e = error("  sliding_layers: [true]\n");
  EXPECT_EQ(e.key(), "model.sliding_layers");
  EXPECT_NE(e.detail().find("sliding_window is not"), std::string::npos);
  e = error("  sliding_window: 8\n  sliding_layers: [true, false, true]\n");  // 2 layers
  EXPECT_EQ(e.key(), "model.sliding_layers");
  e = error("  sliding_window: 8\n  sliding_layers: [false, false]\n");
  EXPECT_EQ(e.key(), "model.sliding_layers");
  e = error("  sliding_window: 8\n  sliding_layers: [true, maybe]\n");
  EXPECT_EQ(e.key(), "model.sliding_layers[1]");
  e = error("  sliding_window: 0\n");
  EXPECT_EQ(e.key(), "model.sliding_window");
  e = error("  rope_local_theta: 10000\n");
  EXPECT_EQ(e.key(), "model.rope_local_theta");
  e = error("  attn_softcap: -1\n");
  EXPECT_EQ(e.key(), "model.attn_softcap");
  e = error("  norm_weight_offset: true\n  norm: layernorm\n", "norm");
  EXPECT_EQ(e.key(), "model.norm_weight_offset");
  e = error("  fused_gate_up: true\n  activation: gelu\n", "activation");
  EXPECT_EQ(e.key(), "model.fused_gate_up");
  e = error("  activation: reglu\n", "activation");
  EXPECT_NE(e.detail().find("gelu, swiglu, geglu"), std::string::npos);
}

TEST(ModelConfigTest, MoePlacementAndRouting) {
  const std::string moe = "  moe:\n    experts: 8\n    top_k: 2\n    expert_d_ff: 32\n";
  const auto model = [&](const std::string& more) {
    return read(tiny(moe + more, "layers") + "  layers: 6\n");
  };
  const ModelConfig m = model(
      "    every: 2\n    phase: 1\n    dense_list: [3]\n    scoring: sigmoid\n"
      "    topk_method: noaux_tc\n    groups: 4\n    topk_groups: 2\n    routed_scaling: 2.5\n"
      "    router_fp32: true\n");
  std::vector<bool> moe_layers;
  for (int i = 0; i < 6; ++i) moe_layers.push_back(m.moe_layer(i));
  EXPECT_EQ(moe_layers, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(m.moe->scoring, RouterScoring::kSigmoid);
  EXPECT_EQ(m.moe->topk_method, TopkMethod::kNoauxTc);
  EXPECT_EQ(m.moe->groups, 4);
  EXPECT_EQ(m.moe->topk_groups, 2);
  EXPECT_EQ(m.moe->routed_scaling, 2.5);
  EXPECT_TRUE(m.moe->router_fp32);
  EXPECT_EQ(m.d_ff, 128);  // dense layers remain: d_ff is required
  // Two MoE layers, four dense ones.
  const std::int64_t attention = 2 * 64 + 2 * 64 * 64 + 2 * 64 * 32;
  EXPECT_EQ(parameter_count(m), 100 * 64 + 6 * attention + 4 * 3 * 64 * 128 +
                                    2 * (8 * 64 + 8 * 3 * 64 * 32) + 64 + 100 * 64);
  EXPECT_EQ(name(m.moe->scoring), "sigmoid");
  EXPECT_EQ(name(m.moe->topk_method), "noaux_tc");

  const auto error = [&](const std::string& more) {
    return expect_config_error([&] { model(more); });
  };
  ConfigError e = error("    every: 2\n    phase: 2\n");
  EXPECT_EQ(e.key(), "model.moe.phase");
  e = error("    dense_list: [6]\n");
  EXPECT_EQ(e.key(), "model.moe.dense_list[0]");
  e = error("    dense_list: [1, 1]\n");
  EXPECT_EQ(e.key(), "model.moe.dense_list[1]");
  e = error("    dense_list: [0, 1, 2, 3, 4, 5]\n");
  EXPECT_EQ(e.key(), "model.moe.dense_list");
  EXPECT_NE(e.detail().find("no layer is MoE"), std::string::npos);
  e = error("    every: 7\n    phase: 6\n");  // layer 6 of 0-5
  EXPECT_EQ(e.key(), "model.moe.every");
  e = error("    groups: 3\n");
  EXPECT_EQ(e.key(), "model.moe.groups");
  e = error("    groups: 2\n    topk_groups: 4\n");
  EXPECT_EQ(e.key(), "model.moe.topk_groups");
  e = error("    topk_method: noaux_tc\n    groups: 8\n");  // groups of one expert
  EXPECT_EQ(e.key(), "model.moe.groups");
  e = error("    topk_method: group_limited_greedy\n    groups: 8\n");  // top_k 2 of 1 group kept
  EXPECT_EQ(e.key(), "model.moe.top_k");
  e = error("    scoring: relu\n");
  EXPECT_EQ(e.key(), "model.moe.scoring");
  e = error("    routed_scaling: 0\n");
  EXPECT_EQ(e.key(), "model.moe.routed_scaling");
}

TEST(ModelConfigTest, NewPresetValues) {
  const ModelConfig gemma3 = preset("gemma3-1b");
  int windowed = 0;
  for (std::int64_t i = 0; i < gemma3.layers; ++i) windowed += gemma3.sliding_layer(i);
  EXPECT_EQ(windowed, 22);  // 26 layers, every 6th global
  EXPECT_FALSE(gemma3.sliding_layer(5));
  EXPECT_TRUE(gemma3.sliding_layer(24));
  const ModelConfig v3 = preset("deepseek-v3");
  int moe_layers = 0;
  for (std::int64_t i = 0; i < v3.layers; ++i) moe_layers += v3.moe_layer(i);
  EXPECT_EQ(moe_layers, 58);
  EXPECT_EQ(v3.head_dim, 192);
  EXPECT_EQ(preset("qwen3-30b-a3b").d_ff, 0);
  EXPECT_EQ(preset("phi3-mini-4k").head_dim, 96);
  EXPECT_EQ(preset("mistral-7b-v0.1").sliding_window, 4096);
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
