// What each CTA of a functional kernel does, counted as it runs: FLOPs and bytes, one record
// per CTA so that the parallel loop needs no locks (each CTA writes only its own record); the
// totals are reduced after the loop. Unique (first-touch) reads are tracked per input tensor
// with an atomic bitmap, so their sum is the kernel's DRAM read footprint however the CTAs
// interleave.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gpusim::functional {

struct CtaCount {
  // FLOPs the CTA's arithmetic executes: whole (padded) tiles for tensor-core kernels, as the
  // hardware runs them; an FMA counts 2.
  std::int64_t math_flops = 0;
  // FLOPs of the mathematical problem the CTA covers (no padding, no masked scores).
  std::int64_t useful_flops = 0;
  std::int64_t bytes_loaded = 0;   // every load the CTA issues (re-reads included)
  std::int64_t bytes_unique = 0;   // loads of elements no CTA of the kernel loaded before
  std::int64_t bytes_written = 0;  // every store (each output element is stored once)

  CtaCount& operator+=(const CtaCount& o);
  bool operator==(const CtaCount&) const = default;
};

// One launch: its CTAs in index order (the order is the kernel's own, documented with it).
struct KernelCounts {
  std::string name;
  std::vector<CtaCount> ctas;
  CtaCount total() const;
};

// Elements of one tensor that some CTA has loaded: a bitmap of atomic 64-bit words, so that a
// contiguous range costs one atomic OR per 64 elements. Thread-safe.
class Footprint {
 public:
  Footprint(std::int64_t elements, std::int64_t elt_bytes);
  // Marks elements [begin, begin + count) loaded; returns elt_bytes for each of them no CTA
  // had loaded before.
  std::int64_t touch(std::int64_t begin, std::int64_t count = 1);
  std::int64_t elt_bytes() const { return elt_bytes_; }

 private:
  std::int64_t elements_, elt_bytes_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> words_;
};

// Counts one load of elements [begin, begin + count) of the tensor tracked by `f` into `c`.
inline void count_load(CtaCount& c, Footprint& f, std::int64_t begin, std::int64_t count = 1) {
  c.bytes_loaded += count * f.elt_bytes();
  c.bytes_unique += f.touch(begin, count);
}

// Runs `body(cta, count)` for cta in [0, ctas) in parallel (tbb::parallel_for) and returns the
// per-CTA counts. The body must only write outputs its CTA owns.
KernelCounts run_ctas(std::string name, std::int64_t ctas,
                      const std::function<void(std::int64_t, CtaCount&)>& body);

}  // namespace gpusim::functional
