// A model split over several GPUs (issue 19): the workload keys tensor_parallel,
// pipeline_parallel (with micro_batches), expert_parallel and data_parallel, the checks that the
// model splits that way, and the part of the model one GPU holds.
//
// Tensor parallelism is Megatron's split: attention heads (and their KV heads) and the MLP width
// divide over the TP group; column-parallel QKV and gate/up, row-parallel o_proj and down, each
// followed by an all-reduce; a vocabulary-parallel embedding (all-reduced) and lm_head (its logits
// all-gathered). Expert parallelism splits each MoE layer's experts: with tensor_parallel equal to
// it, over the TP group (tokens replicated, combined by the TP all-reduce), or with
// tensor_parallel 1 over a group that runs attention data-parallel (each GPU its share of the
// batch) and exchanges routed tokens by all-to-all before and after the experts. Pipeline
// parallelism gives each GPU a contiguous stage of layers (the first stage the embedding, the last
// the final norm and lm_head) and sends activations between stages. Data parallelism (training)
// replicates the rest and all-reduces the gradients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/yaml_document.h"

namespace gpusim::workloads {

struct ModelWorkload;

struct Parallelism {
  int tensor = 1, pipeline = 1, expert = 1, data = 1;
  int micro_batches = 1;  // pipeline_parallel only: micro-batches a step's batch is split into
  // Where the keys were written, for errors found once the system is known.
  std::string file;
  int line = 0;

  // GPUs the workload occupies: an expert group that is not the TP group replaces it.
  int gpus() const { return (expert > tensor ? expert : tensor) * pipeline * data; }
  bool any() const { return gpus() > 1; }
  // Expert parallelism with data-parallel attention (tensor 1): routed tokens go by all-to-all.
  bool expert_all_to_all() const { return expert > 1 && tensor == 1; }
  bool operator==(const Parallelism& o) const {
    return tensor == o.tensor && pipeline == o.pipeline && expert == o.expert && data == o.data &&
           micro_batches == o.micro_batches;
  }
};

// The parallel keys of a model workload or serve file; checks them against the model, phase and
// lowering already read into `w`. Bad combinations are ConfigErrors naming the key.
void read_parallelism(hw::MappingReader& root, ModelWorkload& w);

// The keys read_parallelism reads, for the callers' lists of known keys.
const std::vector<std::string>& parallelism_keys();

// A ConfigError (at the workload's parallel keys) when the system has fewer GPUs than the
// workload occupies, or one GPU without an interconnect.
void check_parallel_system(const ModelWorkload& w, const hw::HardwareSpec& hw);

// Layers of pipeline stage `stage` (earlier stages take one more when they do not divide), and
// the index of its first layer in the whole model.
std::int64_t stage_layers(std::int64_t layers, int stages, int stage);
std::int64_t stage_first_layer(std::int64_t layers, int stages, int stage);

// What one GPU of stage `stage` runs: the model with its heads, KV heads, MLP and expert widths,
// vocabulary and experts divided, its stage's layers, and its share of the batch (data-parallel
// attention, micro-batches). The result keeps `parallel`, and `stage` set, so the lowering adds the
// collectives.
ModelWorkload rank_shard(const ModelWorkload& w, int stage = 0);

}  // namespace gpusim::workloads
