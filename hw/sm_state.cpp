#include "hw/sm_state.h"

#include <algorithm>

namespace gpusim::hw {
namespace {

// Deals `warps` warps of `per_warp` registers one at a time to the sub-partition with the most
// free registers (the least used), recording what each took. The caller has checked they fit.
void deal(std::vector<int>& used, int warps, int per_warp, std::vector<int>& taken) {
  for (int w = 0; w < warps; ++w) {
    const auto it = std::min_element(used.begin(), used.end());
    *it += per_warp;
    taken[it - used.begin()] += per_warp;
  }
}

}  // namespace

CtaFootprint footprint_of(const Occupancy& o) {
  return CtaFootprint{o.warps_per_cta, o.registers_per_warp, o.shared_memory_per_cta};
}

SmState::SmState(const SmSpec& spec) : spec_(&spec), registers_(spec.sub_partitions, 0) {}

int SmState::capacity(const CtaFootprint& cta, int limit) const {
  int n = std::min(limit, spec_->max_ctas - ctas_);
  if (cta.warps > 0) n = std::min(n, (spec_->max_warps - warps_) / cta.warps);
  if (cta.shared_memory > 0) {
    n = std::min<std::int64_t>(n, (spec_->shared_memory - shared_memory_) / cta.shared_memory);
  }
  if (n <= 0) return 0;
  if (cta.registers_per_warp == 0 || cta.warps == 0) return n;
  // Dealing warps to the least-used sub-partition places one as long as any sub-partition has
  // room for it, so the SM takes as many more warps as its sub-partitions' free warp slots.
  const int per_sub_partition = spec_->registers / spec_->sub_partitions;
  int warp_slots = 0;
  for (const int used : registers_) warp_slots += (per_sub_partition - used) / cta.registers_per_warp;
  return std::min(n, warp_slots / cta.warps);
}

void SmState::place(const CtaFootprint& cta, int count, std::vector<int>& registers_taken) {
  const int warps = cta.warps * count;
  const int parts = spec_->sub_partitions;
  if (std::all_of(registers_.begin(), registers_.end(), [&](int r) { return r == registers_[0]; })) {
    // Equal loads: dealing to the least used (lowest index first) goes round-robin from 0.
    for (int i = 0; i < parts; ++i) {
      const int got = (warps / parts + (i < warps % parts ? 1 : 0)) * cta.registers_per_warp;
      registers_[i] += got;
      registers_taken[i] += got;
    }
  } else {
    for (int i = 0; i < count; ++i) deal(registers_, cta.warps, cta.registers_per_warp, registers_taken);
  }
  warps_ += cta.warps * count;
  ctas_ += count;
  shared_memory_ += cta.shared_memory * count;
}

void SmState::release(const CtaFootprint& cta, int count, const std::vector<int>& taken) {
  for (std::size_t i = 0; i < taken.size(); ++i) registers_[i] -= taken[i];
  warps_ -= cta.warps * count;
  ctas_ -= count;
  shared_memory_ -= cta.shared_memory * count;
}

}  // namespace gpusim::hw
