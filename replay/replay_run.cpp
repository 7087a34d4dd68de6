#include "replay/replay_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "hw/kernel_outcome_cache.h"
#include "replay/nsys_trace.h"
#include "replay/stream_order.h"
#include "sim/input_file.h"

namespace gpusim::replay {

ReplayRun run_replay(const RecordedTrace& trace, const hw::HardwareSpec& to, const hw::HardwareSpec* from,
                     const models::KernelModelRegistry& models, ReplayMode mode, bool reuse_outcomes) {
  ReplayRun r;
  r.groups = map_trace(trace, to, from, models);
  std::map<int, int> streams;
  std::optional<double> last_launch;
  const auto waits = cross_stream_waits(trace, r.groups);
  std::vector<int> last_node(r.groups.size(), -1);
  for (std::size_t g = 0; g < r.groups.size(); ++g) {
    const int stream = streams.emplace(r.groups[g].stream, static_cast<int>(streams.size())).first->second;
    // As recorded: the group's first launch is issued the recorded host time after the previous
    // recorded launch call; the rest of the group's launches follow at once.
    std::optional<sim::Time> gap;
    if (mode == ReplayMode::kAsRecorded) {
      const auto& first = trace.activities[r.groups[g].activities.front()];
      gap = sim::Time{};
      if (first.launch_us) {
        if (last_launch) gap = sim::Time::from_seconds(std::max(0.0, *first.launch_us - *last_launch) * 1e-6);
        last_launch = first.launch_us;
      }
    }
    for (std::size_t i = 0; i < r.groups[g].launches.size(); ++i) {
      std::optional<sim::Time> this_gap = gap;
      if (mode == ReplayMode::kAsRecorded && i > 0) this_gap = sim::Time{};
      std::vector<int> deps;
      if (i == 0) {
        // The first launch waits for what the recorded synchronizations ordered before it.
        for (const std::size_t w : waits[g]) {
          if (last_node[w] >= 0) deps.push_back(last_node[w]);
        }
      }
      last_node[g] = static_cast<int>(r.nodes.size());
      r.nodes.push_back(hw::KernelNode{r.groups[g].launches[i], fmt::format("{} #{}", r.groups[g].op, g), stream,
                                       std::move(deps), this_gap});
      r.group_of.push_back(g);
    }
  }
  std::optional<hw::KernelOutcomeCache> cache;
  if (reuse_outcomes) cache.emplace(to);
  r.result = hw::run_engine(to, mode == ReplayMode::kGraph ? hw::LaunchMode::kGraph : hw::LaunchMode::kEager, r.nodes,
                            nullptr, cache ? &*cache : nullptr);
  if (cache) r.reused_outcomes = cache->hits();
  r.group_us.assign(r.groups.size(), 0.0);
  for (std::size_t i = 0; i < r.result.kernels.size(); ++i) {
    const double us = r.result.kernels[i].duration().us();
    r.group_us[r.group_of[i]] += us;
    r.kernel_time_us += us;
  }
  return r;
}

RecordedTrace read_trace(const std::filesystem::path& file, const std::string& nsys_type) {
  check_input_file(file);  // before a peek at its first bytes, which a FIFO would block
  return is_sqlite_file(file) ? read_nsys_trace(file, nsys_type) : read_profiler_trace(file);
}

double recorded_kernel_time_us(const RecordedTrace& trace) {
  double us = 0;
  for (const auto& a : trace.activities) us += a.duration_us;
  return us;
}

double recorded_span_us(const RecordedTrace& trace) {
  if (trace.activities.empty()) return 0;
  double first = trace.activities.front().launch_us.value_or(trace.activities.front().start_us), last = 0;
  for (const auto& a : trace.activities) {
    first = std::min(first, a.launch_us.value_or(a.start_us));
    last = std::max(last, a.start_us + a.duration_us);
  }
  return last - first;
}

}  // namespace gpusim::replay
