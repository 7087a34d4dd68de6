// Host time of a model's eager step: before each launch of a forward the host runs Python model
// code, the dispatcher and the allocator (hw.host.model_kernel_issue per launch), and before the
// first one the forward's own preparation (hw.host.forward_fixed: inputs, masks, cache
// bookkeeping); a training step's backward and optimizer launches cost their own. The GPU runs ahead of the host as far as the kernels let it; graph mode ignores
// these gaps. Calibrated per host (configs/hosts/, validation/measure/fit_host.py).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "hw/hardware_spec.h"
#include "workloads/kernel_dag.h"

namespace gpusim::workloads {

// Sets the host gap of every vertex of one step's DAG. A training step's phases (`phase_starts`:
// name and first vertex) differ: a forward runs model code (forward_fixed, then
// model_kernel_issue a kernel), the backward autograd's engine (backward_kernel_issue), the
// optimizer torch.optim's step (optimizer_kernel_issue); a serving engine's batch preparation
// ("engine_prepare") costs nothing here (the engine's own host time per request counts it).
// Without phases, the whole DAG is one forward.
void set_model_host_issue(KernelDag& dag, const hw::HardwareSpec& hw,
                          const std::vector<std::pair<std::string, std::size_t>>& phase_starts = {});

}  // namespace gpusim::workloads
