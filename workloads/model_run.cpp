#include "workloads/model_run.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gpusim::workloads {
namespace {

// Runs one step's program on the engine; `detailed` keeps its kernels and results.
StepRun run_step(StepProgram p, bool detailed, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                 const SimulateOptions& options, hw::KernelOutcomeCache* cache) {
  auto nodes = std::move(p.dag).to_nodes();
  std::optional<hw::TimelineRecorder> recorder;
  if (detailed && options.record_timeline) recorder.emplace(options.record_ctas);
  hw::EngineResult result = hw::run_engine(hw, mode, nodes, recorder ? &*recorder : nullptr, cache);
  StepRun s;
  s.phase = p.phase;
  s.shape = p.shape;
  s.total_us = result.end.us();
  s.kernels = static_cast<std::int64_t>(nodes.size());
  s.events = result.events;
  for (const auto& k : result.kernels) s.kernel_time_us += k.duration().us();
  if (detailed) {
    s.detail = StepDetail{std::move(nodes), std::move(result), std::nullopt};
    if (recorder) s.detail->timeline = recorder->take();
  }
  return s;
}

// The first step of each phase and the last step keep their kernels.
bool detailed_step(const std::vector<std::pair<std::string, StepShape>>& shapes, std::size_t i) {
  return i == 0 || shapes[i - 1].first != shapes[i].first || i + 1 == shapes.size();
}

}  // namespace

hw::KernelOutcomeCache* outcome_cache(const SimulateOptions& options, const hw::HardwareSpec& hw,
                                      std::optional<hw::KernelOutcomeCache>& own) {
  if (!options.reuse) return nullptr;
  if (options.cache && options.cache->serves(hw)) return options.cache;
  return &own.emplace(hw);
}

MemoryFootprint steps_footprint(const ModelWorkload& w, const std::vector<StepProgram>& steps,
                                const hw::HardwareSpec& hw) {
  double activation_peak = 0;
  for (const auto& s : steps) activation_peak = std::max(activation_peak, s.activation_peak_bytes);
  return memory_footprint(w, activation_peak, hw);
}

// Steps are lowered one at a time and dropped once simulated, so a long generate run holds one
// step's program at a time.
ModelRun simulate_model(const ModelWorkload& w, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                        const models::KernelModelRegistry& models, const SimulateOptions& options) {
  std::optional<hw::KernelOutcomeCache> own_cache;
  hw::KernelOutcomeCache* cache = outcome_cache(options, hw, own_cache);
  OpLoweringCache lowering(hw, models);
  const auto shapes = step_shapes(w);
  ModelRun run;
  double activation_peak = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    StepProgram p = build_step(w, shapes[i].first, shapes[i].second, lowering);
    activation_peak = std::max(activation_peak, p.activation_peak_bytes);
    run.steps.push_back(run_step(std::move(p), detailed_step(shapes, i), hw, mode, options, cache));
    if (options.on_step) options.on_step(i + 1, shapes.size());
  }
  run.memory = memory_footprint(w, activation_peak, hw);
  return run;
}

ModelRun simulate_steps(const ModelWorkload& w, std::vector<StepProgram> steps, const hw::HardwareSpec& hw,
                        hw::LaunchMode mode, const SimulateOptions& options) {
  std::optional<hw::KernelOutcomeCache> own_cache;
  hw::KernelOutcomeCache* cache = outcome_cache(options, hw, own_cache);
  std::vector<std::pair<std::string, StepShape>> shapes;
  for (const auto& p : steps) shapes.emplace_back(p.phase, p.shape);
  ModelRun run;
  run.memory = steps_footprint(w, steps, hw);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    run.steps.push_back(run_step(std::move(steps[i]), detailed_step(shapes, i), hw, mode, options, cache));
    if (options.on_step) options.on_step(i + 1, steps.size());
  }
  return run;
}

}  // namespace gpusim::workloads
