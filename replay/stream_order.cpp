#include "replay/stream_order.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

namespace gpusim::replay {
namespace {

// Recorded clocks of one group: when its first launch call was made, when its first activity
// started and when its last ended.
struct Span {
  std::optional<double> launch;
  double start = 0, end = 0;
};

// The recording's clocks differ by up to a microsecond between host and device timestamps.
constexpr double kClockSlackUs = 1.0;

}  // namespace

std::vector<std::vector<std::size_t>> cross_stream_waits(const RecordedTrace& trace, const std::vector<MappedGroup>& groups) {
  std::vector<std::vector<std::size_t>> waits(groups.size());
  if (trace.syncs.empty()) return waits;
  std::vector<Span> spans(groups.size());
  std::map<int, std::vector<std::size_t>> by_stream;  // groups with a launch time, in order
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Span& s = spans[g];
    s.start = std::numeric_limits<double>::max();
    for (const std::size_t a : groups[g].activities) {
      const auto& act = trace.activities[a];
      if (act.launch_us && (!s.launch || *act.launch_us < *s.launch)) s.launch = act.launch_us;
      s.start = std::min(s.start, act.start_us);
      s.end = std::max(s.end, act.start_us + act.duration_us);
    }
    if (s.launch) by_stream[groups[g].stream].push_back(g);
  }
  // The last group of `list` launched before `t`, and the first launched after it.
  const auto before = [&](const std::vector<std::size_t>& list, double t) -> std::optional<std::size_t> {
    const auto it = std::partition_point(list.begin(), list.end(), [&](std::size_t g) { return *spans[g].launch < t; });
    if (it == list.begin()) return std::nullopt;
    return *std::prev(it);
  };
  const auto after = [&](const std::vector<std::size_t>& list, double t) -> std::optional<std::size_t> {
    const auto it = std::partition_point(list.begin(), list.end(), [&](std::size_t g) { return *spans[g].launch < t; });
    if (it == list.end()) return std::nullopt;
    return *it;
  };
  for (const RecordedSync& sync : trace.syncs) {
    for (const auto& [stream, list] : by_stream) {
      if (sync.kind == RecordedSync::Kind::kStreamWaitEvent && stream != sync.stream) continue;
      const auto waiter = after(list, sync.host_us);
      if (!waiter) continue;
      for (const auto& [other, other_list] : by_stream) {
        if (other == stream) continue;
        const auto waited = before(other_list, sync.host_us);
        if (waited && *waited < *waiter && spans[*waited].end <= spans[*waiter].start + kClockSlackUs) {
          waits[*waiter].push_back(*waited);
        }
      }
    }
  }
  for (auto& w : waits) {
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
  }
  return waits;
}

}  // namespace gpusim::replay
