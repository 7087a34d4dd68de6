#include "hw/serial_chain.h"

#include <algorithm>

namespace gpusim::hw {

SerialChain::SerialChain(const HardwareSpec& hw, LaunchMode mode, KernelOutcomeCache& cache)
    : hw_(hw), mode_(mode), cache_(cache), l2_(hw.l2.size) {
  if (!cache.serves(hw)) throw std::logic_error("SerialChain: the kernel outcome cache was made for another chip");
}

void SerialChain::run(const Launch& launch, std::span<const TensorAccess> reads, std::span<const TensorAccess> writes) {
  const sim::Time host = mode_ == LaunchMode::kEager ? sim::Time::from_ps(hw_.launch.eager_gap.ps() * kernels_) : sim::Time();
  const sim::Time ready = kernels_ == 0 ? host : std::max(end_ + hw_.launch.graph_gap, host);
  const double read_miss = pass_through_l2(l2_, reads, writes).read_miss;
  const Seen key{&launch, read_miss};
  auto it = seen_.find(key);
  if (it == seen_.end()) {
    const SoloOutcome* cached = cache_.find(launch, read_miss);
    const SoloOutcome outcome = cached ? *cached : simulate_solo(hw_, launch, read_miss);
    if (!cached) cache_.insert(launch, read_miss, outcome);
    it = seen_.emplace(key, outcome).first;
  }
  const SoloOutcome* known = &it->second;
  end_ = ready + known->duration;
  kernel_time_us_ += known->duration.us();
  events_ += 1 + known->events;  // its ready event, then its own
  ++kernels_;
}

}  // namespace gpusim::hw
