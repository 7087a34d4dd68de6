#include "sim/event_queue.h"

#include <stdexcept>

namespace gpusim::sim {

EventId EventQueue::push(Time time, int priority, std::function<void()> action) {
  const EventId id = next_sequence_++;
  gone_.push_back(false);
  heap_.push(Event{time, priority, id, std::move(action)});
  return id;
}

void EventQueue::cancel(EventId id) {
  if (id >= next_sequence_ || gone_[id] || !cancelled_.insert(id).second) {
    throw std::logic_error("cancelled an event that is not pending");
  }
  drop_cancelled();
}

Event EventQueue::pop() {
  Event e = heap_.top();
  heap_.pop();
  gone_[e.sequence] = true;
  drop_cancelled();
  return e;
}

void EventQueue::drop_cancelled() {
  while (!heap_.empty()) {
    const auto it = cancelled_.find(heap_.top().sequence);
    if (it == cancelled_.end()) return;
    cancelled_.erase(it);
    gone_[heap_.top().sequence] = true;
    heap_.pop();
  }
}

}  // namespace gpusim::sim
