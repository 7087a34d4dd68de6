// The cost model's side of the comparison: each CTA's work in dispatch order (a launch's
// totals are hw::totals).
#pragma once

#include <string_view>
#include <vector>

#include "hw/launch.h"

namespace gpusim::functional {

// Each CTA's work, the classes expanded in order (grid.count() entries).
std::vector<hw::CtaWork> model_ctas(const hw::Launch& l);

// The launch of `family` in `ls`; throws std::out_of_range when there is none.
const hw::Launch& launch_of(const std::vector<hw::Launch>& ls, std::string_view family);

// a == b up to the rounding of the model's even spreads: the models divide a total by a CTA
// count and multiply it back, in double (relative 1e-12).
bool same_total(double a, double b);

}  // namespace gpusim::functional
