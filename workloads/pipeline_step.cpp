#include "workloads/pipeline_step.h"

#include <algorithm>

#include "workloads/parallelism.h"
#include "workloads/parameter_count.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads {
namespace {

// The send at the end of a stage's forward (backward), alone on its GPU: the neighbouring stage's
// receive runs alongside it, so that stage starts when it starts.
double send_us(const ModelWorkload& stage, int peer, const StepShape& shape, const hw::HardwareSpec& hw,
               hw::LaunchMode mode, hw::KernelOutcomeCache* cache) {
  const hw::DType act = detail::activation_type(stage.dtype);
  const double bytes = static_cast<double>(shape.tokens() * stage.model.d_model) * hw::bytes_per_element(act);
  const hw::TensorUse x{"pp.send", static_cast<std::int64_t>(bytes)};
  hw::KernelNode node;
  node.launch = detail::stage_transfer(stage, hw, peer, bytes, act, x, x);
  const hw::EngineResult r = hw::run_engine(hw, mode, {node}, nullptr, cache);
  return r.kernels.front().duration().us();
}

// Micro-batches whose activations stage `stage` holds at once: one in inference; in training's
// 1F1B, those it has run forward and not yet backward (at most stages - stage).
int micro_batches_in_flight(const Parallelism& p, int stage, bool training) {
  return training ? std::min(p.pipeline - stage, p.micro_batches) : 1;
}

}  // namespace

SimulatedStep simulate_pipeline_step(const ModelWorkload& w, const std::string& phase, const StepShape& shape,
                                     bool detailed, OpLoweringCache& lowering, const hw::HardwareSpec& hw,
                                     hw::LaunchMode mode, const SimulateOptions& options,
                                     hw::KernelOutcomeCache* cache) {
  const Parallelism& p = w.parallel;
  const bool training = w.phase == Phase::kTrain;
  const int m = p.micro_batches;
  SimulatedStep out;
  out.run.phase = phase;
  out.run.shape = shape;
  std::vector<StageTimes> times;
  for (int stage = 0; stage < p.pipeline; ++stage) {
    const ModelWorkload shard = rank_shard(w, stage);
    const StepShape micro = shard_shape(w, shard, shape);
    PipelineStageRun sr;
    sr.stage = stage;
    sr.first_layer = stage_first_layer(w.model.layers, p.pipeline, stage);
    sr.layers = shard.model.layers;
    SimulatedStep one = simulate_one_step(shard, phase, micro, detailed, lowering, hw, mode, options, cache);
    // The stage holds the activations of the micro-batches in flight, and its gradients once
    // (a training program's peak holds both).
    const double grads = training ? static_cast<double>(stage_parameter_count(shard.model, shard.first_stage(),
                                                                              shard.last_stage())) *
                                        hw::bytes_per_element(shard.dtype)
                                  : 0.0;
    const double activations = std::max(0.0, one.activation_peak_bytes - grads);
    out.activation_peak_bytes = std::max(out.activation_peak_bytes,
                                         grads + activations * micro_batches_in_flight(p, stage, training));
    out.run.events += one.run.events;
    StageTimes t;
    if (training) {
      // Each micro-batch runs the forward and backward; the gradients' all-reduce and the
      // optimizer run once, after the last backward: what they add is from its end to theirs (DDP's
      // buckets start during it).
      double backward_end = 0, once_end = 0;
      for (const PhaseSplit& split : one.run.phase_splits) {
        const bool once = split.name != "forward" && split.name != "backward";
        if (split.name == "forward") t.forward_us += split.total_us;
        if (split.name == "backward") {
          t.backward_us += split.total_us;
          backward_end = split.end_us;
        }
        if (once) once_end = std::max(once_end, split.end_us);
        sr.kernels += split.kernels * (once ? 1 : m);
        sr.kernel_time_us += split.kernel_time_us * (once ? 1 : m);
      }
      t.optimizer_us = std::max(0.0, once_end - backward_end);
    } else {
      t.forward_us = one.run.total_us;
      sr.kernels = one.run.kernels * m;
      sr.kernel_time_us = one.run.kernel_time_us * m;
    }
    sr.phase_splits = std::move(one.run.phase_splits);
    sr.detail = std::move(one.run.detail);
    if (!shard.last_stage()) t.forward_send_us = send_us(shard, stage + 1, micro, hw, mode, cache);
    if (training && !shard.first_stage()) t.backward_send_us = send_us(shard, stage - 1, micro, hw, mode, cache);
    times.push_back(t);
    out.run.kernels += sr.kernels;
    out.run.kernel_time_us += sr.kernel_time_us;
    out.run.pipeline.push_back(std::move(sr));
  }
  const PipelineSchedule schedule = schedule_pipeline(times, m, training);
  out.run.total_us = schedule.makespan_us;
  for (int stage = 0; stage < p.pipeline; ++stage) {
    PipelineStageRun& sr = out.run.pipeline[static_cast<std::size_t>(stage)];
    sr.tasks = schedule.stages[static_cast<std::size_t>(stage)];
    sr.busy_us = schedule.busy_us(stage);
    sr.idle_us = schedule.idle_us(stage);
    if (training) sr.optimizer_start_us = schedule.optimizer_start_us[static_cast<std::size_t>(stage)];
  }
  return out;
}

}  // namespace gpusim::workloads
