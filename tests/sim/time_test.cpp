#include "sim/time.h"

#include <gtest/gtest.h>

namespace gpusim::sim {
namespace {

TEST(Time, ConvertsSecondsToWholePicoseconds) {
  EXPECT_EQ(Time::from_seconds(2.5e-6).ps(), 2'500'000);
  EXPECT_EQ(Time::from_seconds(1e-12).ps(), 1);
  EXPECT_EQ(Time::from_seconds(0.4e-12).ps(), 0);  // rounds to nearest
  EXPECT_DOUBLE_EQ(Time::from_ps(1'500'000).us(), 1.5);
}

TEST(Time, OrdersAndAddsExactly) {
  const Time a = Time::from_ps(10), b = Time::from_ps(15);
  EXPECT_LT(a, b);
  EXPECT_EQ((a + b).ps(), 25);
  EXPECT_EQ((b - a).ps(), 5);
  Time c = a;
  c += b;
  EXPECT_EQ(c, Time::from_ps(25));
}

TEST(Time, RejectsValuesOutsidePicosecondRange) {
  EXPECT_THROW(Time::from_seconds(1e300), std::out_of_range);
}

TEST(Time, PrintsWithTheLargestFittingUnit) {
  EXPECT_EQ(to_string(Time::from_ps(2'500'000)), "2.5 us");
  EXPECT_EQ(to_string(Time::from_ps(350'000)), "350 ns");
  EXPECT_EQ(to_string(Time::from_ps(12)), "12 ps");
}

}  // namespace
}  // namespace gpusim::sim
