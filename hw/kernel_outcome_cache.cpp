#include "hw/kernel_outcome_cache.h"

#include <bit>
#include <tuple>

namespace gpusim::hw {
namespace {

auto timing_fields(const HardwareSpec& h) {
  return std::tie(h.arch, h.sm_count, h.clocks, h.sm, h.throughput, h.l2, h.dram, h.launch, h.system);
}

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }
std::uint64_t bits(std::int64_t x) { return static_cast<std::uint64_t>(x); }
std::uint64_t bits(sim::Time t) { return static_cast<std::uint64_t>(t.ps()); }

}  // namespace

bool same_timing(const HardwareSpec& a, const HardwareSpec& b) {
  return timing_fields(a) == timing_fields(b);
}

namespace {

// Every Launch field the engine's timing reads, except reads/writes, which reach it only
// through the L2 charge. A new timing field of Launch or CtaWork must be added here.
void append_timing_words(const Launch& l, std::vector<std::uint64_t>& k) {
  k.insert(k.end(), {bits(l.grid.x), bits(l.grid.y), bits(l.grid.z), bits(l.block.x),
                     bits(l.block.y), bits(l.block.z), bits(std::int64_t{l.regs_per_thread}),
                     bits(l.smem_per_cta), bits(l.cluster_ctas),
                     bits(std::int64_t{l.prologue_loads ? 1 : 0})});
  for (const CtaClass& c : l.ctas) {
    const CtaWork& w = c.work;
    k.insert(k.end(),
             {bits(c.count), bits(w.tensor_flops), bits(static_cast<std::int64_t>(w.tensor_dtype)),
              bits(w.fp32_flops), bits(w.fp32_efficiency), bits(w.tensor_efficiency),
              bits(w.sfu_ops), bits(w.l2_bytes), bits(w.link_bytes), bits(w.network_bytes),
              bits(w.dram_read_bytes), bits(w.dram_write_bytes), bits(w.max_inflight_bytes),
              bits(std::int64_t{w.bulk_copies}), bits(w.dram_run_bytes), bits(w.pipe_overlap),
              bits(w.critical_path), bits(w.issue_path), bits(w.fixed)});
  }
}

}  // namespace

bool same_launch_timing(const Launch& a, const Launch& b) {
  std::vector<std::uint64_t> x, y;
  append_timing_words(a, x);
  append_timing_words(b, y);
  return x == y;
}

std::uint64_t KernelOutcomeCache::make_key(const Launch& l, const L2Charge& charge) {
  auto& k = scratch_;
  k.clear();
  k.push_back(bits(charge.read_miss));
  k.push_back(bits(charge.evicted_per_load));
  k.push_back(bits(charge.store_cost));
  append_timing_words(l, k);
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the words, mixed per word
  for (const std::uint64_t word : k) {
    h ^= word + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0x100000001b3ull;
  }
  return h;
}

const SoloOutcome* KernelOutcomeCache::find(const Launch& launch, const L2Charge& charge) {
  const auto it = entries_.find(make_key(launch, charge));
  if (it != entries_.end()) {
    for (const Entry& e : it->second) {
      if (e.key == scratch_) {
        ++hits_;
        return &e.outcome;
      }
    }
  }
  return nullptr;
}

void KernelOutcomeCache::insert(const Launch& launch, const L2Charge& charge, const SoloOutcome& outcome) {
  auto& bucket = entries_[make_key(launch, charge)];
  for (Entry& e : bucket) {
    if (e.key == scratch_) {
      e.outcome = outcome;
      return;
    }
  }
  bucket.push_back({scratch_, outcome});
  ++size_;
}

KernelOutcomeCache& KernelOutcomeCaches::for_chip(const HardwareSpec& hw) {
  for (const auto& c : caches_) {
    if (c->serves(hw)) return *c;
  }
  return *caches_.emplace_back(std::make_unique<KernelOutcomeCache>(hw));
}

}  // namespace gpusim::hw
