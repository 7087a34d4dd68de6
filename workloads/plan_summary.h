// A few readable lines saying what a workload would run, for `gpusim run` before (and, for
// now, instead of) simulating it.
#pragma once

#include <string>

#include "workloads/workload.h"

namespace gpusim::workloads {

// Op workloads: one line per op. Model workloads: the phase and sizes, the architecture,
// the parameter count and the weight bytes at the workload's dtype. Ends with a newline.
std::string describe_workload(const Workload& workload);

}  // namespace gpusim::workloads
