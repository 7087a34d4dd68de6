#include "validation/ranking.h"

#include <cmath>
#include <stdexcept>

namespace gpusim::validation {

RankAgreement rank_agreement(const std::vector<double>& measured, const std::vector<double>& simulated) {
  if (measured.size() != simulated.size()) throw std::logic_error("rank_agreement: rows differ in length");
  RankAgreement r;
  const std::size_t n = measured.size();
  r.rows = static_cast<std::int64_t>(n);
  if (n == 0) return r;
  std::int64_t within = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::abs(simulated[i] - measured[i]) <= 0.1 * std::abs(measured[i])) ++within;
  }
  r.within_10pct = static_cast<double>(within) / static_cast<double>(n);
  // O(n^2) over pairs: suites have hundreds of rows.
  double concordant = 0, discordant = 0, tied_measured = 0, tied_simulated = 0, ordered = 0;
  std::int64_t measured_pairs = 0, all_pairs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      ++all_pairs;
      const double dm = measured[j] - measured[i], ds = simulated[j] - simulated[i];
      if (dm == 0) ++tied_measured;
      if (ds == 0) ++tied_simulated;
      if (dm == 0 || ds == 0) {
        if (dm != 0) {
          ++measured_pairs;
          ordered += 0.5;
        }
        continue;
      }
      ++measured_pairs;
      if ((dm > 0) == (ds > 0)) {
        ++concordant;
        ordered += 1;
      } else {
        ++discordant;
      }
    }
  }
  const double n0 = static_cast<double>(all_pairs);
  const double denom = std::sqrt((n0 - tied_measured) * (n0 - tied_simulated));
  r.kendall_tau = denom > 0 ? (concordant - discordant) / denom : 0.0;
  r.pairs_ordered = measured_pairs > 0 ? ordered / static_cast<double>(measured_pairs) : 0.0;
  return r;
}

}  // namespace gpusim::validation
