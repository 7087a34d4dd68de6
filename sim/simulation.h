// A discrete-event simulation: owns its clock and event queue and nothing global, so many
// simulations can run side by side (one per thread) in one process.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/event_queue.h"
#include "sim/time.h"
#include "sim/time_checks.h"

namespace gpusim::sim {

class Simulation {
 public:
  Time now() const { return now_; }

  // Schedules `action` at absolute time `at` (not before now).
  EventId at(Time at, int priority, std::function<void()> action);
  EventId after(Time delay, int priority, std::function<void()> action) {
    return at(checked_sum(now_, delay), priority, std::move(action));
  }
  // Withdraws an event that has not run yet: it neither runs nor counts, nor opens an instant.
  void cancel(EventId id) { queue_.cancel(id); }
  // Events still to run.
  std::size_t pending() const { return queue_.size(); }

  // Runs events in order until none remain. `after_batch` (optional) runs once after all events
  // of one timestamp, before time advances: components recompute shared rates there once per
  // instant instead of once per event.
  void run(const std::function<void()>& after_batch = {});

  std::uint64_t events_processed() const { return events_processed_; }
  // Adds events that a caller accounted for without running them (a cached result stands for
  // the events that produced it), so the count is the same with or without the cache.
  void count_events(std::uint64_t n) { events_processed_ += n; }

 private:
  EventQueue queue_;
  Time now_;
  std::uint64_t events_processed_ = 0;
};

}  // namespace gpusim::sim
