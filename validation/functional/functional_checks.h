// Functional checks for `gpusim validate`: a representative set of functional kernels run on
// awkward sizes, each compared with its double reference (numerics) and with the FLOPs and
// bytes the cost model charges for the same problem on the given chip (h100 expected).
#pragma once

#include <string>
#include <vector>

#include "hw/hardware_spec.h"

namespace gpusim::functional {

struct FunctionalCheck {
  std::string name;                 // "gemm 77x130x301 bf16", ...
  double relative_error = 0;        // ||out - ref|| / ||ref||
  double error_bound = 0;           // the bound relative_error must stay under
  double flops_functional = 0;      // what the decomposition executes (see note)
  double flops_model = 0;           // what the cost model charges for it
  double bytes_functional = 0;      // unique bytes read + bytes written, all launches
  double bytes_model = 0;           // DRAM read + write bytes the model charges, all launches
  bool passed = false;
  std::string note;                 // which quantities must agree, and any documented gap
};

// Runs every check (well under a second in an optimized build).
std::vector<FunctionalCheck> run_functional_checks(const hw::HardwareSpec& h100);

}  // namespace gpusim::functional
