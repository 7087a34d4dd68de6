// Workload files: what `gpusim run` simulates. Two forms (DESIGN.md, "Workload files"):
//
//   an op-level workload            a model-level workload
//     name: projection-and-norm       model: llama3-8b     # a preset in configs/models, or an
//     dtype: bf16                     phase: decode        # inline mapping of model fields
//     ops:                            batch: 16
//       - {op: matmul, M: 2048, ...}  seq_len: 1024
//                                     dtype: bf16
//                                     lowering: hf-eager   # default hf-eager
//                                     attention: sdpa      # default sdpa
// `hf_config: config.json` may replace `model:` (a Hugging Face config, relative to the file);
// MoE models take `expert_weights: [...]` (routing skew; default: as random top-k routing) and
// `expert_weights_by_layer: {layer: [...]}` (a routing trace, one layer's weights each).
// docs/workloads.md.
//
// Reading is strict: unknown keys, missing keys, wrong types and non-positive sizes are
// ConfigErrors naming the file, the line and the key path (`ops[3].K`, `model.moe.top_k`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hw/dtype.h"
#include "hw/yaml_document.h"
#include "models/op.h"
#include "workloads/model_config.h"
#include "workloads/overrides.h"
#include "workloads/parallelism.h"

namespace gpusim::workloads {

struct SourcedOp {
  models::Op op;
  int line;  // of its item in the workload file
};

struct OpWorkload {
  std::string name;                        // `name:`, else the file's stem
  std::optional<hw::DType> default_dtype;  // top-level `dtype:`
  std::vector<SourcedOp> ops;
};

enum class Phase {
  kPrefill,   // one forward pass over a prompt of seq_len tokens
  kDecode,    // one decode step: a new token per sequence against a KV cache of seq_len
  kGenerate,  // prefill of seq_len, then decode steps until output_len tokens are produced
  kTrain,     // one optimizer step: forward with the loss over seq_len tokens, backward, update
};
// The optimizer of a training step (torch.optim, as a training loop constructs it).
enum class Optimizer {
  kAdamW,       // AdamW, PyTorch's default foreach implementation (multi_tensor_apply kernels)
  kAdamWFused,  // AdamW(fused=True): one fused kernel per chunk of tensors
  kSgd,         // SGD with momentum, foreach
  kNone,        // no update: forward and backward only, as benchmark scripts time a step
};
// Activation checkpointing (torch.utils.checkpoint around each decoder layer).
enum class Checkpointing {
  kNone,  // every layer saves its activations for the backward
  kFull,  // each layer saves only its input and runs its forward again in the backward
};
enum class Lowering {
  kHfEager,  // the kernels Hugging Face transformers launches (eager mode, sdpa attention)
  kFused,    // fused kernels where they exist
  kCs336Basics,  // the cs336_basics reference model's own code (seed 002; forward passes, fp32 training steps)
};
enum class Attention {
  kSdpa,   // fused attention (F.scaled_dot_product_attention)
  kNaive,  // matmul, softmax, matmul (hand-written attention, as in CS336)
  kFlash2,  // transformers' flash_attention_2: FlashAttention-2's forward, split-KV decoding
};
// How an hf-eager MoE block runs its experts.
enum class MoePath {
  kGroupedMm,  // transformers 5.x: sort the token-expert pairs, two grouped GEMMs
  kLoop,       // transformers 4.46 with DeepSeek's remote code (moe_infer): an MLP per expert hit
};

struct ModelWorkload {
  std::string name;   // `name:`, else the file's stem
  ModelConfig model;  // an inline model without `name:` is called "custom"
  Phase phase = Phase::kDecode;
  std::int64_t batch = 0;
  std::int64_t seq_len = 0;                // prompt length, or KV length for decode
  std::optional<std::int64_t> output_len;  // generate only
  hw::DType dtype = hw::DType::kBf16;
  // Where `dtype` came from when the file gives none ("" when it does): "torch_dtype of the
  // hf_config", or "gpusim's default" for presets and inline models. Reports show it.
  std::string dtype_default;
  Lowering lowering = Lowering::kHfEager;
  Attention attention = Attention::kSdpa;
  MoePath moe = MoePath::kGroupedMm;
  // Phase train only: the optimizer, mixed precision (fp32 weights, autocast's compute type),
  // activation checkpointing and the micro-batches a step accumulates gradients over (each of
  // `batch` sequences).
  Optimizer optimizer = Optimizer::kAdamW;
  std::optional<hw::DType> autocast;
  Checkpointing checkpointing = Checkpointing::kNone;
  int accumulation_steps = 1;
  // MoE models: how the routed token-expert pairs split over experts, one weight per expert;
  // empty means evenly (every expert gets the same share, as trained routers aim for).
  std::vector<double> expert_weights;
  // A routing trace: one layer's weights (by its index among the model's layers, as lowered),
  // in place of expert_weights there (`expert_weights_by_layer`; a benchmark's recorded routing).
  std::map<std::int64_t, std::vector<double>> layer_expert_weights;
  const std::vector<double>& expert_weights_for(std::int64_t layer) const {
    const auto it = layer_expert_weights.find(layer);
    return it != layer_expert_weights.end() ? it->second : expert_weights;
  }
  // The fused lowering's serving steps (set by a serve file's engine, serve/serve_spec.h): how
  // the engine runs attention over a ragged batch and which kernels do its fused elementwise work.
  struct ServingKernels {
    // split-decode: a varlen prefill launch and a flash-decoding (split-KV) launch for the decodes;
    // unified-varlen: every sequence in one FlashAttention-2 varlen launch (no split-KV; a
    // decode-only batch of grouped-query heads swaps its query groups into rows, with copies);
    // paged-sdpa: transformers' continuous batching with attn_implementation "paged|sdpa" (the
    // hf-eager lowering over the packed batch: every cached key gathered, one masked SDPA).
    enum class Attention { kSplitDecode, kUnifiedVarlen, kPagedSdpa } attention = Attention::kSplitDecode;
    // cuda: hand-written vectorized kernels (serving engines'); inductor: TorchInductor's Triton.
    enum class Elementwise { kCuda, kInductor } elementwise = Elementwise::kCuda;
  } serving;
  // Several GPUs (workloads/parallelism.h): how the model splits; `stage` is the pipeline stage
  // a rank_shard runs (0 otherwise).
  Parallelism parallel;
  int stage = 0;
  bool rank_view = false;  // already one GPU's share (rank_shard): lowered as it is
  // A pipeline's first stage embeds the tokens; its last runs the final norm and lm_head.
  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage + 1 >= parallel.pipeline; }
};

using Workload = std::variant<OpWorkload, ModelWorkload>;

// Reads a workload file, with `overrides` from the command line applied on top. `models_dir`
// holds the model presets (configs/models); the caller decides where that is.
Workload load_workload(const std::filesystem::path& file,
                       const std::vector<WorkloadOverride>& overrides,
                       const std::filesystem::path& models_dir);

// The same for text already in memory; `label` names it in errors (and gives the default name).
Workload parse_workload(std::string text, const std::string& label,
                        const std::vector<WorkloadOverride>& overrides,
                        const std::filesystem::path& models_dir);

// The model a file names under `model:` (a preset in `models_dir` or inline fields) or
// `hf_config:` (a Hugging Face config.json, relative to the file), for files of other kinds that
// name a model the same way (serve files).
ModelConfig read_model_keys(const hw::YamlDocument& doc, hw::MappingReader& root,
                            const std::filesystem::path& models_dir);

std::string_view name(Phase phase);          // "prefill", "decode", "generate"
std::string_view name(Lowering lowering);    // "hf-eager", "fused"
std::string_view name(Attention attention);  // "sdpa", "naive", "flash_attention_2"
std::string_view name(MoePath moe);           // "grouped_mm", "loop"
std::string_view name(Optimizer optimizer);   // "adamw", "adamw-fused", "sgd", "none"
std::string_view name(Checkpointing c);       // "none", "full"

}  // namespace gpusim::workloads
