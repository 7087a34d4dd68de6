// The GPU engine: runs a DAG of kernel launches on a modeled chip.
//
// The launch front end makes each kernel ready after its dependencies (and, in eager mode,
// after the host has issued it). A ready kernel pays the device's kernel overhead, then the
// dispatcher places its CTAs on SMs in hardware order (breadth-first over SMs, up to the
// occupancy limits), so waves, partial waves and tails emerge. Identical CTAs placed on one SM
// at one instant form a cohort that progresses as one: first its fixed latency, then its work
// at rates set by its share of the SM's pipes (tensor, FP32, SFU) and of the chip's L2 and
// DRAM bandwidth (sim/fair_share.h), recomputed whenever a cohort starts or finishes.
// L2 residency persists across kernels: a kernel reading what an earlier one left in L2 does
// not pay DRAM for those bytes. A kernel that runs alone (idle chip, nothing else pending) may
// be replayed from a cached outcome instead (hw/kernel_outcome_cache.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/engine_observer.h"
#include "hw/hardware_spec.h"
#include "hw/l2_charge.h"
#include "hw/launch.h"
#include "hw/occupancy.h"
#include "sim/time.h"

namespace gpusim::hw {

enum class LaunchMode {
  kGraph,  // replayed from a CUDA graph: kernels follow each other after launch.graph_gap
  kEager,  // launched one by one from the host: at most one per launch.eager_gap
};

struct KernelNode {
  Launch launch;
  std::string op;         // the framework-level op it belongs to, for reports
  int stream = 0;         // kernels of one stream run in order
  std::vector<int> deps;  // indices of earlier nodes it also waits for
  // Eager mode: host time between the previous launch's issue and this one's (the first: from
  // the start). Unset: launch.eager_gap (none before the first), as a loop of single ops.
  std::optional<sim::Time> host_gap;
  // Eager mode: the host waits for this kernel to finish before it goes on (.item(), .cpu()):
  // later launches are issued from its end.
  bool host_sync = false;
};

struct KernelResult {
  std::string name, op, family;
  sim::Time start, end;  // the profiler's span: from ready (dependencies met) to the drain
  double tensor_flops = 0, fp32_flops = 0, sfu_ops = 0;
  double l2_bytes = 0;
  double dram_read_bytes = 0;  // after L2 hits
  double dram_write_bytes = 0;
  double l2_read_hit_rate = 0;  // fraction of the kernel's input bytes found in L2
  int ctas_per_sm = 0;          // occupancy limit when alone on an SM
  double theoretical_occupancy = 0;
  double achieved_occupancy = 0;  // time-averaged resident warps / all warp slots
  // Nsight Compute's "Achieved Occupancy" (sm__warps_active.avg.pct_of_peak_sustained_active):
  // resident warps over the cycles each SM held at least one of the kernel's CTAs, as a share
  // of an SM's warp slots. Higher than achieved_occupancy when SMs sit idle.
  double achieved_occupancy_active = 0;
  double waves = 0;               // CTAs / (ctas_per_sm x SMs)
  double clock_hz = 0;            // SM clock at the kernel's start
  bool tensor_heavy = false;
  sim::Time duration() const { return end - start; }
};

struct EngineResult {
  std::vector<KernelResult> kernels;  // in node order
  sim::Time end;                      // when the last kernel finished
  std::uint64_t events = 0;
};

// The parts of a kernel's result that follow from its launch alone (name, family, totals,
// occupancy, waves, whether it is tensor-heavy); its op, span and what it met are the run's.
KernelResult launch_result(const HardwareSpec& hw, const Launch& launch, const Occupancy& occupancy);
// Resident warps averaged over a kernel's span, as a share of every warp slot of the chip.
double achieved_occupancy(const HardwareSpec& hw, double warp_seconds, sim::Time span);
// Resident warps over the SM-seconds during which SMs held the kernel's CTAs, as a share of an
// SM's warp slots (Nsight Compute's definition of achieved occupancy).
double achieved_occupancy_active(const HardwareSpec& hw, double warp_seconds, double active_sm_seconds);

class KernelOutcomeCache;
struct SoloOutcome;

// Runs the nodes (dependencies must point to earlier nodes) on an idle GPU whose L2 holds none of
// their tensors (as after a profiler's flush), with its dirty lines as `l2_start` says
// (hw/l2_dirty_lines.h). Throws ModelError for a launch the chip cannot run (a CTA that does not
// fit an SM, a tensor dtype without tensor cores). An observer, when given, hears of every CTA
// group and chip-state change; it does not change the result. A cache (made for this chip)
// replays kernels that run alone from outcomes simulated before, and records new ones; it does
// not change the result either (hw/kernel_outcome_cache.h).
// Eager mode: the host time before launch `index` is issued (after the previous one's issue):
// `gap` where the workload sets it (model code: workloads/host_issue.h), else launch.eager_gap
// (none before the first launch).
sim::Time eager_host_gap(const HardwareSpec& hw, const std::optional<sim::Time>& gap, std::int64_t index);

EngineResult run_engine(const HardwareSpec& hw, LaunchMode mode, const std::vector<KernelNode>& nodes,
                        EngineObserver* observer = nullptr, KernelOutcomeCache* cache = nullptr,
                        L2DirtyLines::Start l2_start = L2DirtyLines::Start::kDirty);

// What `launch` does alone on an idle chip when it pays `charge` for the L2 (the share of its
// input bytes that misses, the dirty lines it writes back), simulated CTA by CTA: the outcome a
// KernelOutcomeCache keeps. Throws ModelError as run_engine.
SoloOutcome simulate_solo(const HardwareSpec& hw, const Launch& launch, const L2Charge& charge);

}  // namespace gpusim::hw
