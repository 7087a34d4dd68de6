#include "hw/launch.h"

namespace gpusim::hw {

LaunchTotals& LaunchTotals::operator+=(const LaunchTotals& o) {
  tensor_flops += o.tensor_flops;
  fp32_flops += o.fp32_flops;
  sfu_ops += o.sfu_ops;
  l2_bytes += o.l2_bytes;
  dram_read_bytes += o.dram_read_bytes;
  dram_write_bytes += o.dram_write_bytes;
  link_bytes += o.link_bytes;
  network_bytes += o.network_bytes;
  return *this;
}

LaunchTotals totals(const Launch& l) {
  LaunchTotals t;
  for (const auto& c : l.ctas) {
    const double n = static_cast<double>(c.count);
    t.tensor_flops += n * c.work.tensor_flops;
    t.fp32_flops += n * c.work.fp32_flops;
    t.sfu_ops += n * c.work.sfu_ops;
    t.l2_bytes += n * c.work.l2_bytes;
    t.dram_read_bytes += n * c.work.dram_read_bytes;
    t.dram_write_bytes += n * c.work.dram_write_bytes;
    t.link_bytes += n * c.work.link_bytes;
    t.network_bytes += n * c.work.network_bytes;
  }
  return t;
}

LaunchTotals totals(const std::vector<Launch>& ls) {
  LaunchTotals t;
  for (const auto& l : ls) t += totals(l);
  return t;
}

}  // namespace gpusim::hw
