#include "hw/l2_charge.h"

#include "hw/launch.h"

namespace gpusim::hw {

L2Charge l2_charge(const Launch& launch, double read_miss, L2DirtyLines& dirty) {
  double loads = 0, stores = 0;
  for (const CtaClass& c : launch.ctas) {
    loads += static_cast<double>(c.count) * c.work.dram_read_bytes * read_miss;
    stores += static_cast<double>(c.count) * c.work.dram_write_bytes;
  }
  const L2DirtyLines::WriteBacks wb = dirty.bring_in(loads, stores);
  return {read_miss, loads > 0 ? wb.evicted / loads : 0.0, stores > 0 ? wb.overflow / stores : 1.0};
}

}  // namespace gpusim::hw
