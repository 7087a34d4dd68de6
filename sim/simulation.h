// A discrete-event simulation: owns its clock and event queue and nothing global, so many
// simulations can run side by side (one per thread) in one process.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/event_queue.h"
#include "sim/time.h"

namespace gpusim::sim {

class Simulation {
 public:
  Time now() const { return now_; }

  // Schedules `action` at absolute time `at` (not before now).
  void at(Time at, int priority, std::function<void()> action);
  void after(Time delay, int priority, std::function<void()> action) {
    at(now_ + delay, priority, std::move(action));
  }

  // Runs events in order until none remain. `after_batch` (optional) runs once after all events
  // of one timestamp, before time advances: components recompute shared rates there once per
  // instant instead of once per event.
  void run(const std::function<void()>& after_batch = {});

  std::uint64_t events_processed() const { return events_processed_; }

 private:
  EventQueue queue_;
  Time now_;
  std::uint64_t events_processed_ = 0;
};

}  // namespace gpusim::sim
