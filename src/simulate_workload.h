// One workload on one chip, simulated and summarized: the step every command that reports runs
// (run, sweep). Op workloads run as one engine DAG; model workloads step by step.
#pragma once

#include <string>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "src/run_report.h"
#include "workloads/model_run.h"
#include "workloads/workload.h"

namespace gpusim::cli {

// `workload_file` names the workload in errors (a dtype the chip has no tensor cores for).
RunReport simulate_workload(const hw::HardwareSpec& hw, const workloads::Workload& workload,
                            const std::string& workload_file, hw::LaunchMode mode,
                            const models::KernelModelRegistry& models,
                            const workloads::SimulateOptions& options = {});

}  // namespace gpusim::cli
