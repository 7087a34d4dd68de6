// Kernels on one stream, run one after another: the engine's answer without its event loop.
//
// When each kernel of a program waits for the one before (one stream, as eager PyTorch and a
// replayed CUDA graph run a forward step), every kernel becomes ready on an idle chip with
// nothing else pending and runs alone. run_engine would then make kernel j ready at
// max(end of j - 1 + graph gap, host issue time j x eager gap), find its inputs in L2, and run
// it for its solo outcome (hw/kernel_outcome_cache.h); this does exactly that, fold by fold,
// with tensors as integer ids, and keeps totals (and, when asked, each kernel's result). Outcomes not yet known are simulated
// CTA by CTA (simulate_solo) and go to the cache. Tests hold it to run_engine's totals.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <span>
#include <unordered_map>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "hw/kernel_outcome_cache.h"
#include "hw/l2_charge.h"
#include "hw/l2_residency.h"
#include "hw/launch.h"
#include "sim/time.h"

namespace gpusim::hw {

// A tensor a kernel reads or writes, by id (see TensorUse).
struct TensorAccess {
  std::int32_t tensor = 0;
  std::int64_t bytes = 0;
  bool evict_first = false;
};

class SerialChain {
 public:
  SerialChain(const HardwareSpec& hw, LaunchMode mode, KernelOutcomeCache& cache);

  // Runs the stream's next kernel: `launch` with its tensors as ids. A launch passed again (the
  // same object, as a layer's kernels repeat) must be unchanged: its outcomes are remembered by
  // address for the chain's lifetime. `host_gap`: the host time before its launch is issued;
  // `host_sync`: the host then waits for it to end (eager mode; KernelNode's fields).
  void run(const Launch& launch, std::span<const TensorAccess> reads, std::span<const TensorAccess> writes,
           std::optional<sim::Time> host_gap = std::nullopt, bool host_sync = false);
  // The same, returning the kernel's result as run_engine reports it, with `op` as its op.
  KernelResult run_listed(const Launch& launch, std::span<const TensorAccess> reads,
                          std::span<const TensorAccess> writes, const std::string& op,
                          std::optional<sim::Time> host_gap = std::nullopt, bool host_sync = false);

  std::int64_t kernels() const { return kernels_; }
  sim::Time end() const { return end_; }                // when the last kernel finished
  std::uint64_t events() const { return events_; }      // as run_engine counts them
  double kernel_time_us() const { return kernel_time_us_; }  // sum of kernel spans, in order

 private:
  const HardwareSpec& hw_;
  LaunchMode mode_;
  KernelOutcomeCache& cache_;
  L2ReuseCurve l2_curve_;
  DenseL2Residency l2_;
  L2DirtyLines l2_dirty_;
  struct Seen {
    const Launch* launch;
    L2Charge charge;
    bool operator==(const Seen&) const = default;
  };
  struct SeenHash {
    std::size_t operator()(const Seen& s) const {
      return std::hash<const void*>()(s.launch) ^ (std::hash<double>()(s.charge.read_miss) * 0x9e3779b97f4a7c15ull) ^
             (std::hash<double>()(s.charge.evicted_per_load) * 0xc2b2ae3d27d4eb4full) ^
             (std::hash<double>()(s.charge.store_cost) * 0x165667b19e3779f9ull);
    }
  };
  struct Known {
    SoloOutcome outcome;
    std::optional<KernelResult> listed;  // launch_result, once a listed run needs it
  };
  std::unordered_map<Seen, Known, SeenHash> seen_;  // outcomes met by this chain
  // Runs the next kernel; returns its outcome, when it became ready and the share of its
  // input bytes it found in L2.
  Known& advance(const Launch& launch, std::span<const TensorAccess> reads, std::span<const TensorAccess> writes,
                 const std::optional<sim::Time>& host_gap, bool host_sync, sim::Time& ready,
                 double& read_hit_rate);
  std::int64_t kernels_ = 0;
  sim::Time host_clock_;  // eager mode: when the host issued the last launch
  bool host_waits_ = false;  // eager mode: the last launch was a host sync
  sim::Time end_;
  std::uint64_t events_ = 0;
  double kernel_time_us_ = 0;
};

}  // namespace gpusim::hw
