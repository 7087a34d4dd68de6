#include "workloads/host_issue.h"

namespace gpusim::workloads {

void set_model_host_issue(KernelDag& dag, const hw::HardwareSpec& hw,
                          const std::vector<std::pair<std::string, std::size_t>>& phase_starts) {
  const auto& h = hw.host;
  std::size_t next = 0;  // the next phase's index in phase_starts
  sim::Time per_kernel = h.model_kernel_issue;
  for (std::size_t v = 0; v < dag.size(); ++v) {
    sim::Time gap;
    if (v == 0 && (phase_starts.empty() || phase_starts.front().second > 0)) gap = h.forward_fixed;
    while (next < phase_starts.size() && phase_starts[next].second == v) {
      const std::string& name = phase_starts[next++].first;
      per_kernel = name == "backward"         ? h.backward_kernel_issue
                   : name == "optimizer"      ? h.optimizer_kernel_issue
                   : name == "engine_prepare" ? sim::Time{}
                                              : h.model_kernel_issue;
      if (name == "forward") gap = h.forward_fixed;
    }
    dag.set_host_gap(static_cast<KernelDag::Vertex>(v), gap + per_kernel);
  }
}

}  // namespace gpusim::workloads
