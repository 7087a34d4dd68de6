#include "validation/functional/model_totals.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace gpusim::functional {

ModelTotals& ModelTotals::operator+=(const ModelTotals& o) {
  tensor_flops += o.tensor_flops;
  fp32_flops += o.fp32_flops;
  l2_bytes += o.l2_bytes;
  dram_read_bytes += o.dram_read_bytes;
  dram_write_bytes += o.dram_write_bytes;
  return *this;
}

ModelTotals model_totals(const hw::Launch& l) {
  ModelTotals t;
  for (const auto& c : l.ctas) {
    const double n = static_cast<double>(c.count);
    t.tensor_flops += n * c.work.tensor_flops;
    t.fp32_flops += n * c.work.fp32_flops;
    t.l2_bytes += n * c.work.l2_bytes;
    t.dram_read_bytes += n * c.work.dram_read_bytes;
    t.dram_write_bytes += n * c.work.dram_write_bytes;
  }
  return t;
}

ModelTotals model_totals(const std::vector<hw::Launch>& ls) {
  ModelTotals t;
  for (const auto& l : ls) t += model_totals(l);
  return t;
}

std::vector<hw::CtaWork> model_ctas(const hw::Launch& l) {
  std::vector<hw::CtaWork> out;
  for (const auto& c : l.ctas) out.insert(out.end(), static_cast<std::size_t>(c.count), c.work);
  return out;
}

const hw::Launch& launch_of(const std::vector<hw::Launch>& ls, std::string_view family) {
  for (const auto& l : ls) {
    if (l.family == family) return l;
  }
  throw std::out_of_range("no launch of family " + std::string(family));
}

bool same_total(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

}  // namespace gpusim::functional
