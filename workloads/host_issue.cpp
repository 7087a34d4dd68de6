#include "workloads/host_issue.h"

namespace gpusim::workloads {

void set_model_host_issue(KernelDag& dag, const hw::HardwareSpec& hw) {
  for (std::size_t v = 0; v < dag.size(); ++v) {
    const sim::Time before_first = v == 0 ? hw.host.forward_fixed : sim::Time();
    dag.set_host_gap(static_cast<KernelDag::Vertex>(v), before_first + hw.host.model_kernel_issue);
  }
}

}  // namespace gpusim::workloads
