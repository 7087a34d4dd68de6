#include "sim/fair_share.h"

#include <stdexcept>


namespace gpusim::sim {

void fair_share_rates(const std::vector<ShareConsumer>& consumers,
                      const std::vector<double>& capacities, std::vector<double>& rate) {
  const std::size_t n = consumers.size(), m = capacities.size();
  if (m > kMaxSharedResources) throw std::invalid_argument("fair_share_rates: too many resources");
  rate.assign(n, -1.0);  // negative: not frozen yet
  std::array<double, kMaxSharedResources> used{};  // by frozen consumers
  for (std::size_t round = 0; round <= m; ++round) {
    // The scale at which each resource would fill, given the unfrozen consumers' demand.
    double best_scale = 1.0;
    std::size_t bottleneck = m;
    for (std::size_t r = 0; r < m; ++r) {
      double wanted = 0;
      for (std::size_t j = 0; j < n; ++j) {
        if (rate[j] < 0) wanted += consumers[j].multiplicity * consumers[j].uncontended_rate * consumers[j].demand[r];
      }
      if (wanted <= 0) continue;
      const double scale = std::max(0.0, capacities[r] - used[r]) / wanted;
      if (scale < best_scale) {
        best_scale = scale;
        bottleneck = r;
      }
    }
    // Freeze everyone on the bottleneck at that scale (or everyone, when nothing binds).
    bool any_unfrozen = false;
    for (std::size_t j = 0; j < n; ++j) {
      if (rate[j] >= 0) continue;
      if (bottleneck != m && consumers[j].demand[bottleneck] <= 0) {
        any_unfrozen = true;
        continue;
      }
      rate[j] = consumers[j].uncontended_rate * best_scale;
      for (std::size_t r = 0; r < m; ++r) {
        used[r] += consumers[j].multiplicity * rate[j] * consumers[j].demand[r];
      }
    }
    if (!any_unfrozen) break;
  }
}

std::vector<double> fair_share_rates(const std::vector<ShareConsumer>& consumers,
                                     const std::vector<double>& capacities) {
  std::vector<double> rates;
  fair_share_rates(consumers, capacities, rates);
  return rates;
}

}  // namespace gpusim::sim
