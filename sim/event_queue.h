// Events ordered by (time, priority, sequence number): equal times resolve by priority, then
// in insertion order, so a run is bit-for-bit repeatable.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "sim/time.h"

namespace gpusim::sim {

struct Event {
  Time time;
  int priority = 0;  // lower runs first among events at the same time
  std::uint64_t sequence = 0;
  std::function<void()> action;
};

class EventQueue {
 public:
  void push(Time time, int priority, std::function<void()> action);
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  Event pop();

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.sequence > b.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace gpusim::sim
