// Reuse of kernel outcomes that the engine has already simulated.
//
// A kernel that becomes ready on an idle chip with no other event pending runs alone until it
// ends (its dependents become ready only then). Its outcome (duration, resident-warp integral,
// DRAM bytes, events) is then a pure function of what the engine reads while it runs: the
// launch's timing fields, the share of its input bytes that misses in L2, and the chip's timing
// parameters. Times inside the engine are integer picoseconds and every rate depends on time
// differences only, so the outcome is the same whenever it starts. This cache keys outcomes on
// exactly those inputs, bit for bit; tests compare cached against uncached runs result for result.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/l2_charge.h"
#include "hw/launch.h"
#include "sim/time.h"

namespace gpusim::hw {

// What a kernel running alone does, relative to when it became ready.
struct SoloOutcome {
  sim::Time duration;        // ready to the end of its drain (the profiler's span)
  double warp_seconds = 0;   // integral of its resident warps over that span
  double dram_read_bytes = 0, dram_write_bytes = 0;
  std::uint64_t events = 0;  // events the engine processed for it after its ready event
  double active_sm_seconds = 0;  // SM-seconds during which SMs held at least one of its CTAs
};

// True when two specs give every engine computation the same inputs (name, description and
// value origins aside).
bool same_timing(const HardwareSpec& a, const HardwareSpec& b);

// True when two launches give the engine the same timing inputs (every field but names and
// tensors): the same outcome whenever they find the same share of their inputs in L2.
bool same_launch_timing(const Launch& a, const Launch& b);

// Outcomes for one chip's timing parameters. Not thread-safe: one per thread.
class KernelOutcomeCache {
 public:
  explicit KernelOutcomeCache(const HardwareSpec& hw) : hw_(hw) {}

  bool serves(const HardwareSpec& hw) const { return same_timing(hw_, hw); }

  // The outcome of `launch` alone on the chip when `read_miss` of its input bytes miss in L2.
  const SoloOutcome* find(const Launch& launch, const L2Charge& charge);
  void insert(const Launch& launch, const L2Charge& charge, const SoloOutcome& outcome);

  std::size_t size() const { return size_; }
  std::uint64_t hits() const { return hits_; }

 private:
  struct Entry {
    std::vector<std::uint64_t> key;  // every timing field, as bits
    SoloOutcome outcome;
  };
  // Fills scratch_ with the key words; returns their hash.
  std::uint64_t make_key(const Launch& launch, const L2Charge& charge);

  HardwareSpec hw_;
  std::unordered_map<std::uint64_t, std::vector<Entry>> entries_;  // by key hash
  std::vector<std::uint64_t> scratch_;
  std::size_t size_ = 0;
  std::uint64_t hits_ = 0;
};

// One cache per chip, for a caller that simulates several (a study's points, a report's grid):
// the cache serving a chip's timing parameters, made on first use. Not thread-safe: one per
// thread.
class KernelOutcomeCaches {
 public:
  KernelOutcomeCache& for_chip(const HardwareSpec& hw);

 private:
  std::vector<std::unique_ptr<KernelOutcomeCache>> caches_;
};

}  // namespace gpusim::hw
