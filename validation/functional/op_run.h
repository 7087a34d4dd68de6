// The result of running one op functionally: its output and the launches it took, each with
// its per-CTA counts, in launch order.
#pragma once

#include <vector>

#include "validation/functional/counters.h"
#include "validation/functional/tensor.h"

namespace gpusim::functional {

struct OpRun {
  Tensor out;
  std::vector<KernelCounts> kernels;

  CtaCount total() const {
    CtaCount t;
    for (const auto& k : kernels) t += k.total();
    return t;
  }
};

}  // namespace gpusim::functional
