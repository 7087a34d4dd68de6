#include "serve/step_timer.h"

#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"

namespace gpusim::serve {

StepTimer::StepTimer(const workloads::ModelWorkload& w, const hw::HardwareSpec& hw, const EngineSpec& engine,
                     const models::KernelModelRegistry& models, bool reuse)
    : w_(w), hw_(hw), engine_(engine), lowering_(hw, models), outcomes_(hw), reuse_(reuse) {}

const StepTime& StepTimer::time(const std::vector<workloads::SeqSlice>& seqs) {
  std::vector<std::int64_t> key;
  key.reserve(3 * seqs.size());
  std::int64_t tokens = 0;
  for (const auto& s : seqs) {
    key.insert(key.end(), {s.new_tokens, s.past_tokens, s.samples ? 1 : 0});
    tokens += s.new_tokens;
  }
  if (reuse_) {
    if (const auto it = memo_.find(key); it != memo_.end()) {
      ++hits_;
      return it->second;
    }
  }
  StepTime t;
  t.graph = tokens <= engine_.cuda_graph_max_tokens;
  const workloads::StepRun run =
      workloads::simulate_step(w_, "serve", workloads::StepShape(seqs), lowering_, hw_,
                               t.graph ? hw::LaunchMode::kGraph : hw::LaunchMode::kEager, reuse_ ? &outcomes_ : nullptr);
  t.gpu_us = run.total_us;
  t.kernel_us = run.kernel_time_us;
  t.kernels = run.kernels;
  ++simulated_;
  if (!reuse_) {
    last_ = t;
    return last_;
  }
  return memo_.emplace(std::move(key), t).first->second;
}

double StepTimer::activation_peak_bytes(std::int64_t tokens) {
  const workloads::StepShape shape(std::vector<workloads::SeqSlice>{{tokens, 0, true}});
  return workloads::build_step(w_, "serve", shape, lowering_).activation_peak_bytes;
}

}  // namespace gpusim::serve
