// Decision fidelity: does the simulator order things as the hardware does? A design study picks
// the fastest option, so the ranking of a suite's rows matters as much as their mean error.
#pragma once

#include <cstdint>
#include <vector>

namespace gpusim::validation {

struct RankAgreement {
  std::int64_t rows = 0;
  // Kendall's tau-b between measured and simulated times (1: the same order, -1: reversed;
  // ties corrected), 0 with fewer than two rows or no untied pair.
  double kendall_tau = 0;
  // Of the pairs the measurement orders (measured times differ), the share the simulation
  // orders the same way; a simulated tie counts half.
  double pairs_ordered = 0;
  // Share of rows within 10% of the measurement.
  double within_10pct = 0;
};

// measured[i] and simulated[i] are one row; both vectors have the same length.
RankAgreement rank_agreement(const std::vector<double>& measured, const std::vector<double>& simulated);

}  // namespace gpusim::validation
