#include "workloads/op_lowering.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/error.h"
#include "sim/time_checks.h"

namespace gpusim::workloads {
namespace {

// A launch's shortest possible time: its FLOPs at the chip's peak rates or its DRAM bytes at the
// datasheet bandwidth, whichever is longer, halved (clocks above the sustained ones). The engine
// can only take longer.
double lower_bound_s(const hw::Launch& launch, const hw::HardwareSpec& hw) {
  double tensor_s = 0, fp32_s = 0, dram_bytes = 0;
  for (const auto& c : launch.ctas) {
    const double n = static_cast<double>(c.count);
    const double tensor_rate = hw.peak_tensor_flops(c.work.tensor_dtype);
    if (tensor_rate > 0) tensor_s += n * c.work.tensor_flops / tensor_rate;
    if (hw.peak_fp32_flops() > 0) fp32_s += n * c.work.fp32_flops / hw.peak_fp32_flops();
    dram_bytes += n * (c.work.dram_read_bytes + c.work.dram_write_bytes);
  }
  const double dram_s = hw.dram.bandwidth > 0 ? dram_bytes / hw.dram.bandwidth : 0;
  return 0.5 * std::max({tensor_s, fp32_s, dram_s});
}

}  // namespace

std::vector<hw::KernelNode> lower_ops(const OpWorkload& workload, const hw::HardwareSpec& hw,
                                      const models::KernelModelRegistry& models, const std::string& file) {
  std::vector<hw::KernelNode> nodes;
  // The ops run one after another: refuse, before simulating, the first one that would take the
  // simulated time past the clock's range (the engine would only find out deep into the run).
  double least_s = 0;
  for (std::size_t i = 0; i < workload.ops.size(); ++i) {
    const models::Op& op = workload.ops[i].op;
    const std::string label = fmt::format("ops[{}] {}", i, models::op_name(op.kind()));
    std::vector<hw::Launch> launches;
    try {
      launches = models.lower(op, hw, fmt::format("op{}", i));
    } catch (const ModelError& e) {
      // A collective's group must fit the system (--hw): a chip alone has no links.
      if (!models::is_collective(op.kind())) throw;
      throw ConfigError(file, workload.ops[i].line, fmt::format("ops[{}].gpus", i), e.what());
    }
    for (auto& launch : launches) {
      least_s += lower_bound_s(launch, hw);
      nodes.push_back(hw::KernelNode{std::move(launch), label, 0, {}, std::nullopt});
    }
    if (least_s >= sim::kMaxTime.seconds()) {
      throw ConfigError(file, workload.ops[i].line, fmt::format("ops[{}]", i),
                        fmt::format("this op's simulated time overflows gpusim's clock (it needs at least {:.3g} "
                                    "hours of simulated time; the clock holds {:.0f})",
                                    least_s / 3600, sim::kMaxTime.seconds() / 3600));
    }
  }
  return nodes;
}

}  // namespace gpusim::workloads
