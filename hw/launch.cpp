#include "hw/launch.h"

namespace gpusim::hw {
namespace {

template <class F>
double sum_over_ctas(const Launch& launch, F per_cta) {
  double total = 0;
  for (const auto& c : launch.ctas) total += static_cast<double>(c.count) * per_cta(c.work);
  return total;
}

}  // namespace

double Launch::total_flops() const {
  return sum_over_ctas(*this, [](const CtaWork& w) { return w.tensor_flops + w.fp32_flops; });
}

double Launch::total_l2_bytes() const {
  return sum_over_ctas(*this, [](const CtaWork& w) { return w.l2_bytes; });
}

double Launch::total_dram_bytes() const {
  return sum_over_ctas(*this,
                       [](const CtaWork& w) { return w.dram_read_bytes + w.dram_write_bytes; });
}

}  // namespace gpusim::hw
