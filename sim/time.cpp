#include "sim/time.h"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace gpusim::sim {

Time Time::from_seconds(double seconds) {
  const double ps = std::round(seconds * 1e12);
  if (!std::isfinite(ps) || std::fabs(ps) > static_cast<double>(std::numeric_limits<std::int64_t>::max())) {
    throw std::out_of_range(fmt::format("time of {} s does not fit in picoseconds", seconds));
  }
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
