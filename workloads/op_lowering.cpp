#include "workloads/op_lowering.h"

#include <fmt/format.h>

namespace gpusim::workloads {

std::vector<hw::KernelNode> lower_ops(const OpWorkload& workload, const hw::HardwareSpec& hw,
                                      const models::KernelModelRegistry& models) {
  std::vector<hw::KernelNode> nodes;
  for (std::size_t i = 0; i < workload.ops.size(); ++i) {
    const models::Op& op = workload.ops[i].op;
    const std::string label = fmt::format("ops[{}] {}", i, models::op_name(op.kind()));
    for (auto& launch : models.lower(op, hw, fmt::format("op{}", i))) {
      nodes.push_back(hw::KernelNode{std::move(launch), label, 0, {}, std::nullopt});
    }
  }
  return nodes;
}

}  // namespace gpusim::workloads
