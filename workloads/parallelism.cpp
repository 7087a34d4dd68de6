#include "workloads/parallelism.h"

#include <fmt/format.h>

#include "sim/error.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

constexpr std::int64_t kMaxDegree = 1024;

int read_degree(hw::MappingReader& root, std::string_view key, Parallelism& p) {
  const auto node = root.optional_node(key);
  if (!node) return 1;
  if (p.line == 0) {
    p.file = root.doc().label();
    p.line = hw::YamlDocument::line_of(*node);
  }
  return static_cast<int>(root.optional_integer(key, 1, kMaxDegree).value_or(1));
}

void require_divides(hw::MappingReader& root, std::string_view key, std::int64_t whole, int parts,
                     std::string_view what) {
  if (whole % parts != 0) {
    root.fail(key, fmt::format("{} {} do not split over {} GPUs", whole, what, parts));
  }
}

// A stage's model describes its own layers, 0..count-1: which are windowed and which MoE is
// written out per layer, so the lowerings' layer_kind(m, i) stays right at any offset.
void slice_layers(const ModelConfig& whole, std::int64_t first, std::int64_t count, ModelConfig& m) {
  m.layers = count;
  if (whole.sliding_window) {
    m.sliding_layers.clear();
    for (std::int64_t i = 0; i < count; ++i) m.sliding_layers.push_back(whole.sliding_layer(first + i));
  }
  if (whole.moe) {
    m.moe->dense_layers = 0;
    m.moe->every = 1;
    m.moe->phase = 0;
    m.moe->dense_list.clear();
    for (std::int64_t i = 0; i < count; ++i) {
      if (!whole.moe_layer(first + i)) m.moe->dense_list.push_back(i);
    }
  }
}

}  // namespace

const std::vector<std::string>& parallelism_keys() {
  static const std::vector<std::string> keys{"tensor_parallel", "pipeline_parallel", "expert_parallel",
                                             "data_parallel", "micro_batches"};
  return keys;
}

void read_parallelism(hw::MappingReader& root, ModelWorkload& w) {
  Parallelism& p = w.parallel;
  p.tensor = read_degree(root, "tensor_parallel", p);
  p.pipeline = read_degree(root, "pipeline_parallel", p);
  p.expert = read_degree(root, "expert_parallel", p);
  p.data = read_degree(root, "data_parallel", p);
  p.micro_batches = read_degree(root, "micro_batches", p);
  if (!p.any()) {
    if (p.micro_batches > 1) root.fail("micro_batches", "is for pipeline_parallel > 1");
    return;
  }
  const ModelConfig& m = w.model;
  if (w.lowering == Lowering::kCs336Basics) {
    root.fail(parallelism_keys()[p.tensor > 1 ? 0 : p.pipeline > 1 ? 1 : p.expert > 1 ? 2 : 3],
              "the cs336-basics lowering runs on one GPU; several GPUs are modeled for the hf-eager and fused lowerings");
  }
  if (p.tensor > 1) {
    require_divides(root, "tensor_parallel", m.heads, p.tensor, "attention heads");
    if (m.kv_heads % p.tensor != 0 && p.tensor % m.kv_heads != 0) {
      root.fail("tensor_parallel", fmt::format("{} KV heads neither split over nor replicate evenly across {} GPUs",
                                               m.kv_heads, p.tensor));
    }
    if (m.d_ff > 0) require_divides(root, "tensor_parallel", m.d_ff, p.tensor, "MLP columns (d_ff)");
    if (m.moe && p.expert != p.tensor) {
      require_divides(root, "tensor_parallel", m.moe->expert_d_ff, p.tensor, "expert columns (expert_d_ff)");
    }
    if (m.moe && m.moe->shared_experts > 0) {
      require_divides(root, "tensor_parallel", m.moe->shared_experts * m.moe->shared_expert_d_ff, p.tensor,
                      "shared-expert columns");
    }
    if (m.mla) root.fail("tensor_parallel", "multi-head latent attention is not split over GPUs yet (its latent KV is shared by all heads)");
  }
  if (p.expert > 1) {
    if (!m.moe) root.fail("expert_parallel", fmt::format("model {} has no experts", m.name));
    require_divides(root, "expert_parallel", m.moe->experts, p.expert, "experts");
    if (p.tensor > 1 && p.expert != p.tensor) {
      root.fail("expert_parallel", fmt::format("expert_parallel {} with tensor_parallel {}: the experts split over the "
                                               "TP group (equal degrees) or over a data-parallel group (tensor_parallel 1)",
                                               p.expert, p.tensor));
    }
    if (p.expert_all_to_all()) require_divides(root, "expert_parallel", w.batch, p.expert, "sequences of the batch");
  }
  if (p.data > 1) require_divides(root, "data_parallel", w.batch, p.data, "sequences of the batch");
  if (p.pipeline > 1) {
    if (m.layers < p.pipeline) {
      root.fail("pipeline_parallel", fmt::format("{} layers cannot fill {} pipeline stages", m.layers, p.pipeline));
    }
    if (w.accumulation_steps > 1) {
      root.fail("pipeline_parallel", "a pipeline accumulates gradients over its micro_batches: give micro_batches "
                                     "instead of gradient_accumulation_steps");
    }
  } else if (p.micro_batches > 1) {
    root.fail("micro_batches", "is for pipeline_parallel > 1");
  }
  if (p.micro_batches > 1) {
    const std::int64_t local = w.batch / (p.expert_all_to_all() ? p.expert : 1) / p.data;
    require_divides(root, "micro_batches", local, p.micro_batches, "sequences of each GPU's batch");
  }
  if (w.phase == Phase::kTrain) {
    if (p.expert_all_to_all()) {
      root.fail("expert_parallel", "phase train splits experts over the tensor-parallel group only (expert_parallel = "
                                   "tensor_parallel): the backward's all-to-alls are not lowered yet");
    }
    if (p.pipeline > 1 && m.positions == Positions::kLearned) {
      root.fail("pipeline_parallel", "training GPT-2-style models (learned positions) in pipeline stages is not modeled yet");
    }
  }
  if (p.data > 1 && w.phase != Phase::kTrain) {
    root.fail("data_parallel", "is for phase: train (inference replicas are independent: simulate one)");
  }
}

void check_parallel_system(const ModelWorkload& w, const hw::HardwareSpec& hw) {
  const Parallelism& p = w.parallel;
  if (!p.any()) return;
  const int have = hw.system.total_gpus();
  if (p.gpus() > have) {
    throw ConfigError(p.file, p.line, "tensor_parallel",
                      fmt::format("the workload occupies {} GPUs (tensor {} x pipeline {} x expert {} x data {}), "
                                  "but {} has {}; give a system with enough (gpusim hw list: dgx-h100, hgx-h200, ...)",
                                  p.gpus(), p.tensor, p.pipeline, p.expert, p.data, hw.name, have));
  }
  // Groups stay inside a node when they fit (NCCL keeps a TP group on NVLink).
  const int node = hw.system.gpus;
  const int inner = std::max(p.tensor, p.expert);
  if (inner > node && inner % node != 0) {
    throw ConfigError(p.file, p.line, "tensor_parallel",
                      fmt::format("a group of {} GPUs does not fill whole nodes of {} GPUs", inner, node));
  }
  if (hw.system.interconnect.kind == "nvlink") {
    // Point-to-point NVLink: a ring through the group's GPUs (0..n-1) must follow links.
    for (int g = 0; g < std::min(inner, node); ++g) {
      const int next = (g + 1) % std::min(inner, node);
      if (!hw.system.linked(g, next)) {
        throw ConfigError(p.file, p.line, "tensor_parallel",
                          fmt::format("{} has no NVLink between GPU {} and GPU {}, which the ring of a group of {} "
                                      "needs (system.interconnect.pairs: {})",
                                      hw.name, g, next, std::min(inner, node), hw.system.interconnect.pairs));
      }
    }
  }
}

std::int64_t stage_layers(std::int64_t layers, int stages, int stage) {
  return layers / stages + (stage < layers % stages ? 1 : 0);
}

std::int64_t stage_first_layer(std::int64_t layers, int stages, int stage) {
  std::int64_t first = 0;
  for (int s = 0; s < stage; ++s) first += stage_layers(layers, stages, s);
  return first;
}

ModelWorkload rank_shard(const ModelWorkload& w, int stage) {
  ModelWorkload s = w;
  const Parallelism& p = w.parallel;
  s.stage = stage;
  s.rank_view = true;
  ModelConfig& m = s.model;
  const int tp = p.tensor;
  if (tp > 1) {
    m.heads /= tp;
    m.kv_heads = m.kv_heads >= tp ? m.kv_heads / tp : 1;  // fewer KV heads than GPUs: replicated
    m.d_ff /= tp;
    m.vocab = (m.vocab + tp - 1) / tp;  // vocabulary-parallel embedding and lm_head (padded)
    if (m.moe) {
      if (p.expert == tp) {
        m.moe->experts /= tp;  // whole experts per GPU
      } else {
        m.moe->expert_d_ff /= tp;
      }
      if (m.moe->shared_experts > 0) {
        // The shared experts' MLP (one of shared_experts x shared_expert_d_ff) splits by columns.
        m.moe->shared_expert_d_ff = m.moe->shared_experts * m.moe->shared_expert_d_ff / tp;
        m.moe->shared_experts = 1;
      }
    }
  }
  if (p.expert_all_to_all()) {
    m.moe->experts /= p.expert;
    s.batch /= p.expert;  // attention data-parallel over the expert group
  }
  if (p.data > 1) s.batch /= p.data;
  if (p.pipeline > 1) {
    const std::int64_t first = stage_first_layer(w.model.layers, p.pipeline, stage);
    const std::int64_t count = stage_layers(w.model.layers, p.pipeline, stage);
    slice_layers(w.model, first, count, m);
    // A routing trace names the whole model's layers; the stage lowers its own from 0.
    s.layer_expert_weights.clear();
    for (const auto& [layer, weights] : w.layer_expert_weights) {
      if (layer >= first && layer < first + count) s.layer_expert_weights[layer - first] = weights;
    }
    s.batch /= p.micro_batches;
  }
  return s;
}

}  // namespace gpusim::workloads
