#include "validation/functional/model_totals.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace gpusim::functional {

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
