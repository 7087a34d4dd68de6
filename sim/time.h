// Simulated time: an integer count of picoseconds in a strong type.
// Integer time keeps event ordering exact and runs bit-for-bit repeatable.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace gpusim::sim {

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ps(std::int64_t ps) { return Time(ps); }
  // Converts from seconds, rounding to the nearest picosecond.
  static Time from_seconds(double seconds);

  constexpr std::int64_t ps() const { return ps_; }
  double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  double us() const { return static_cast<double>(ps_) * 1e-6; }
  double ns() const { return static_cast<double>(ps_) * 1e-3; }

  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

// "2.5 us", "350 ns", "0 s": the largest unit that keeps the value >= 1.
std::string to_string(Time t);

}  // namespace gpusim::sim
