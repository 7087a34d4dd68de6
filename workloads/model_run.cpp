#include "workloads/model_run.h"

#include <algorithm>

namespace gpusim::workloads {

MemoryFootprint steps_footprint(const ModelWorkload& w, const std::vector<StepProgram>& steps,
                                const hw::HardwareSpec& hw) {
  double activation_peak = 0;
  for (const auto& s : steps) activation_peak = std::max(activation_peak, s.activation_peak_bytes);
  return memory_footprint(w, activation_peak, hw);
}

ModelRun simulate_model(const ModelWorkload& w, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                        const models::KernelModelRegistry& models, const SimulateOptions& options) {
  return simulate_steps(w, build_steps(w, hw, models), hw, mode, options);
}

ModelRun simulate_steps(const ModelWorkload& w, std::vector<StepProgram> steps, const hw::HardwareSpec& hw,
                        hw::LaunchMode mode, const SimulateOptions& options) {
  ModelRun run;
  run.memory = steps_footprint(w, steps, hw);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    StepProgram& p = steps[i];
    auto nodes = std::move(p.dag).to_nodes();
    const bool first_of_phase = i == 0 || steps[i - 1].phase != p.phase;
    const bool detailed = first_of_phase || i + 1 == steps.size();
    std::optional<hw::TimelineRecorder> recorder;
    if (detailed && options.record_timeline) recorder.emplace(options.record_ctas);
    hw::EngineResult result = hw::run_engine(hw, mode, nodes, recorder ? &*recorder : nullptr);
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
    run.steps.push_back(std::move(s));
    if (options.on_step) options.on_step(i + 1, steps.size());
  }
  return run;
}

}  // namespace gpusim::workloads
