// Simulated time near the clock's range: picoseconds in 64 bits hold about 2562 hours. The
// engine computes event times with these checked forms, so a workload that needs more gets
// ClockOverflow (bad input; callers that know its file name it) instead of a time that wrapped
// into the past.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "sim/time.h"

namespace gpusim::sim {

class ClockOverflow : public std::out_of_range {
 public:
  ClockOverflow();  // the message gives the clock's range
};

inline constexpr Time kMaxTime = Time::from_ps(std::numeric_limits<std::int64_t>::max());

inline Time checked_sum(Time a, Time b) {
  std::int64_t ps = 0;
  if (__builtin_add_overflow(a.ps(), b.ps(), &ps)) throw ClockOverflow();
  return Time::from_ps(ps);
}

inline Time checked_product(Time t, std::int64_t n) {
  std::int64_t ps = 0;
  if (__builtin_mul_overflow(t.ps(), n, &ps)) throw ClockOverflow();
  return Time::from_ps(ps);
}

// Seconds to picoseconds rounded up (an event due no earlier than the work's end).
Time from_seconds_ceil(double seconds);

}  // namespace gpusim::sim
