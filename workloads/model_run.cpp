#include "workloads/model_run.h"

#include <algorithm>

#include "workloads/transformer_phases.h"

namespace gpusim::workloads {

ModelRun simulate_model(const ModelWorkload& w, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                        const models::KernelModelRegistry& models) {
  ModelRun run;
  double activation_peak = 0;
  auto steps = build_steps(w, hw, models);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    StepProgram& p = steps[i];
    auto nodes = std::move(p.dag).to_nodes();
    hw::EngineResult result = hw::run_engine(hw, mode, nodes);
    StepRun s;
    s.phase = p.phase;
    s.shape = p.shape;
    s.total_us = result.end.us();
    s.kernels = static_cast<std::int64_t>(nodes.size());
    s.events = result.events;
    for (const auto& k : result.kernels) s.kernel_time_us += k.duration().us();
    const bool first_of_phase = i == 0 || steps[i - 1].phase != p.phase;
    if (first_of_phase || i + 1 == steps.size()) s.detail = StepDetail{std::move(nodes), std::move(result)};
    activation_peak = std::max(activation_peak, p.activation_peak_bytes);
    run.steps.push_back(std::move(s));
  }
  run.memory = memory_footprint(w, activation_peak, hw);
  return run;
}

}  // namespace gpusim::workloads
