// An engine observer that keeps a run's timeline: the chip's DRAM traffic and resident warps
// over time (counter tracks) and, when asked, every group of CTAs on every SM (CTA spans).
// Consecutive samples with equal values are merged, so the counters stay small.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/engine_observer.h"

namespace gpusim::hw {

struct CtaSpan {
  int kernel = 0;  // node index
  int sm = 0;
  int count = 0;   // CTAs of the kernel resident together on that SM
  sim::Time start, end;
};

struct ChipSample {
  sim::Time at;
  double dram_bytes_per_s = 0;
  std::int64_t resident_warps = 0;
};

struct Timeline {
  std::vector<ChipSample> samples;  // in time order
  std::vector<CtaSpan> ctas;        // in completion order; empty unless CTA spans were recorded
};

class TimelineRecorder final : public EngineObserver {
 public:
  explicit TimelineRecorder(bool record_ctas) : record_ctas_(record_ctas) {}
  void on_ctas(int kernel, int sm, int count, sim::Time start, sim::Time end) override;
  void on_chip_state(sim::Time at, double dram_bytes_per_s, std::int64_t resident_warps) override;
  Timeline take() { return std::move(timeline_); }

 private:
  bool record_ctas_;
  Timeline timeline_;
};

}  // namespace gpusim::hw
