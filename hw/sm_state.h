// What is resident on one SM: warps, CTA slots, shared memory and registers per
// sub-partition. Placing CTAs of several kernels follows the same allocation rules as
// hw/occupancy.h, so one kernel alone fills an SM exactly as the occupancy calculator says.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/occupancy.h"

namespace gpusim::hw {

// One CTA's allocation, from the occupancy rules.
struct CtaFootprint {
  int warps = 0;
  int registers_per_warp = 0;
  std::int64_t shared_memory = 0;  // allocated, reservation and rounding included
};
CtaFootprint footprint_of(const Occupancy& occupancy);

class SmState {
 public:
  explicit SmState(const SmSpec& spec);

  // How many more CTAs of this footprint fit now (at most `limit`).
  int capacity(const CtaFootprint& cta, int limit) const;
  // Places `count` CTAs (which must fit); adds the registers they took from each sub-partition
  // to `registers_taken` (sized to the sub-partitions), to give back on release.
  void place(const CtaFootprint& cta, int count, std::vector<int>& registers_taken);
  void release(const CtaFootprint& cta, int count, const std::vector<int>& registers_taken);

  int warps() const { return warps_; }
  int ctas() const { return ctas_; }

 private:
  const SmSpec* spec_;
  int warps_ = 0;
  int ctas_ = 0;
  std::int64_t shared_memory_ = 0;
  std::vector<int> registers_;  // used, per sub-partition
};

}  // namespace gpusim::hw
