#include "sim/fair_share.h"

#include <gtest/gtest.h>

namespace gpusim::sim {
namespace {

TEST(FairShare, UncontendedConsumersKeepTheirRates) {
  const auto r = fair_share_rates({{2.0, 1, {1.0}}, {3.0, 1, {1.0}}}, {100.0});
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 3.0);
}

TEST(FairShare, ContendedResourceScalesEveryUserAlike) {
  // Each alone would use 10 units/s of a 10-unit resource: together they get half each.
  const auto r = fair_share_rates({{10.0, 1, {1.0}}, {10.0, 1, {1.0}}}, {10.0});
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

TEST(FairShare, MultiplicityCountsEachIdenticalConsumer) {
  const auto r = fair_share_rates({{10.0, 4, {1.0}}}, {10.0});
  EXPECT_DOUBLE_EQ(r[0], 2.5);
}

TEST(FairShare, ConsumerLimitedElsewhereLeavesCapacityToOthers) {
  // Resource 0 (capacity 10) is shared by A and B; B also needs resource 1 (capacity 2).
  // B is frozen at 2 by resource 1, so A gets the remaining 8 of resource 0, not 5.
  const auto r = fair_share_rates({{10.0, 1, {1.0, 0.0}}, {10.0, 1, {1.0, 1.0}}}, {10.0, 2.0});
  EXPECT_DOUBLE_EQ(r[1], 2.0);
  EXPECT_DOUBLE_EQ(r[0], 8.0);
}

TEST(FairShare, ConsumersUsingNothingSharedRunAtFullRate) {
  const auto r = fair_share_rates({{7.0, 1, {0.0}}, {10.0, 1, {2.0}}}, {10.0});
  EXPECT_DOUBLE_EQ(r[0], 7.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

}  // namespace
}  // namespace gpusim::sim
