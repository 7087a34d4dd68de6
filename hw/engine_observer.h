// Observers of the GPU engine: trace and statistics sinks subscribe to what the engine does,
// so the engine never writes files and reports never reach into its state.
#pragma once

#include <cstdint>

#include "sim/time.h"

namespace gpusim::hw {

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // `count` CTAs of kernel `kernel` (its node index) were resident on SM `sm` from `start`
  // (placement) to `end` (completion). Called when they complete.
  virtual void on_ctas(int kernel, int sm, int count, sim::Time start, sim::Time end) = 0;
  // From `at` until the next call: the DRAM traffic moving (bytes per second, reads after L2
  // hits plus writes) and the warps resident on all SMs. Called whenever either may change.
  virtual void on_chip_state(sim::Time at, double dram_bytes_per_s, std::int64_t resident_warps) = 0;
};

}  // namespace gpusim::hw
