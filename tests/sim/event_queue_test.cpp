#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include "sim/simulation.h"

namespace gpusim::sim {
namespace {

TEST(EventQueue, OrdersByTimeThenPriorityThenInsertion) {
  EventQueue q;
  std::vector<int> order;
  q.push(Time::from_ps(20), 0, [&] { order.push_back(4); });
  q.push(Time::from_ps(10), 1, [&] { order.push_back(3); });
  q.push(Time::from_ps(10), 0, [&] { order.push_back(1); });
  q.push(Time::from_ps(10), 0, [&] { order.push_back(2); });
  while (!q.empty()) q.pop().action();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST(Simulation, RunsEventsInOrderAndBatchesEqualTimes) {
  Simulation sim;
  std::vector<std::pair<std::int64_t, int>> seen;
  int batches = 0;
  sim.at(Time::from_ps(5), 0, [&] {
    seen.push_back({sim.now().ps(), 1});
    sim.after(Time::from_ps(0), 0, [&] { seen.push_back({sim.now().ps(), 2}); });
    sim.after(Time::from_ps(7), 0, [&] { seen.push_back({sim.now().ps(), 3}); });
  });
  sim.run([&] { ++batches; });
  EXPECT_EQ(seen, (std::vector<std::pair<std::int64_t, int>>{{5, 1}, {5, 2}, {12, 3}}));
  EXPECT_EQ(batches, 2);  // one per distinct time
  EXPECT_EQ(sim.events_processed(), 3u);
  EXPECT_THROW(sim.at(Time::from_ps(1), 0, [] {}), std::logic_error);
}

}  // namespace
}  // namespace gpusim::sim
