#include "sim/time.h"

#include "sim/time_checks.h"

#include <gtest/gtest.h>

#include <cmath>

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
  EXPECT_THROW(Time::from_seconds(1e300), ClockOverflow);
  EXPECT_THROW(from_seconds_ceil(1e7), ClockOverflow);  // 2778 hours
  EXPECT_THROW(Time::from_seconds(std::nan("")), ClockOverflow);
  EXPECT_EQ(from_seconds_ceil(1.5e-12).ps(), 2);
  // Checked sums and products past the range throw instead of wrapping into the past.
  const Time late = kMaxTime - Time::from_ps(10);
  EXPECT_EQ(checked_sum(late, Time::from_ps(10)), kMaxTime);
  EXPECT_THROW(checked_sum(late, Time::from_ps(11)), ClockOverflow);
  EXPECT_EQ(checked_product(Time::from_ps(3), 4).ps(), 12);
  EXPECT_THROW(checked_product(Time::from_ps(10'000'000), std::int64_t{1} << 60), ClockOverflow);
  try {
    checked_sum(late, late);
    ADD_FAILURE() << "no overflow";
  } catch (const ClockOverflow& e) {
    EXPECT_STREQ(e.what(), "the simulated time overflows gpusim's clock (at most 2562 hours of simulated time: "
                           "picoseconds in 64 bits)");
  }
}

TEST(Time, PrintsWithTheLargestFittingUnit) {
  EXPECT_EQ(to_string(Time::from_ps(2'500'000)), "2.5 us");
  EXPECT_EQ(to_string(Time::from_ps(350'000)), "350 ns");
  EXPECT_EQ(to_string(Time::from_ps(12)), "12 ps");
}

}  // namespace
}  // namespace gpusim::sim
