// The measured suites: kernel times of framework-level ops measured on a real GPU
// (validation/measure/op_kernels.py -> validation/data/ops_<gpu>.csv), each op simulated alone
// from a cold L2 and compared on the sum of its kernels' durations (kernel_time_us).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "models/op.h"

namespace gpusim::validation {

// One kernel of an op as measured or simulated: its name, launch shape ("132x1x1", empty where the
// file does not say) and duration (0 where the file gives only the op's total).
struct KernelLaunchRecord {
  std::string name, grid, block;
  double us = 0;
};

struct MeasuredOp {
  std::string label;   // "matmul bf16 M=2048 N=2048 K=2048"
  std::string family;  // for per-family error: matmul, linear, sdpa, elementwise, ...
  bool held_out = false;
  double measured_us = 0;  // median over repetitions of the op's summed kernel durations
  std::vector<std::string> measured_kernels;
  std::vector<KernelLaunchRecord> measured_launches;  // the same kernels with launch and duration
  // The longest of them (median duration) that is not a helper (validation/kernel_class.h), where
  // the file gives each kernel's duration.
  std::string primary_kernel;
  std::optional<models::Op> op;  // empty: a variant gpusim does not model (see skip_reason)
  std::string skip_reason;
};

// Groups the per-kernel rows of ops_<gpu>.csv into ops. ConfigError on a malformed file.
std::vector<MeasuredOp> read_measured_ops(const std::filesystem::path& csv);

// How a comparison's error is expressed.
enum class ErrorKind {
  kRelative,  // (simulated - measured) / measured x 100, printed with "%"
  kPoints,    // simulated - measured, both percentages: percentage points, printed with " pt"
};

struct Comparison {
  MeasuredOp reference;
  double simulated_us = 0;
  std::vector<std::string> simulated_kernels;
  std::vector<KernelLaunchRecord> simulated_launches;  // measured suites: the same with launches
  // The family and duration of the op's longest simulated kernel (validation/error_bands.h).
  std::string main_family, main_kernel;
  double main_kernel_us = 0;
  // The longest simulated kernel that is not a helper (validation/kernel_class.h), for the
  // kernel-choice comparison with MeasuredOp::primary_kernel.
  std::string primary_kernel;
  double error_pct = 0;  // (simulated - measured) / measured x 100; see error_kind
  ErrorKind error_kind = ErrorKind::kRelative;
};

// The unit an error of this kind is printed with: "%" or " pt".
inline const char* error_unit(ErrorKind k) { return k == ErrorKind::kPoints ? " pt" : "%"; }

// Simulates every modeled op alone (graph mode, cold L2) and compares.
std::vector<Comparison> compare_measured(const std::vector<MeasuredOp>& ops,
                                         const hw::HardwareSpec& hw,
                                         const models::KernelModelRegistry& models);

// Mean absolute percentage error of the comparisons that pass `keep` (mean absolute error in
// points for kPoints rows: callers keep rows of one kind together).
template <class Pred>
double mape(const std::vector<Comparison>& rows, Pred keep) {
  double sum = 0;
  int n = 0;
  for (const auto& r : rows) {
    if (!keep(r)) continue;
    sum += r.error_pct < 0 ? -r.error_pct : r.error_pct;
    ++n;
  }
  return n > 0 ? sum / n : 0.0;
}

}  // namespace gpusim::validation
