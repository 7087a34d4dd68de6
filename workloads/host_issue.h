// Host time of a model's eager forward: before each launch the host runs Python model code,
// the dispatcher and the allocator (hw.host.model_kernel_issue per launch), and before the
// first one the forward's own preparation (hw.host.forward_fixed: inputs, masks, cache
// bookkeeping). The GPU runs ahead of the host as far as the kernels let it; graph mode ignores
// these gaps. Calibrated per host (configs/hosts/, validation/measure/fit_host.py).
#pragma once

#include "hw/hardware_spec.h"
#include "workloads/kernel_dag.h"

namespace gpusim::workloads {

// Sets the host gap of every vertex of one forward step's DAG.
void set_model_host_issue(KernelDag& dag, const hw::HardwareSpec& hw);

}  // namespace gpusim::workloads
