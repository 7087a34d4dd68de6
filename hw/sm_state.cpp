#include "hw/sm_state.h"

#include <algorithm>

namespace gpusim::hw {

CtaFootprint footprint_of(const Occupancy& o) {
  return CtaFootprint{o.warps_per_cta, o.registers_per_warp, o.shared_memory_per_cta};
}

SmState::SmState(const SmSpec& spec) : spec_(&spec), registers_(spec.sub_partitions, 0) {}

std::vector<int> SmState::warp_targets(const CtaFootprint& cta) const {
  // Warps are dealt one at a time to the sub-partition with the most free registers.
  std::vector<int> load = registers_;
  std::vector<int> targets;
  targets.reserve(cta.warps);
  for (int w = 0; w < cta.warps; ++w) {
    const auto it = std::min_element(load.begin(), load.end());
    targets.push_back(static_cast<int>(it - load.begin()));
    *it += cta.registers_per_warp;
  }
  return targets;
}

bool SmState::fits(const CtaFootprint& cta) const {
  if (warps_ + cta.warps > spec_->max_warps) return false;
  if (ctas_ + 1 > spec_->max_ctas) return false;
  if (shared_memory_ + cta.shared_memory > spec_->shared_memory) return false;
  const int per_sub_partition = spec_->registers / spec_->sub_partitions;
  std::vector<int> after = registers_;
  for (const int sp : warp_targets(cta)) after[sp] += cta.registers_per_warp;
  return std::all_of(after.begin(), after.end(), [&](int r) { return r <= per_sub_partition; });
}

std::vector<int> SmState::place(const CtaFootprint& cta) {
  std::vector<int> taken(registers_.size(), 0);
  for (const int sp : warp_targets(cta)) taken[sp] += cta.registers_per_warp;
  for (std::size_t i = 0; i < taken.size(); ++i) registers_[i] += taken[i];
  warps_ += cta.warps;
  ctas_ += 1;
  shared_memory_ += cta.shared_memory;
  return taken;
}

void SmState::release(const CtaFootprint& cta, int count, const std::vector<int>& taken) {
  for (std::size_t i = 0; i < taken.size(); ++i) registers_[i] -= taken[i];
  warps_ -= cta.warps * count;
  ctas_ -= count;
  shared_memory_ -= cta.shared_memory * count;
}

}  // namespace gpusim::hw
