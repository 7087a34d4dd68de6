#include "sim/time.h"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include "sim/time_checks.h"

namespace gpusim::sim {

ClockOverflow::ClockOverflow()
    : std::out_of_range(fmt::format("the simulated time overflows gpusim's clock (at most {:.0f} hours of "
                                    "simulated time: picoseconds in 64 bits)",
                                    kMaxTime.seconds() / 3600)) {}

Time Time::from_seconds(double seconds) {
  const double ps = std::round(seconds * 1e12);
  // 2^63 itself does not fit: the comparison is strict (and false for NaN).
  if (!(std::fabs(ps) < 0x1p63)) throw ClockOverflow();
  return Time::from_ps(static_cast<std::int64_t>(ps));
}

Time from_seconds_ceil(double seconds) {
  const double ps = std::ceil(seconds * 1e12);
  if (!(std::fabs(ps) < 0x1p63)) throw ClockOverflow();
  return Time::from_ps(static_cast<std::int64_t>(ps));
}

std::string to_string(Time t) {
  const std::int64_t ps = t.ps();
  const std::int64_t mag = ps < 0 ? -ps : ps;
  if (mag >= 1'000'000'000'000) return fmt::format("{} s", static_cast<double>(ps) * 1e-12);
  if (mag >= 1'000'000'000) return fmt::format("{} ms", static_cast<double>(ps) * 1e-9);
  if (mag >= 1'000'000) return fmt::format("{} us", static_cast<double>(ps) * 1e-6);
  if (mag >= 1'000) return fmt::format("{} ns", static_cast<double>(ps) * 1e-3);
  return fmt::format("{} ps", ps);
}

}  // namespace gpusim::sim
