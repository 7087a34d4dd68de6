// Physical quantities written with units in configuration values: "3.35TB/s", "50MiB",
// "1.98GHz", "2us", "4096 flop/clk". Parsing is strict: a missing or foreign unit is an error.
#pragma once

#include <string>
#include <string_view>

namespace gpusim::hw {

enum class Quantity {
  kCount,          // a plain integer: 132
  kBytes,          // 50MiB, 80GB (KB = 1000 B, KiB = 1024 B)
  kBandwidth,      // 3.35TB/s, 900GB/s, 1.5TiB/s
  kFrequency,      // 1.98GHz, 1410MHz
  kDuration,       // 2us, 350ns, 1.5ms (also "µs")
  kFlopsPerCycle,  // 4096 flop/clk (per SM; an FMA counts 2)
  kOpsPerCycle,    // 16 op/clk (per SM)
  kFraction,       // 0.9 or 90%
  kNumber,         // a plain number without a unit: 6.5
  kText,           // a word such as HBM3
};

// Name of the quantity with an example, for messages: "a bandwidth such as 3.35TB/s".
std::string describe(Quantity q);

// Result of parsing one value; on failure `error` says why (without file or key,
// which the caller adds).
struct ParsedQuantity {
  double value = 0;  // in base units: bytes, bytes/s, Hz, seconds, flop/cycle, op/cycle
  std::string error;
  bool ok() const { return error.empty(); }
};

ParsedQuantity parse_quantity(std::string_view text, Quantity q);

// Formats a value in base units with a readable unit that parse_quantity accepts back.
std::string format_quantity(double value, Quantity q);

}  // namespace gpusim::hw
