#include "hw/serial_chain.h"

#include <algorithm>

namespace gpusim::hw {

SerialChain::SerialChain(const HardwareSpec& hw, LaunchMode mode, KernelOutcomeCache& cache)
    : hw_(hw), mode_(mode), cache_(cache), l2_curve_(L2ReuseCurve::of(hw.l2)), l2_(static_cast<std::int64_t>(l2_curve_.horizon())),
      l2_dirty_(static_cast<double>(hw.l2.size), hw.l2.max_dirty_share) {
  if (!cache.serves(hw)) throw std::logic_error("SerialChain: the kernel outcome cache was made for another chip");
}

SerialChain::Known& SerialChain::advance(const Launch& launch, std::span<const TensorAccess> reads,
                                         std::span<const TensorAccess> writes,
                                         const std::optional<sim::Time>& host_gap, bool host_sync,
                                         sim::Time& ready, double& read_hit_rate) {
  if (mode_ == LaunchMode::kEager) {
    if (host_waits_) host_clock_ = end_;  // the host went on when the sync ended
    host_clock_ += eager_host_gap(hw_, host_gap, kernels_);
    host_waits_ = host_sync;
  }
  const sim::Time host = host_clock_;
  ready = kernels_ == 0 ? host : std::max(end_ + hw_.launch.graph_gap, host);
  const L2Pass pass = pass_through_l2(l2_, l2_curve_, reads, writes);
  read_hit_rate = pass.read_hit_rate;
  const L2Charge charge = l2_charge(launch, pass.read_miss, l2_dirty_);
  const Seen key{&launch, charge};
  auto it = seen_.find(key);
  if (it == seen_.end()) {
    const SoloOutcome* cached = cache_.find(launch, charge);
    const SoloOutcome outcome = cached ? *cached : simulate_solo(hw_, launch, charge);
    if (!cached) cache_.insert(launch, charge, outcome);
    it = seen_.emplace(key, Known{outcome, std::nullopt}).first;
  }
  const SoloOutcome& known = it->second.outcome;
  end_ = ready + known.duration;
  kernel_time_us_ += known.duration.us();
  events_ += 1 + known.events;  // its ready event, then its own
  ++kernels_;
  return it->second;
}

void SerialChain::run(const Launch& launch, std::span<const TensorAccess> reads, std::span<const TensorAccess> writes,
                      std::optional<sim::Time> host_gap, bool host_sync) {
  sim::Time ready;
  double hit_rate = 0;
  advance(launch, reads, writes, host_gap, host_sync, ready, hit_rate);
}

KernelResult SerialChain::run_listed(const Launch& launch, std::span<const TensorAccess> reads,
                                     std::span<const TensorAccess> writes, const std::string& op,
                                     std::optional<sim::Time> host_gap, bool host_sync) {
  sim::Time ready;
  double hit_rate = 0;
  Known& known = advance(launch, reads, writes, host_gap, host_sync, ready, hit_rate);
  if (!known.listed) {
    const BlockResources block{static_cast<int>(launch.block.count()), launch.regs_per_thread, launch.smem_per_cta};
    known.listed = launch_result(hw_, launch, compute_occupancy(hw_.sm, block));
  }
  KernelResult r = *known.listed;
  const SoloOutcome& o = known.outcome;
  r.op = op;
  r.start = ready;
  r.end = ready + o.duration;
  r.dram_read_bytes = o.dram_read_bytes;
  r.dram_write_bytes = o.dram_write_bytes;
  r.l2_read_hit_rate = hit_rate;
  // It runs alone: the clock is the one its own power draw sets.
  r.clock_hz = r.tensor_heavy ? hw_.clocks.sustained_tensor_hz : hw_.clocks.sustained_other_hz;
  r.achieved_occupancy = achieved_occupancy(hw_, o.warp_seconds, o.duration);
  r.achieved_occupancy_active = achieved_occupancy_active(hw_, o.warp_seconds, o.active_sm_seconds);
  return r;
}

}  // namespace gpusim::hw
