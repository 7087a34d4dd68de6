// What a kernel pays for the L2 state it meets: the share of its reads that miss (the tensors
// resident, hw/l2_residency.h) and the dirty lines written back while it runs
// (hw/l2_dirty_lines.h). The engine and the serial chain compute it as a kernel starts; the kernel
// outcome cache keys on it.
#pragma once

#include "hw/l2_dirty_lines.h"

namespace gpusim::hw {

struct Launch;

// What a kernel's CTAs pay for the L2 state they meet (part of the kernel outcome cache's key):
// the share of their read bytes that goes to DRAM, the dirty bytes written back per byte they
// load from DRAM (lines their loads evict), and the share of their stores that costs a DRAM write
// (those past the L2's dirty limit; 1 without a limit: write-through).
struct L2Charge {
  double read_miss = 1;
  double evicted_per_load = 0;
  double store_cost = 1;
  bool operator==(const L2Charge&) const = default;
};
// The charge on `launch` when `read_miss` of its reads miss, from its CTAs' DRAM reads and
// stores; moves `dirty` on.
L2Charge l2_charge(const Launch& launch, double read_miss, L2DirtyLines& dirty);

}  // namespace gpusim::hw
