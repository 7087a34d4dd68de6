// Dividing shared bandwidths among consumers that run at the same time (a fluid model).
//
// Each consumer would progress at `uncontended_rate` (units of its own work per second) if it
// had every resource to itself, and per unit of progress it uses `demand[r]` of resource r.
// `multiplicity` identical consumers share one entry. Rates follow weighted max-min fairness
// by progressive filling: all consumers slow down in proportion to their uncontended rates
// until some resource is full; those using it are frozen there, and the rest continue. So a
// consumer limited by one resource leaves the others to whoever can use them.
#pragma once

#include <array>
#include <vector>

namespace gpusim::sim {

// Resources shared at once (fixed, so solving allocates nothing per consumer).
constexpr std::size_t kMaxSharedResources = 5;

struct ShareConsumer {
  double uncontended_rate = 0;  // progress per second when alone
  double multiplicity = 1;      // identical consumers represented by this entry
  std::array<double, kMaxSharedResources> demand{};  // per resource, per unit of progress
};

// Returns each consumer's rate (<= its uncontended rate) into `rates`; capacities are per
// resource (at most kMaxSharedResources).
void fair_share_rates(const std::vector<ShareConsumer>& consumers,
                      const std::vector<double>& capacities, std::vector<double>& rates);
std::vector<double> fair_share_rates(const std::vector<ShareConsumer>& consumers,
                                     const std::vector<double>& capacities);

}  // namespace gpusim::sim
