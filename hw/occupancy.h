// How many CTAs of one kernel fit on an SM at once, by the CUDA occupancy rules: warp slots,
// registers (allocated per warp in units, split over the sub-partitions), shared memory
// (allocation granularity plus the driver's per-CTA reservation) and CTA slots.
// The `gpusim occupancy` command and the simulator's SM model both use this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"

namespace gpusim::hw {

struct BlockResources {
  int threads = 0;
  int registers_per_thread = 0;
  std::int64_t shared_memory = 0;  // static + dynamic bytes per CTA, without the reservation
};

enum class OccupancyLimiter { kWarps, kRegisters, kSharedMemory, kCtaSlots };
std::string_view name(OccupancyLimiter l);  // "warps", "registers", "shared memory", "CTA slots"

struct Occupancy {
  // Why the block cannot run at all (too many threads, registers or shared memory); empty
  // when it can. When set, ctas_per_sm is 0.
  std::string does_not_fit;

  int warps_per_cta = 0;
  int registers_per_warp = 0;              // allocated, after rounding to the unit
  std::int64_t shared_memory_per_cta = 0;  // allocated, reservation and rounding included

  // CTAs per SM each resource alone would allow.
  int limit_warps = 0;
  int limit_registers = 0;  // INT_MAX-like large when the block uses no registers
  int limit_shared_memory = 0;
  int limit_cta_slots = 0;

  int ctas_per_sm = 0;
  int warps_per_sm = 0;
  double theoretical = 0;  // resident warps / maximum warps, 0..1
  std::vector<OccupancyLimiter> binding;  // every limit equal to ctas_per_sm
};

Occupancy compute_occupancy(const SmSpec& sm, const BlockResources& block);

}  // namespace gpusim::hw
