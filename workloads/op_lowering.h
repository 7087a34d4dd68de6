// An op-level workload as the engine's input: each op lowered by its kernel cost model to the
// launches the real library makes, all on one stream in file order (as a PyTorch program
// issues them). Tensors are tagged per op ("op3.A"), so ops do not share data through L2:
// each op starts cold, as a profiler that flushes L2 between measurements sees it.
#pragma once

#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "workloads/workload.h"

namespace gpusim::workloads {

// An op whose kernels would take the simulated time past the engine's clock (sim::Time) is a
// ConfigError naming `file`, its line and ops[i]; a collective whose `gpus` the system cannot
// hold (a chip without an interconnect, fewer GPUs) one naming ops[i].gpus.
std::vector<hw::KernelNode> lower_ops(const OpWorkload& workload, const hw::HardwareSpec& hw,
                                      const models::KernelModelRegistry& models, const std::string& file);

}  // namespace gpusim::workloads
