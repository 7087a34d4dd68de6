// A serve file: the model, the serving engine (a preset of configs/engines with overrides), the
// requests (a file or a generator) and the latency targets. docs/serving.md lists the keys.
//
//   model: llama3-8b          # or hf_config: config.json
//   dtype: bf16
//   tensor_parallel: 4        # optional: the model split over 4 GPUs of the system (--hw dgx-h100)
//   engine: vllm-v1           # configs/engines/vllm-v1.yaml (default)
//   scheduler: {max_num_seqs: 256}
//   requests:
//     count: 1000
//     arrival: poisson        # poisson | fixed-rate | all-at-once
//     rate: 8                 # requests a second
//     prompt_tokens: {uniform: [128, 2048]}
//     output_tokens: 256
//     seed: 1
//   slo: {ttft: 500ms, tpot: 50ms}
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "serve/requests.h"
#include "serve/scheduler.h"
#include "sim/time.h"
#include "workloads/overrides.h"
#include "workloads/workload.h"

namespace gpusim::serve {

struct EngineSpec {
  std::string name, description;
  SchedulerConfig scheduler;     // num_blocks 0: sized from memory (gpu_memory_utilization)
  double gpu_memory_utilization = 0.9;
  std::int64_t cuda_graph_max_tokens = 0;  // steps of at most this many tokens replay CUDA graphs
  sim::Time step_overhead;                 // host time a step adds
  sim::Time request_overhead;              // host time a step adds per sequence it schedules
  sim::Time key_overhead;                  // host time a step adds per key its sequences attend
  // Host time of the first step that runs the decode, and the first that runs the prefill,
  // attention kernel, on a machine whose cuDNN has not compiled them before (cuDNN builds its
  // generated SDPA kernels and keeps them in the process and on disk).
  sim::Time attention_first_use;
  // Static shapes for CUDA graphs (transformers' continuous batching): a graph step's queries
  // are padded up to a multiple of `queries` (at most max_num_batched_tokens) and its cached
  // keys to a multiple of `keys` (at most the cache's tokens); 0: no padding.
  struct Padding {
    std::int64_t queries = 0, keys = 0;
  } padding;
  // When graphs are captured: all at start-up (vLLM), or each the first time a step of its static
  // shape runs (transformers: that step runs its forward eagerly, then the host records the
  // forward's launches again into the graph).
  enum class GraphCapture { kStartup, kLazy } graph_capture = GraphCapture::kStartup;
  workloads::ModelWorkload::ServingKernels kernels;  // attention and fused kernels of its steps
};

struct Slo {
  std::optional<double> ttft_s, tpot_s, e2e_s;
};

struct ServeSpec {
  std::string file;  // the serve file, for messages
  std::string name;
  workloads::ModelWorkload model;  // phase decode, lowering fused: the engine's steps; `parallel`
                                   // its tensor/expert split (serve/serve_parallelism.h)
  EngineSpec engine;
  std::vector<Request> requests;
  std::string requests_source;  // "file x.jsonl" or "poisson 8/s, seed 1, ..."
  Slo slo;
};

// Reads a serve file with `overrides` (`--set workload.KEY=VALUE`, keys as in the file:
// requests.rate, scheduler.max_num_seqs) applied; engine presets come from `engines_dir`, model
// presets from `models_dir`. Bad input is a ConfigError naming file, line and key.
ServeSpec load_serve_spec(const std::filesystem::path& file, const std::vector<workloads::WorkloadOverride>& overrides,
                          const std::filesystem::path& engines_dir, const std::filesystem::path& models_dir);
// The same for text already in memory (the Python API's dicts); `label` names it in messages and
// files it names are relative to the working folder.
ServeSpec parse_serve_spec(std::string text, const std::string& label, const std::vector<workloads::WorkloadOverride>& overrides,
                           const std::filesystem::path& engines_dir, const std::filesystem::path& models_dir);

}  // namespace gpusim::serve
