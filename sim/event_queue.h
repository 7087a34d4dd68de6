// Events ordered by (time, priority, sequence number): equal times resolve by priority, then
// in insertion order, so a run is bit-for-bit repeatable.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_set>
#include <vector>

#include "sim/time.h"

namespace gpusim::sim {

struct Event {
  Time time;
  int priority = 0;  // lower runs first among events at the same time
  std::uint64_t sequence = 0;
  std::function<void()> action;
};

// Identifies a pushed event, to cancel it.
using EventId = std::uint64_t;

class EventQueue {
 public:
  EventId push(Time time, int priority, std::function<void()> action);
  // Removes a pending event (one pushed and not yet popped): it never runs and is never counted.
  void cancel(EventId id);
  bool empty() const { return heap_.empty(); }
  // Events still to run, cancelled ones excluded.
  std::size_t size() const { return heap_.size() - cancelled_.size(); }
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
  // Drops cancelled events from the top, so top() is always one that runs.
  void drop_cancelled();

  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::unordered_set<EventId> cancelled_;  // cancelled and still in the heap
  std::vector<bool> gone_;                 // by id: popped or dropped
  std::uint64_t next_sequence_ = 0;
};

}  // namespace gpusim::sim
