// The GPU time of a serving step, from the simulation: the step's sequences lowered by the fused
// lowering (a serving engine's kernels, ragged attention over the paged cache) and run on the
// engine, with CUDA graphs for steps of up to the engine's captured size and eager launches
// beyond. Over several GPUs (tensor_parallel) the step is one GPU's: build_step lowers its shard
// of the model with the group's all-reduces. Results are kept per step shape (every sequence's new and cached tokens): a step of a
// shape seen before takes that result, exactly.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/kernel_outcome_cache.h"
#include "models/kernel_model.h"
#include "serve/serve_spec.h"
#include "workloads/op_lowering_cache.h"
#include "workloads/transformer_step.h"

namespace gpusim::serve {

struct StepTime {
  double gpu_us = 0;        // first launch to last kernel end
  double kernel_us = 0;     // summed kernel time
  std::int64_t kernels = 0;
  bool graph = false;       // replayed as a CUDA graph
  // A lazily capturing engine (EngineSpec::graph_capture): the graph's key (its static shape) and
  // what the step costs the first time that shape runs: the forward eagerly, then the host
  // recording its launches (host.forward_fixed and host.model_kernel_issue each).
  std::vector<std::int64_t> graph_key;
  double capture_us = 0;
};

class StepTimer {
 public:
  StepTimer(const workloads::ModelWorkload& w, const hw::HardwareSpec& hw, const EngineSpec& engine,
            const models::KernelModelRegistry& models, bool reuse = true);
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  const StepTime& time(const std::vector<workloads::SeqSlice>& seqs);
  // The KV cache's tokens, the cap of the engine's key padding (EngineSpec::padding).
  void set_cache_tokens(std::int64_t tokens) { cache_tokens_ = tokens; }
  // The step a graph-captured engine runs for `seqs`: padded to its static shapes.
  workloads::StepShape padded(const std::vector<workloads::SeqSlice>& seqs) const;
  // The activation peak of a step of `tokens` prompt tokens (what the engine's profiling run
  // measures to size its KV cache).
  double activation_peak_bytes(std::int64_t tokens);

  std::size_t simulated() const { return simulated_; }
  std::size_t reused() const { return hits_; }

 private:
  const workloads::ModelWorkload& w_;
  const hw::HardwareSpec& hw_;
  const EngineSpec& engine_;
  workloads::OpLoweringCache lowering_;
  hw::KernelOutcomeCache outcomes_;
  bool reuse_;
  std::int64_t cache_tokens_ = 0;
  std::map<std::vector<std::int64_t>, StepTime> memo_;  // key: (new, past, samples) per sequence
  StepTime last_;                                       // without reuse: the step just simulated
  std::size_t simulated_ = 0, hits_ = 0;
};

}  // namespace gpusim::serve
