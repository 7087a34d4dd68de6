// The L2's dirty lines: the L2 is a write-back cache. A kernel's stores take L2 lines and mark
// them dirty; a dirty line costs a DRAM write only when it is evicted. A line a load brings in
// evicts an old line, dirty with the probability of the L2's dirty share, and the L2 keeps at most
// l2.max_dirty_share of its lines dirty (past that it cleans lines as new ones are dirtied, so each
// further store costs a write).
//
// Why it matters (validation/data/flush_state_h100.json): after the op sets' flush (a 256 MiB
// zero_(), leaving dirty lines) a read-only stream of 40 MB runs 5 us longer than after a read-only
// flush, and the extra stops at about 9.5 us from 80 MB read on: the write-back of the 28-30 MB
// the L2 held dirty. Skinny TMA GEMMs and elementwise kernels pay it alike.
//
// Only the count is tracked, not which tensor's lines are dirty: evictions pick lines at random
// with respect to dirtiness. The count is kept in whole kGranule units, so that repeated layers
// reach the same state exactly and the kernel outcome cache (keyed on what a kernel pays) hits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace gpusim::hw {

class L2DirtyLines {
 public:
  static constexpr double kGranule = 65536.0;  // bytes

  // `capacity`: L2 bytes; `max_share`: the dirty share the L2 keeps at most. The L2 starts at
  // that limit (kDirty: as the op and model measurements' flush, a buffer written, leaves it, or
  // write-heavy work before) or with no dirty line (kClean: as Nsight Compute's cache control,
  // which writes back and invalidates, leaves it).
  enum class Start { kDirty, kClean };
  L2DirtyLines(double capacity, double max_share, Start start = Start::kDirty)
      : capacity_(capacity), cap_(quantize(capacity * max_share)), dirty_(start == Start::kDirty ? cap_ : 0.0) {}

  double dirty() const { return dirty_; }

  // Dirty lines written back while a kernel runs: those its loads evict, and those the L2
  // cleans because its stores went past the limit.
  struct WriteBacks {
    double evicted = 0;
    double overflow = 0;
  };
  // A kernel brings `missed_reads` bytes into L2 and stores `writes` bytes. Each byte a load
  // brings in evicts a dirty byte with probability dirty / capacity; a store dirties a line
  // without evicting a dirty one (the op sets' elementwise kernels pay for their stores and no more
  // after the flush, while read-only streams pay for the dirty lines they evict); past the limit
  // each further store costs a write. Loads and stores are taken as interleaved evenly: with s
  // stores per byte loaded, dirty bytes D over the bytes r loaded follow dD/dr = s - D / C up to
  // the limit. With a limit of 0 every store costs a write and loads evict nothing dirty.
  WriteBacks bring_in(double missed_reads, double writes) {
    WriteBacks out;
    if (missed_reads <= 0 || capacity_ <= 0) {  // stores alone: what goes past the limit
      out.overflow = std::max(0.0, dirty_ + writes - cap_);
      dirty_ = std::min(cap_, quantize(dirty_ + writes));
      return out;
    }
    // In u = x / C (x: bytes loaded so far), written so that a kernel that finds nearly all its
    // inputs (a few bytes loaded against kilobytes stored) loses no precision: the stores' part
    // is taken per byte stored, never as the product of a huge s C and a tiny 1 - e^-u.
    const double c = capacity_, r = missed_reads, s = writes / missed_reads, d0 = dirty_;
    const auto gone = [](double u) { return -std::expm1(-u); };  // 1 - e^-u
    // (u - (1 - e^-u)) / u: the share of the stores made over u that loads evicted again.
    const auto re_evicted = [&](double u) {
      return u < 1e-4 ? u / 2 - u * u / 6 + u * u * u / 24 : 1.0 - gone(u) / u;
    };
    // Evicted over [0, x] loaded while the limit does not bind, and D after it.
    const auto evicted = [&](double x) { return d0 * gone(x / c) + s * x * re_evicted(x / c); };
    const auto state = [&](double x) {
      return d0 * (1.0 - gone(x / c)) + s * x * (1.0 - re_evicted(x / c));
    };
    // Loaded bytes before D reaches the limit (at once when it starts there); D heads for s C.
    const double d_inf = s * c;
    const double reach = d_inf <= cap_ ? r
                         : d0 >= cap_  ? 0.0
                                       : c * std::log1p((cap_ - d0) / (d_inf - cap_));
    if (r <= reach) {
      out.evicted = evicted(r);
      dirty_ = state(r);
    } else {  // then D holds the limit: loads evict at its share, stores past it cost a write
      const double rest = 1.0 - reach / r;  // share of the loads made at the limit
      out.evicted = evicted(reach) + cap_ / c * r * rest;
      out.overflow = std::max(0.0, (writes - cap_ / c * r) * rest);
      dirty_ = cap_;
    }
    out.evicted = std::max(0.0, out.evicted);
    dirty_ = std::clamp(quantize(dirty_), 0.0, cap_);
    return out;
  }

 private:
  static double quantize(double bytes) { return std::round(bytes / kGranule) * kGranule; }

  double capacity_;
  double cap_;
  double dirty_;
};

}  // namespace gpusim::hw
