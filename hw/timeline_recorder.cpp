#include "hw/timeline_recorder.h"

namespace gpusim::hw {

void TimelineRecorder::on_ctas(int kernel, int sm, int count, sim::Time start, sim::Time end) {
  if (record_ctas_) timeline_.ctas.push_back({kernel, sm, count, start, end});
}

void TimelineRecorder::on_chip_state(sim::Time at, double dram_bytes_per_s, std::int64_t resident_warps) {
  auto& s = timeline_.samples;
  if (!s.empty() && s.back().dram_bytes_per_s == dram_bytes_per_s &&
      s.back().resident_warps == resident_warps) {
    return;  // nothing changed
  }
  if (!s.empty() && s.back().at == at) {
    s.back() = {at, dram_bytes_per_s, resident_warps};  // superseded at the same instant
    return;
  }
  s.push_back({at, dram_bytes_per_s, resident_warps});
}

}  // namespace gpusim::hw
