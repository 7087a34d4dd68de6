#include "workloads/workload.h"

#include <fmt/format.h>

#include <system_error>

#include "sim/error.h"
#include "sim/input_file.h"
#include "workloads/hf_config.h"
#include "workloads/op_reader.h"

namespace gpusim::workloads {
namespace {

constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;

void declare_keys(hw::MappingReader& r, const std::vector<std::string_view>& keys) {
  for (const auto key : keys) r.has(key);
  r.reject_unknown();
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

OpWorkload read_op_workload(const hw::YamlDocument& doc, hw::MappingReader& root,
                            std::string default_name) {
  declare_keys(root, {"name", "dtype", "ops"});
  OpWorkload w;
  w.name = root.optional_text("name").value_or(std::move(default_name));
  w.default_dtype = read_optional_dtype(root, "dtype");
  const YAML::Node ops = root.node("ops");
  if (!ops.IsSequence()) root.fail("ops", "expected a list of ops");
  if (ops.size() == 0) root.fail("ops", "is empty");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const YAML::Node item = ops[i];
    w.ops.push_back({read_op(doc, item, fmt::format("ops[{}]", i), w.default_dtype),
                     hw::YamlDocument::line_of(item)});
  }
  return w;
}

// `hf_config: PATH`, relative to the workload file's folder.
ModelConfig read_hf_model(const hw::YamlDocument& doc, hw::MappingReader& root) {
  const std::filesystem::path named = root.text("hf_config");
  const auto file = named.is_absolute() ? named : doc.path().parent_path() / named;
  if (const std::string problem = input_file_problem(file); !problem.empty()) {
    root.fail("hf_config", fmt::format("{}: {}", problem, file.string()));
  }
  return load_hf_config(file);
}

ModelConfig read_model(const hw::YamlDocument& doc, hw::MappingReader& root,
                       const std::filesystem::path& models_dir) {
  const bool has_model = root.has("model");
  const bool has_hf_config = root.has("hf_config");
  if (has_model && has_hf_config) {
    root.fail("hf_config",
              "a workload names its model once: model (a preset or inline fields) or hf_config "
              "(a Hugging Face config.json), not both");
  }
  if (!has_model && !has_hf_config) {
    root.fail("model",
              "missing: name a preset or write inline fields (model:), or give a Hugging Face "
              "config.json (hf_config:)");
  }
  if (has_hf_config) return read_hf_model(doc, root);
  const YAML::Node node = root.node("model");
  if (node.IsMap()) return read_model_config(doc, node, "model", "custom");
  if (!node.IsScalar()) {
    root.fail("model", "expected a preset name or a mapping of model fields");
  }
  const std::string preset = node.Scalar();
  const auto file = find_model_preset(preset, models_dir);
  if (!file) {
    root.fail("model", fmt::format("no model preset '{}' in {} (presets: {})", preset,
                                   models_dir.string(), join(model_preset_names(models_dir))));
  }
  return load_model_file(*file);
}

// A key naming one of `values`; when absent, `fallback`, or a missing-key error without one.
template <class Enum>
Enum read_choice(hw::MappingReader& r, std::string_view key,
                 const std::vector<std::pair<std::string_view, Enum>>& values,
                 std::optional<Enum> fallback = std::nullopt) {
  if (fallback && !r.has(key)) return *fallback;
  std::vector<std::string_view> names;
  for (const auto& [n, _] : values) names.push_back(n);
  const std::string text = r.choice(key, names);
  for (const auto& [n, value] : values) {
    if (n == text) return value;
  }
  r.fail(key, "unhandled choice");
}

// One weight per expert, non-negative and not all zero, from a YAML list at `path`.
std::vector<double> read_weight_list(const hw::YamlDocument& doc, const YAML::Node& node,
                                     const std::string& path, const ModelConfig& m) {
  if (!node.IsSequence()) doc.fail(node, path, "expected a list of numbers, one per expert");
  const auto experts = static_cast<std::size_t>(m.moe->experts);
  if (node.size() != experts) {
    doc.fail(node, path,
             fmt::format("has {} weights; model {} has {} experts", node.size(), m.name, experts));
  }
  std::vector<double> out;
  double total = 0;
  for (std::size_t i = 0; i < node.size(); ++i) {
    out.push_back(hw::to_number(doc, node[i], fmt::format("{}[{}]", path, i), 0.0, 1e12));
    total += out.back();
  }
  if (total <= 0) doc.fail(node, path, "all weights are 0");
  return out;
}

// `expert_weights: [w0, w1, ...]`: how routed tokens split over the experts (one non-negative
// weight per expert, not all zero); absent means evenly. `expert_weights_by_layer: {i: [...]}`:
// the same for MoE layer i alone (a routing trace, such as a benchmark's recorded routing).
void read_expert_weights(const hw::YamlDocument& doc, hw::MappingReader& root, ModelWorkload& w) {
  for (const std::string_view key : {"expert_weights", "expert_weights_by_layer"}) {
    if (root.has(key) && !w.model.moe)
      root.fail(key, fmt::format("model {} has no experts", w.model.name));
  }
  if (const auto node = root.optional_node("expert_weights")) {
    w.expert_weights = read_weight_list(doc, *node, root.path("expert_weights"), w.model);
  }
  const auto by_layer = root.optional_node("expert_weights_by_layer");
  if (!by_layer) return;
  const std::string path = root.path("expert_weights_by_layer");
  if (!by_layer->IsMap())
    doc.fail(*by_layer, path, "expected a mapping of MoE layer index to a list of weights");
  for (const auto& item : *by_layer) {
    const std::int64_t layer = hw::to_integer(doc, item.first, path, 0, w.model.layers - 1);
    const std::string at = fmt::format("{}.{}", path, layer);
    if (!w.model.moe_layer(layer))
      doc.fail(item.first, at, fmt::format("layer {} of {} is dense", layer, w.model.name));
    if (w.layer_expert_weights.count(layer) != 0) doc.fail(item.first, at, "given twice");
    w.layer_expert_weights[layer] = read_weight_list(doc, item.second, at, w.model);
  }
}

// Learned position tables bound how many tokens a sequence can hold.
void check_positions(hw::MappingReader& root, const ModelWorkload& w) {
  if (!w.model.max_positions) return;
  const std::int64_t limit = *w.model.max_positions;
  if (w.seq_len > limit) {
    root.fail("seq_len", fmt::format("{} is more than model {} has positions for ({})", w.seq_len,
                                     w.model.name, limit));
  }
  // The last generated token is never fed back, so it needs no position.
  if (w.output_len && w.seq_len + *w.output_len - 1 > limit) {
    root.fail("output_len",
              fmt::format("seq_len + output_len - 1 = {} is more than model {} has positions "
                          "for ({})",
                          w.seq_len + *w.output_len - 1, w.model.name, limit));
  }
}

// The hf-eager variants exist where their code does: the per-expert loop (DeepSeek's remote
// code, moe_infer, with its fp32 router) needs MoE layers, flash_attention_2 runs 16-bit multi-
// or grouped-query attention.
void check_hf_variants(hw::MappingReader& root, const ModelWorkload& w) {
  const ModelConfig& m = w.model;
  if (w.moe == MoePath::kLoop) {
    if (w.lowering != Lowering::kHfEager) root.fail("moe", "the per-expert loop is an hf-eager variant");
    if (!m.moe) root.fail("moe", fmt::format("model {} has no MoE layers to loop over", m.name));
  }
  if (w.attention == Attention::kFlash2) {
    if (w.lowering != Lowering::kHfEager) root.fail("attention", "flash_attention_2 is an hf-eager variant");
    if (w.dtype != hw::DType::kBf16 && w.dtype != hw::DType::kFp16) {
      root.fail("attention", "FlashAttention-2 runs bf16 or fp16 only");
    }
    if (m.mla) root.fail("attention", "flash_attention_2 with multi-head latent attention is not modeled; use sdpa");
    if (m.sliding_window) root.fail("attention", "flash_attention_2 with sliding windows is not modeled; use sdpa");
  }
}

// cs336_basics training as seed 002 runs it: fp32 tensors (TF32 matmuls allowed), no autocast,
// its own AdamW or no optimizer step, one micro-batch, no checkpointing (its code has none).
void check_cs336_training(hw::MappingReader& root, const ModelWorkload& w) {
  if (w.autocast) {
    root.fail("autocast", "lowering cs336-basics trains in fp32 only so far (its einsums and hand-written ops "
                          "under autocast are not modeled); remove autocast");
  }
  if (w.dtype != hw::DType::kFp32 && w.dtype != hw::DType::kTf32) {
    root.fail("dtype", fmt::format("lowering cs336-basics trains in fp32 (or tf32: fp32 tensors, TF32 matmuls) "
                                   "only so far; dtype is {}",
                                   hw::name(w.dtype)));
  }
  if (w.optimizer != Optimizer::kAdamW && w.optimizer != Optimizer::kNone) {
    root.fail("optimizer", fmt::format("cs336_basics has one optimizer, its own AdamW (optimizer: adamw), or use "
                                       "optimizer: none; {} is not lowered for cs336-basics",
                                       name(w.optimizer)));
  }
  if (w.checkpointing != Checkpointing::kNone) {
    root.fail("checkpointing", "activation checkpointing is not lowered for cs336-basics (its code has none)");
  }
  if (w.accumulation_steps != 1) {
    root.fail("gradient_accumulation_steps", "lowering cs336-basics runs one micro-batch a step so far");
  }
}

// The fused lowering's training step is a tuned trainer's (a TorchInductor-compiled model, as
// validation/data/hf_train4_h100.json.gz measures it): dense llama-style decoders in 16-bit weights.
void check_fused_training(hw::MappingReader& root, const ModelWorkload& w) {
  const ModelConfig& m = w.model;
  if (w.autocast) root.fail("autocast", "lowering fused trains in 16-bit weights (bf16 or fp16) only so far; remove autocast");
  if (w.dtype != hw::DType::kBf16 && w.dtype != hw::DType::kFp16) {
    root.fail("dtype", fmt::format("lowering fused trains in bf16 or fp16 only so far; dtype is {}", hw::name(w.dtype)));
  }
  if (w.checkpointing != Checkpointing::kNone) {
    root.fail("checkpointing", "activation checkpointing under a compiled trainer is not lowered (the fused lowering's "
                               "training step); use lowering: hf-eager");
  }
  if (w.attention != Attention::kSdpa) root.fail("attention", "lowering fused trains with sdpa attention only");
  std::string unlike;
  if (m.moe) unlike = "mixture of experts";
  else if (m.mla) unlike = "multi-head latent attention";
  else if (m.norm != Norm::kRmsNorm) unlike = "a norm other than RMSNorm";
  else if (m.activation != Activation::kSwiglu) unlike = "an activation other than SwiGLU";
  else if (m.positions != Positions::kRope || m.rotary_fraction != 1.0) unlike = "positions other than full RoPE";
  else if (m.fused_qkv || m.fused_gate_up) unlike = "fused projections";
  else if (m.attn_out_bias || m.mlp_bias) unlike = "output or MLP biases";
  else if (m.sliding_window && w.seq_len > *m.sliding_window) unlike = "a sliding window shorter than seq_len";
  else if (m.sandwich_norms || m.norm_weight_offset || m.embed_scale || m.attn_softcap || m.final_softcap)
    unlike = "Gemma's norms, scaling or softcaps";
  if (!unlike.empty()) {
    root.fail("phase", fmt::format("lowering fused trains dense llama-style models (llama, mistral, qwen2, qwen3) so "
                                   "far; model {} has {} (lowering: hf-eager trains more families)",
                                   m.name, unlike));
  }
}

// Training steps: the optimizer (phase train only), and what the train lowering covers so far
// (hf-eager: llama-style decoders with RMSNorm, RoPE and SwiGLU, dense or with grouped_mm MoE
// blocks, GPT-2, Phi-3 and Gemma 3; sdpa attention; 16-bit weights, or fp32 under autocast or in
// fp32 throughout for the dense llama-style ones). Everything else is refused by name rather than
// simulated wrongly.
void read_training(hw::MappingReader& root, ModelWorkload& w) {
  const bool train = w.phase == Phase::kTrain;
  for (const char* key : {"optimizer", "autocast", "checkpointing", "gradient_accumulation_steps"}) {
    if (!train && root.optional_node(key)) root.fail(key, "is for phase: train only");
  }
  if (!train) return;
  w.optimizer = read_choice<Optimizer>(root, "optimizer",
                                       {{"adamw", Optimizer::kAdamW}, {"adamw-fused", Optimizer::kAdamWFused},
                                        {"sgd", Optimizer::kSgd}, {"none", Optimizer::kNone}},
                                       Optimizer::kAdamW);
  if (root.has("autocast")) {
    w.autocast = read_choice<hw::DType>(root, "autocast", {{"bf16", hw::DType::kBf16}, {"fp16", hw::DType::kFp16}});
    if (w.dtype != hw::DType::kFp32) {
      root.fail("autocast", fmt::format("mixed precision keeps fp32 weights and computes in {} under autocast: "
                                        "use dtype: fp32 with it (dtype is {})",
                                        hw::name(*w.autocast), hw::name(w.dtype)));
    }
  }
  w.checkpointing = read_choice<Checkpointing>(root, "checkpointing",
                                               {{"none", Checkpointing::kNone}, {"full", Checkpointing::kFull}},
                                               Checkpointing::kNone);
  if (w.checkpointing == Checkpointing::kFull && w.model.layers == 0) {
    root.fail("checkpointing", "full checkpointing wraps each decoder layer, and the model has no layers");
  }
  w.accumulation_steps = static_cast<int>(root.optional_integer("gradient_accumulation_steps", 1, 1024).value_or(1));
  const ModelConfig& m = w.model;
  if (w.lowering == Lowering::kCs336Basics) return check_cs336_training(root, w);
  if (w.lowering == Lowering::kFused) return check_fused_training(root, w);
  if (w.attention != Attention::kSdpa) root.fail("attention", "phase train is lowered for sdpa attention only so far");
  const hw::DType compute = w.autocast.value_or(w.dtype);
  if (compute != hw::DType::kBf16 && compute != hw::DType::kFp16 && compute != hw::DType::kFp32) {
    root.fail("dtype", "phase train is lowered for bf16, fp16 and fp32 computation so far (fp32 weights under "
                       "autocast: bf16 or fp16 included; tf32 matmuls are not)");
  }
  if (m.moe) {
    // Mixture of experts: transformers 5's grouped_mm experts path with the router in the model
    // dtype (qwen3_moe, mixtral), or DeepSeek-V2's fp32 softmax router with greedy top-k and
    // shared experts (deepseek_v2), in bf16 or fp16 weights.
    if (w.moe == MoePath::kLoop) {
      root.fail("moe", "phase train is lowered for the grouped_mm experts path (transformers 5) only so far; "
                       "the per-expert loop (moe: loop, framework: transformers-4.46) is not");
    }
    if (w.autocast) root.fail("autocast", "phase train with mixture-of-experts layers is lowered without autocast only so far");
    const bool deepseek_v2_router = m.moe->router_fp32 && m.moe->scoring == RouterScoring::kSoftmax &&
                                    m.moe->topk_method == TopkMethod::kGreedy && !m.moe->norm_topk_prob.value_or(false);
    if ((m.moe->router_fp32 || m.moe->shared_experts > 0) && !deepseek_v2_router) {
      root.fail("phase", fmt::format("phase train is lowered for MoE routers in the model dtype (qwen3_moe, mixtral) "
                                     "and DeepSeek-V2's fp32 softmax router with greedy top-k so far; model {} routes "
                                     "otherwise (DeepSeek-V3's grouped sigmoid routing is not lowered)",
                                     m.name));
    }
  }
  // Phi-3 (both projections fused, partial RoPE allowed) and Gemma 3 (its norms, embedding scale,
  // sandwich norms and GeGLU together) have their own backward (hf_train_phi3.cpp,
  // hf_train_gemma.cpp).
  const bool phi3 = m.fused_qkv && m.fused_gate_up;
  const bool gemma = m.sandwich_norms && m.norm_weight_offset && m.embed_scale;
  std::string unlike;
  // GPT-2 (learned positions, LayerNorm, gelu_new, Conv1D biases, a tied head) has its own backward.
  const bool gpt2 = m.positions == Positions::kLearned && m.norm == Norm::kLayerNorm &&
                    m.activation == Activation::kGelu && !m.fused_qkv && !m.fused_gate_up && m.max_positions;
  if (gpt2 && w.autocast) {
    root.fail("autocast", "mixed precision is lowered for llama-style models so far; GPT-2 under autocast "
                          "(LayerNorm kept in fp32, Conv1D's addmm cast) is not: use dtype: bf16 or fp16");
  }
  if (m.mla && (m.mla->q_lora_rank != 0 || m.mla->rope_interleave))
    unlike = "multi-head latent attention with a query LoRA or interleaved RoPE (DeepSeek-V2-Lite's, without them, is lowered)";
  else if (m.mla && !m.moe) unlike = "multi-head latent attention without DeepSeek's MoE layers";
  else if (m.mla) {
    // DeepSeek-V2-Lite's layers: workloads/hf_train_mla.cpp and hf_train_moe.cpp.
  }
  else if (m.moe && (phi3 || gemma || gpt2)) unlike = "mixture of experts outside llama-style layers";
  else if (gpt2) {
    if (m.sliding_window || m.sandwich_norms || m.norm_weight_offset || m.embed_scale || m.attn_softcap ||
        m.final_softcap || m.qk_norm)
      unlike = "GPT-2 layers with windows, extra norms, scaling or softcaps";
  } else if (m.norm != Norm::kRmsNorm) unlike = "LayerNorm without GPT-2's learned positions and GELU";
  else if (m.activation != Activation::kSwiglu && !(gemma && m.activation == Activation::kGeglu))
    unlike = "an activation other than SwiGLU (or Gemma's GeGLU)";
  else if (m.positions != Positions::kRope || (m.rotary_fraction != 1.0 && !phi3))
    unlike = "positions other than full RoPE (partial RoPE: Phi-3 only)";
  else if ((m.fused_qkv || m.fused_gate_up) && !phi3) unlike = "one fused projection (Phi-3 fuses both)";
  else if (m.attn_out_bias || m.mlp_bias || (phi3 && m.qkv_bias)) unlike = "output, MLP or fused-projection biases";
  else if (m.sliding_window && w.seq_len > *m.sliding_window) unlike = "a sliding window shorter than seq_len";
  else if (m.attn_softcap || m.final_softcap) unlike = "attention or logit softcaps (Gemma 2)";
  else if ((m.sandwich_norms || m.norm_weight_offset || m.embed_scale) && !gemma)
    unlike = "some of Gemma's norms and scaling without the others";
  if (!unlike.empty()) {
    root.fail("phase", fmt::format("phase train is lowered for llama-style models (llama, mistral, qwen2, "
                                   "qwen3, and qwen3_moe and mixtral's experts), GPT-2, Phi-3 and Gemma 3 so "
                                   "far; model {} has {}",
                                   m.name, unlike));
  }
  if (w.autocast && (phi3 || gemma)) {
    root.fail("autocast", fmt::format("mixed precision is lowered for llama-style models only so far; model {} "
                                      "(Phi-3's fused projections or Gemma's norms) trains in bf16 or fp16",
                                      m.name));
  }
  // fp32 computation (no autocast): SDPA's math backend, for dense llama-style layers with
  // grouped-query attention (hf_sdpa_math.cpp).
  if (compute == hw::DType::kFp32) {
    std::string has;
    if (m.moe) has = "mixture-of-experts layers";
    else if (gpt2) has = "GPT-2's layers";
    else if (phi3) has = "Phi-3's fused projections";
    else if (gemma) has = "Gemma 3's norms and scaling";
    else if (m.kv_heads == m.heads)
      has = "as many KV heads as query heads (fp32 sdpa then takes PyTorch's memory-efficient attention kernels, "
            "not modeled)";
    if (!has.empty()) {
      root.fail("dtype", fmt::format("phase train in fp32 (no autocast) is lowered for dense llama-style models "
                                     "with grouped-query attention (llama, mistral, qwen2, qwen3) only so far; "
                                     "model {} has {}: use dtype: bf16 or fp16",
                                     m.name, has));
    }
  }
}

// cs336_basics has one architecture (pre-norm RMSNorm, multi-head attention with RoPE, SwiGLU,
// no biases, an untied head) and no KV cache: forward passes over whole sequences only.
void check_cs336(hw::MappingReader& root, const ModelWorkload& w) {
  const ModelConfig& m = w.model;
  if (w.phase != Phase::kPrefill && w.phase != Phase::kTrain) {
    root.fail("phase", "lowering cs336-basics runs forward passes over whole sequences (phase: prefill) "
                       "and training steps on them (phase: train); the cs336_basics model keeps no KV "
                       "cache to decode from");
  }
  std::string unlike;
  if (m.moe) unlike = "mixture of experts";
  else if (m.mla) unlike = "multi-head latent attention";
  else if (m.norm != Norm::kRmsNorm) unlike = "a norm other than RMSNorm";
  else if (m.activation != Activation::kSwiglu) unlike = "an activation other than SwiGLU";
  else if (m.positions != Positions::kRope) unlike = "positions other than RoPE";
  else if (m.kv_heads != m.heads) unlike = "grouped-query attention";
  else if (m.qkv_bias || m.attn_out_bias || m.mlp_bias) unlike = "biases";
  else if (m.tied_embeddings) unlike = "a tied lm_head";
  else if (m.sliding_window) unlike = "a sliding window";
  else if (m.qk_norm || m.sandwich_norms || m.norm_weight_offset || m.embed_scale || m.attn_softcap ||
           m.final_softcap || m.rotary_fraction != 1.0)
    unlike = "features of other families (qk norms, sandwich norms, softcaps, partial RoPE)";
  if (!unlike.empty()) {
    root.fail("lowering", fmt::format("model {} has {}, which the cs336_basics model does not: use "
                                      "lowering: hf-eager",
                                      m.name, unlike));
  }
}

// A Hugging Face dtype name ("bfloat16", "torch.float16"); nullopt for one gpusim does not run.
std::optional<hw::DType> hf_dtype(std::string text) {
  if (text.rfind("torch.", 0) == 0) text = text.substr(6);
  if (text == "bfloat16") return hw::DType::kBf16;
  if (text == "float16" || text == "half") return hw::DType::kFp16;
  if (text == "float32" || text == "float") return hw::DType::kFp32;
  return std::nullopt;
}

ModelWorkload read_model_workload(const hw::YamlDocument& doc, hw::MappingReader& root,
                                  std::string default_name,
                                  const std::filesystem::path& models_dir) {
  declare_keys(root, {"name", "model", "hf_config", "phase", "batch", "seq_len", "output_len",
                      "dtype", "lowering", "attention", "framework", "moe", "expert_weights",
                      "expert_weights_by_layer", "optimizer", "autocast", "checkpointing",
                      "gradient_accumulation_steps", "tensor_parallel", "pipeline_parallel",
                      "expert_parallel", "data_parallel", "micro_batches"});
  ModelWorkload w;
  w.name = root.optional_text("name").value_or(std::move(default_name));
  w.model = read_model(doc, root, models_dir);
  w.phase = read_choice<Phase>(
      root, "phase",
      {{"prefill", Phase::kPrefill}, {"decode", Phase::kDecode}, {"generate", Phase::kGenerate},
       {"train", Phase::kTrain}});
  w.batch = root.integer("batch", 1, kMaxBatch);
  w.seq_len = root.integer("seq_len", 1, kMaxTokens);
  w.output_len = root.optional_integer("output_len", 1, kMaxTokens);
  if (w.phase == Phase::kGenerate && !w.output_len) {
    root.fail("output_len", "missing: phase generate needs the number of tokens to produce");
  }
  if (w.phase != Phase::kGenerate && w.output_len) {
    root.fail("output_len", "is for phase: generate only");
  }
  const auto dtype = read_optional_dtype(root, "dtype");
  if (dtype) {
    w.dtype = *dtype;
  } else if (!w.model.hf_dtype.empty()) {
    // As transformers loads a checkpoint with dtype="auto": in the dtype its config names.
    const auto from_config = hf_dtype(w.model.hf_dtype);
    if (!from_config) {
      root.fail("dtype", fmt::format("missing, and the hf_config's {} '{}' is not one gpusim runs (bfloat16, "
                                     "float16, float32): give dtype:",
                                     w.model.hf_dtype_key, w.model.hf_dtype));
    }
    w.dtype = *from_config;
    w.dtype_default = fmt::format("{} of the hf_config", w.model.hf_dtype_key);
  } else {
    w.dtype = hw::DType::kBf16;  // as serve files default it (serve/serve_spec.cpp)
    w.dtype_default = "gpusim's default";
  }
  w.lowering = read_choice<Lowering>(
      root, "lowering",
      {{"hf-eager", Lowering::kHfEager}, {"fused", Lowering::kFused}, {"cs336-basics", Lowering::kCs336Basics}},
      Lowering::kHfEager);
  w.attention = read_choice<Attention>(root, "attention",
                                       {{"sdpa", Attention::kSdpa}, {"naive", Attention::kNaive},
                                        {"flash_attention_2", Attention::kFlash2}},
                                       Attention::kSdpa);
  // The framework version sets how its MoE blocks run; `moe:` overrides it.
  const bool tf446 = read_choice<bool>(root, "framework", {{"transformers-5", false}, {"transformers-4.46", true}}, false);
  w.moe = read_choice<MoePath>(root, "moe", {{"grouped_mm", MoePath::kGroupedMm}, {"loop", MoePath::kLoop}},
                               tf446 ? MoePath::kLoop : MoePath::kGroupedMm);
  check_hf_variants(root, w);
  check_positions(root, w);
  if (w.dtype == hw::DType::kFp8 && w.lowering == Lowering::kHfEager) {
    root.fail("dtype",
              "fp8 is not an hf-eager precision (transformers runs fp8 weights only through "
              "quantization kernels); use lowering: fused, or bf16");
  }
  if (w.lowering == Lowering::kFused && (w.dtype == hw::DType::kFp32 || w.dtype == hw::DType::kTf32)) {
    root.fail("dtype", "the fused lowering models 16-bit and fp8 serving engines; use bf16, fp16, "
                       "fp8, or lowering: hf-eager");
  }
  if (w.lowering == Lowering::kCs336Basics) check_cs336(root, w);
  read_expert_weights(doc, root, w);
  read_training(root, w);
  read_parallelism(root, w);
  return w;
}

Workload read_workload(const hw::YamlDocument& doc, const std::filesystem::path& models_dir) {
  hw::MappingReader root(doc, doc.root(), "");
  const std::string default_name = std::filesystem::path(doc.label()).stem().string();
  // Looked up without asking the reader, so each form lists only its own keys as known.
  const YAML::Node& mapping = root.mapping();
  const bool has_ops = mapping["ops"].IsDefined();
  const bool has_model = mapping["model"].IsDefined() || mapping["hf_config"].IsDefined();
  if (has_ops && has_model) {
    root.fail("ops", "a workload lists either ops (op level) or a model (model level), not both");
  }
  if (has_ops) return read_op_workload(doc, root, default_name);
  if (has_model) return read_model_workload(doc, root, default_name, models_dir);
  doc.fail(doc.root(), "(document)",
           "expected `ops:` (an op-level workload), or `model:` or `hf_config:` (a model-level "
           "workload)");
}

Workload read_with_overrides(const hw::YamlDocument& doc,
                             const std::vector<WorkloadOverride>& overrides,
                             const std::filesystem::path& models_dir) {
  apply_overrides(doc, overrides);
  try {
    return read_workload(doc, models_dir);
  } catch (const ConfigError& e) {
    if (auto blamed = blame_override(e, doc, overrides)) throw *blamed;
    throw;
  }
}

}  // namespace

ModelConfig read_model_keys(const hw::YamlDocument& doc, hw::MappingReader& root,
                            const std::filesystem::path& models_dir) {
  return read_model(doc, root, models_dir);
}

Workload load_workload(const std::filesystem::path& file,
                       const std::vector<WorkloadOverride>& overrides,
                       const std::filesystem::path& models_dir) {
  return read_with_overrides(hw::YamlDocument::from_file(file), overrides, models_dir);
}

Workload parse_workload(std::string text, const std::string& label,
                        const std::vector<WorkloadOverride>& overrides,
                        const std::filesystem::path& models_dir) {
  return read_with_overrides(hw::YamlDocument::from_string(std::move(text), label), overrides,
                             models_dir);
}

std::string_view name(Phase phase) {
  switch (phase) {
    case Phase::kPrefill:
      return "prefill";
    case Phase::kDecode:
      return "decode";
    case Phase::kGenerate:
      return "generate";
    case Phase::kTrain:
      return "train";
  }
  return "?";
}

std::string_view name(Lowering lowering) {
  switch (lowering) {
    case Lowering::kHfEager: return "hf-eager";
    case Lowering::kFused: return "fused";
    case Lowering::kCs336Basics: return "cs336-basics";
  }
  return "?";
}

std::string_view name(Attention attention) {
  switch (attention) {
    case Attention::kSdpa: return "sdpa";
    case Attention::kNaive: return "naive";
    case Attention::kFlash2: return "flash_attention_2";
  }
  return "?";
}

std::string_view name(MoePath moe) { return moe == MoePath::kLoop ? "loop" : "grouped_mm"; }

std::string_view name(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kAdamW: return "adamw";
    case Optimizer::kAdamWFused: return "adamw-fused";
    case Optimizer::kSgd: return "sgd";
    case Optimizer::kNone: return "none";
  }
  return "?";
}

std::string_view name(Checkpointing c) {
  return c == Checkpointing::kFull ? "full" : "none";
}

}  // namespace gpusim::workloads
