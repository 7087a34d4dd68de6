#include "sim/event_queue.h"

namespace gpusim::sim {

void EventQueue::push(Time time, int priority, std::function<void()> action) {
  heap_.push(Event{time, priority, next_sequence_++, std::move(action)});
}

Event EventQueue::pop() {
  Event e = heap_.top();
  heap_.pop();
  return e;
}

}  // namespace gpusim::sim
