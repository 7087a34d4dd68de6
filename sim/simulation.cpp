#include "sim/simulation.h"

#include <stdexcept>

namespace gpusim::sim {

EventId Simulation::at(Time when, int priority, std::function<void()> action) {
  if (when < now_) throw std::logic_error("an event was scheduled in the past");
  return queue_.push(when, priority, std::move(action));
}

void Simulation::run(const std::function<void()>& after_batch) {
  while (!queue_.empty()) {
    now_ = queue_.top().time;
    while (!queue_.empty() && queue_.top().time == now_) {
      Event e = queue_.pop();
      ++events_processed_;
      e.action();
    }
    if (after_batch) after_batch();
  }
}

}  // namespace gpusim::sim
