// A model-level workload as the sequence of forward steps it runs: prefill is one step over the
// prompt, decode one step of one token against a cache of seq_len, and generate a prefill step
// followed by output_len - 1 decode steps with a growing cache (greedy search: the last token
// is sampled but never fed back). Each step is a kernel DAG in the workload's lowering.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "workloads/kernel_dag.h"
#include "workloads/transformer_step.h"
#include "workloads/workload.h"

namespace gpusim::workloads {

struct StepProgram {
  std::string phase;  // "prefill" or "decode"
  StepShape shape;
  KernelDag dag;
  double activation_peak_bytes = 0;
  std::vector<double> activation_profile;  // bytes alive while each vertex runs
  // The model's layers, and the first vertex of each layer lowered and after the last (all of
  // them unless the step was built with a layer limit).
  std::int64_t layers = 0;
  std::vector<std::size_t> layer_starts;
  std::size_t layers_end = 0;
  // A training step's phases (forward, backward, optimizer) by their first vertex; empty for
  // inference steps.
  std::vector<std::pair<std::string, std::size_t>> phase_starts;
};

// A step's shape on one GPU's shard (rank_shard): its share of a uniform step's sequences (a
// data-parallel or micro-batch split); a ragged step stays whole.
StepShape shard_shape(const ModelWorkload& whole, const ModelWorkload& shard, const StepShape& shape);

// One step of `w` (a phase name and shape from step_shapes), lowered with a cache that may be
// shared with the run's other steps.
// With `layer_limit`, only that many of the model's layers are lowered (workloads/layer_repeat.h).
StepProgram build_step(const ModelWorkload& w, const std::string& phase, const StepShape& shape,
                       OpLoweringCache& lowering, std::optional<std::int64_t> layer_limit = std::nullopt);

// The steps of `w`, in order. Generate steps include what `generate` launches around each
// forward call (hf-eager only; a serving engine fuses sampling into its step).
std::vector<StepProgram> build_steps(const ModelWorkload& w, const hw::HardwareSpec& hw,
                                     const models::KernelModelRegistry& models);

// The step shapes alone (cheap): for reports and memory figures.
std::vector<std::pair<std::string, StepShape>> step_shapes(const ModelWorkload& w);

}  // namespace gpusim::workloads
