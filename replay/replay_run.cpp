#include "replay/replay_run.h"

#include <fmt/format.h>

#include <map>

namespace gpusim::replay {

ReplayRun run_replay(const RecordedTrace& trace, const hw::HardwareSpec& to, const hw::HardwareSpec* from,
                     const models::KernelModelRegistry& models) {
  ReplayRun r;
  r.groups = map_trace(trace, to, from, models);
  std::map<int, int> streams;
  for (std::size_t g = 0; g < r.groups.size(); ++g) {
    const int stream = streams.emplace(r.groups[g].stream, static_cast<int>(streams.size())).first->second;
    for (const auto& l : r.groups[g].launches) {
      r.nodes.push_back(hw::KernelNode{l, fmt::format("{} #{}", r.groups[g].op, g), stream, {}, std::nullopt});
      r.group_of.push_back(g);
    }
  }
  r.result = hw::run_engine(to, hw::LaunchMode::kGraph, r.nodes);
  r.group_us.assign(r.groups.size(), 0.0);
  for (std::size_t i = 0; i < r.result.kernels.size(); ++i) {
    const double us = r.result.kernels[i].duration().us();
    r.group_us[r.group_of[i]] += us;
    r.kernel_time_us += us;
  }
  return r;
}

double recorded_kernel_time_us(const RecordedTrace& trace) {
  double us = 0;
  for (const auto& a : trace.activities) us += a.duration_us;
  return us;
}

}  // namespace gpusim::replay
