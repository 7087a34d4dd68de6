// The ncu suites: Nsight Compute metrics of the kernels single PyTorch ops launch
// (validation/measure/ncu_kernels.py -> validation/data/ncu_<gpu>.csv, one row per kernel)
// against hw::kernel_metrics of the same op simulated alone, as the measured suites simulate it
// (validation/measured_suite.h: same op lowering, graph mode, cold L2, one op per engine run).
//
// Kernels are matched by position in the op's launch sequence. Nsight Compute profiles kernels
// only, so the simulated cudaMemsetAsync launches (family "memset") are left out before
// matching; an op whose remaining simulated sequence differs in length from the measured one is
// skipped, and the skip says so.
//
// Each matched kernel gives one comparison per metric (the comparison's family):
//   achieved-occupancy     gpusim's achieved_occupancy (time-averaged resident warps over all
//                          warp slots of all SMs for the kernel's span) against Nsight's
//                          sm__warps_active.avg.per_cycle_elapsed / max warps per SM, the same
//                          definition. Points.
//   achieved-occupancy-active  gpusim's achieved_occupancy_active (resident warps over the SM
//                          cycles during which SMs held the kernel's CTAs) against Nsight's
//                          sm__warps_active.avg.pct_of_peak_sustained_active. Points.
//   theoretical-occ        theoretical occupancy against sm__maximum_warps_per_active_cycle_pct. Points.
//   dram-throughput        DRAM bytes / duration / datasheet peak against
//                          dram__throughput.avg.pct_of_peak_sustained_elapsed. Points.
//   l2-hit-rate            1 - DRAM bytes / L2 request bytes against lts__t_sector_hit_rate.pct
//                          (which counts write sectors as hits); the measured counters in
//                          gpusim's form, 1 - DRAM bytes / SM-to-L2 bytes, are in the label. Points.
//   duration               kernel duration against gpu__time_duration.sum. Relative.
//   sm-throughput          gpusim's sm_throughput_pct (busiest of the tensor, FP32 and SFU pipes
//                          and instruction issue) against
//                          sm__throughput.avg.pct_of_peak_sustained_elapsed, the busiest of many
//                          more sub-units. Points.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/kernel_metrics.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// One profiled kernel (a row of ncu_<gpu>.csv), in the units gpusim reports.
struct NcuKernel {
  int kernel_index = 0;  // position in the op's launch sequence (kernels only)
  std::string name;      // demangled, as Nsight Compute prints it
  std::string grid, block;
  double duration_us = 0;                  // gpu__time_duration.sum
  double occupancy_pct = 0;                // warps per elapsed cycle / max warps per SM x 100
  double occupancy_active_pct = 0;         // Nsight's Achieved Occupancy (active cycles)
  double theoretical_occupancy_pct = 0;    // sm__maximum_warps_per_active_cycle_pct
  double dram_throughput_pct = 0;          // dram__throughput.avg.pct_of_peak_sustained_elapsed
  double dram_bytes = 0;                   // dram__bytes_read.sum + dram__bytes_write.sum
  double l2_hit_rate_pct = 0;              // lts__t_sector_hit_rate.pct
  double l2_bytes = 0;                     // lts__t_bytes.sum (all L2 traffic, fabric included)
  double l2_sm_bytes = 0;                  // lts__t_sectors_srcunit_tex.sum x 32 (from the SMs)
  double sm_throughput_pct = 0;            // sm__throughput.avg.pct_of_peak_sustained_elapsed
  double clock_mhz = 0;                    // sm__cycles_elapsed.avg.per_second
};

struct NcuOp {
  MeasuredOp op;  // label, family, split, op; measured_us = the op's summed kernel durations
  std::vector<NcuKernel> kernels;
};

// Reads ncu_<gpu>.csv: ops as read_measured_ops reads them (the file carries its columns), each
// with its kernels in launch order. `max_warps_per_sm` turns warps per cycle into occupancy.
// ConfigError on a malformed file or kernel indices that are not 0, 1, 2, ... per op.
std::vector<NcuOp> read_ncu_ops(const std::filesystem::path& csv, int max_warps_per_sm);

// A measured kernel and the simulated one it is matched with.
struct NcuKernelPair {
  std::string op_label;
  bool held_out = false;
  NcuKernel measured;
  std::string simulated_name;
  hw::KernelMetrics simulated;
};

struct NcuSuiteResult {
  std::vector<Comparison> rows;       // per matched kernel, one per metric family above
  std::vector<NcuKernelPair> pairs;   // the matched kernels
  std::vector<std::string> skipped;   // "<op label>: <reason>", one per op not compared
};

// The metric families, in the order each kernel's comparisons are listed.
const std::vector<std::string>& ncu_metric_families();

// Simulates every modeled op alone (graph mode, cold L2), matches kernels by position and
// compares each metric.
NcuSuiteResult compare_ncu(const std::vector<NcuOp>& ops, const hw::HardwareSpec& hw,
                           const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
