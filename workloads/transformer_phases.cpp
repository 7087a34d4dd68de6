#include "workloads/transformer_phases.h"

#include <algorithm>

#include "workloads/host_issue.h"

namespace gpusim::workloads {

std::int64_t StepShape::tokens() const {
  if (seqs.empty()) return batch * new_tokens;
  std::int64_t t = pad_tokens;
  for (const auto& q : seqs) t += q.new_tokens;
  return t;
}

std::int64_t StepShape::sampled() const {
  if (seqs.empty()) return batch;
  std::int64_t n = pad_rows;
  for (const auto& q : seqs) n += q.samples ? 1 : 0;
  return n;
}

std::vector<std::pair<std::string, StepShape>> step_shapes(const ModelWorkload& w) {
  std::vector<std::pair<std::string, StepShape>> steps;
  switch (w.phase) {
    case Phase::kPrefill:
      steps.push_back({"prefill", {w.batch, w.seq_len, 0}});
      break;
    case Phase::kDecode:
      steps.push_back({"decode", {w.batch, 1, w.seq_len}});
      break;
    case Phase::kTrain:
      steps.push_back({"train", {w.batch, w.seq_len, 0}});
      break;
    case Phase::kGenerate:
      steps.push_back({"prefill", {w.batch, w.seq_len, 0}});
      for (std::int64_t i = 1; i < w.output_len.value_or(1); ++i) {
        steps.push_back({"decode", {w.batch, 1, w.seq_len + i - 1}});
      }
      break;
  }
  return steps;
}

StepShape shard_shape(const ModelWorkload& whole, const ModelWorkload& shard, const StepShape& shape) {
  StepShape s = shape;
  if (!s.ragged()) s.batch = shape.batch * shard.batch / std::max<std::int64_t>(1, whole.batch);
  return s;
}

StepProgram build_step(const ModelWorkload& whole, const std::string& phase, const StepShape& whole_shape,
                       OpLoweringCache& lowering, std::optional<std::int64_t> layer_limit) {
  // Several GPUs: the step of one GPU (ranks are symmetric), its share of the model and batch.
  const bool split = whole.parallel.any() && !whole.rank_view;
  const ModelWorkload shard = split ? rank_shard(whole) : ModelWorkload{};
  const ModelWorkload& w = split ? shard : whole;
  const StepShape shape = split ? shard_shape(whole, w, whole_shape) : whole_shape;
  ProgramBuilder b(lowering);
  if (layer_limit) b.limit_layers(*layer_limit);
  if (w.lowering == Lowering::kFused) {
    if (w.phase == Phase::kTrain) lower_fused_train_step(w, shape, b);
    else lower_fused_step(w, shape, b);
  } else if (w.lowering == Lowering::kCs336Basics) {
    if (w.phase == Phase::kTrain) {
      lower_cs336_train_step(w, shape, b);
    } else {
      lower_cs336_step(w, shape, b);
    }
  } else if (w.phase == Phase::kTrain) {
    lower_hf_train_step(w, shape, b);
  } else {
    lower_hf_eager_step(w, shape, b);
    if (w.phase == Phase::kGenerate && w.last_stage()) lower_hf_generate_bookkeeping(w, shape, b);
  }
  std::vector<double> profile = b.activation_profile();
  double peak = 0;
  for (const double live : profile) peak = std::max(peak, live);
  KernelDag dag = b.take_dag();
  // Eager model code spends host time between launches; the fused lowering stands for serving
  // engines that replay CUDA graphs (their eager launches are single ops: launch.eager_gap).
  if (w.lowering != Lowering::kFused) set_model_host_issue(dag, lowering.hw(), b.phase_starts());
  return {phase,           shape,          std::move(dag), peak, std::move(profile), w.model.layers,
          b.layer_starts(), b.layers_end(), b.phase_starts()};
}

std::vector<StepProgram> build_steps(const ModelWorkload& w, const hw::HardwareSpec& hw,
                                     const models::KernelModelRegistry& models) {
  OpLoweringCache lowering(hw, models);
  std::vector<StepProgram> out;
  for (const auto& [phase, shape] : step_shapes(w)) out.push_back(build_step(w, phase, shape, lowering));
  return out;
}

}  // namespace gpusim::workloads
