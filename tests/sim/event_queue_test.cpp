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

// A cancelled event neither runs nor counts, nor opens an instant of its own.
TEST(Simulation, CancelledEventsNeverRunNorCount) {
  Simulation sim;
  std::vector<std::int64_t> seen;
  int batches = 0;
  const EventId late = sim.at(Time::from_ps(50), 0, [&] { seen.push_back(50); });
  sim.at(Time::from_ps(10), 0, [&] {
    seen.push_back(10);
    sim.cancel(late);
  });
  const EventId early = sim.at(Time::from_ps(5), 0, [&] { seen.push_back(5); });
  sim.at(Time::from_ps(20), 0, [&] { seen.push_back(20); });
  EXPECT_EQ(sim.pending(), 4u);
  sim.cancel(early);
  EXPECT_EQ(sim.pending(), 3u);
  EXPECT_THROW(sim.cancel(early), std::logic_error);
  sim.run([&] { ++batches; });
  EXPECT_EQ(seen, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(sim.now(), Time::from_ps(20));
  EXPECT_EQ(sim.events_processed(), 2u);
  EXPECT_EQ(sim.pending(), 0u);
}

}  // namespace
}  // namespace gpusim::sim
