#include "src/simulate_workload.h"

#include <fmt/format.h>

#include "sim/error.h"
#include "sim/time_checks.h"
#include "workloads/op_lowering.h"
#include "workloads/plan_summary.h"

namespace gpusim::cli {
namespace {

// A dtype the chip has no tensor-core rate for (fp8 before Hopper/Ada) is bad input.
void check_model_dtype(const workloads::ModelWorkload& w, const hw::HardwareSpec& s,
                       const std::string& file) {
  const bool tensor_only = w.dtype == hw::DType::kFp8 || w.dtype == hw::DType::kTf32;
  if (tensor_only && s.tensor_flops_per_cycle(w.dtype) <= 0) {
    throw ConfigError(file, 0, "dtype",
                      fmt::format("{} has no {} tensor cores (hardware key throughput.tensor_{} is 0)",
                                  s.name, hw::name(w.dtype), hw::name(w.dtype)));
  }
  // Mixed precision runs the matmuls in the autocast type: a chip with only fp32 paths can't.
  if (w.autocast && s.tensor_flops_per_cycle(*w.autocast) <= 0) {
    throw ConfigError(file, 0, "autocast",
                      fmt::format("{} has no {} tensor cores (hardware key throughput.tensor_{} is 0): autocast "
                                  "would have no {} matmul to run; train in fp32 (remove autocast)",
                                  s.name, hw::name(*w.autocast), hw::name(*w.autocast), hw::name(*w.autocast)));
  }
}

RunReport simulate(const hw::HardwareSpec& hw, const workloads::Workload& workload, const std::string& workload_file,
                   hw::LaunchMode mode, const models::KernelModelRegistry& models,
                   const workloads::SimulateOptions& options) {
  if (const auto* ops = std::get_if<workloads::OpWorkload>(&workload)) {
    const auto nodes = workloads::lower_ops(*ops, hw, models, workload_file);
    hw::TimelineRecorder recorder(options.record_ctas);
    std::optional<hw::KernelOutcomeCache> own;
    hw::KernelOutcomeCache* cache = workloads::outcome_cache(options, hw, own);
    const hw::EngineResult result =
        hw::run_engine(hw, mode, nodes, options.record_timeline ? &recorder : nullptr, cache);
    return make_report(hw, ops->name, mode, nodes, result,
                       options.record_timeline ? std::optional(recorder.take()) : std::nullopt);
  }
  const auto& model = std::get<workloads::ModelWorkload>(workload);
  check_model_dtype(model, hw, workload_file);
  workloads::check_parallel_system(model, hw);
  RunReport report = make_model_report(hw, model, mode, workloads::simulate_model(model, hw, mode, models, options));
  report.description = workloads::describe_workload(workload);
  report.dtype = hw::name(model.dtype);
  report.dtype_default = model.dtype_default;
  return report;
}

}  // namespace

RunReport simulate_workload(const hw::HardwareSpec& hw, const workloads::Workload& workload,
                            const std::string& workload_file, hw::LaunchMode mode,
                            const models::KernelModelRegistry& models,
                            const workloads::SimulateOptions& options) {
  try {
    return simulate(hw, workload, workload_file, mode, models, options);
  } catch (const sim::ClockOverflow& e) {
    // What lowering could not foresee (a model workload's steps, latencies): the engine's clock.
    throw ConfigError(workload_file, 0, "", e.what());
  }
}

}  // namespace gpusim::cli
