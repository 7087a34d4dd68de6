#include "hw/l2_dirty_lines.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

namespace gpusim::hw {
namespace {

constexpr double kMiB = 1 << 20;

// The model integrated in small steps: each loaded byte evicts a dirty one with probability
// D / C, stores come evenly with the loads and dirty a line each, and past the limit the L2
// cleans a line for every store (a write). The closed form must agree.
struct Stepped {
  double evicted = 0, overflow = 0, dirty = 0;
};
Stepped integrate(double capacity, double cap, double d0, double loads, double stores) {
  Stepped out{0, 0, d0};
  const int steps = 200000;
  const double dr = loads / steps, ds = stores / steps;
  for (int i = 0; i < steps; ++i) {
    const double ev = out.dirty / capacity * dr;
    out.evicted += ev;
    out.dirty += ds - ev;
    if (out.dirty > cap) {
      out.overflow += out.dirty - cap;
      out.dirty = cap;
    }
  }
  return out;
}

TEST(L2DirtyLines, ClosedFormAgreesWithTheStepwiseModel) {
  const double capacity = 50 * kMiB, share = 0.55;
  const double cap = std::round(capacity * share / L2DirtyLines::kGranule) * L2DirtyLines::kGranule;
  struct Case {
    bool start_dirty;
    double loads, stores;
  };
  const Case cases[] = {
      {true, 40 * kMiB, 0},             // a read-only stream after the flush
      {true, 320 * kMiB, 0},            // ... long enough to clean every dirty line
      {true, 80 * kMiB, 40 * kMiB},     // elementwise: the stores keep it below the limit
      {true, 10 * kMiB, 40 * kMiB},     // store-heavy: held at the limit
      {false, 10 * kMiB, 40 * kMiB},    // store-heavy from clean: rises, then held
      {false, 30 * kMiB, 5 * kMiB},     // from clean, stays below the limit
      {false, 0, 20 * kMiB},            // stores alone, below the limit: free
      {true, 0, 20 * kMiB},             // stores alone at the limit: each costs a write
  };
  for (const auto& c : cases) {
    L2DirtyLines lines(capacity, share, c.start_dirty ? L2DirtyLines::Start::kDirty : L2DirtyLines::Start::kClean);
    const double d0 = lines.dirty();
    const auto wb = lines.bring_in(c.loads, c.stores);
    const Stepped ref = c.loads > 0 ? integrate(capacity, cap, d0, c.loads, c.stores)
                                    : Stepped{0, std::max(0.0, d0 + c.stores - cap), std::min(cap, d0 + c.stores)};
    const double tol = 1e-3 * (c.loads + c.stores);
    EXPECT_NEAR(wb.evicted, ref.evicted, tol) << c.loads << " " << c.stores;
    EXPECT_NEAR(wb.overflow, ref.overflow, tol) << c.loads << " " << c.stores;
    EXPECT_NEAR(lines.dirty(), ref.dirty, L2DirtyLines::kGranule) << c.loads << " " << c.stores;
    // What was written back plus what stays dirty is what was dirty plus what was stored.
    EXPECT_NEAR(d0 + c.stores, wb.evicted + wb.overflow + lines.dirty(), L2DirtyLines::kGranule);
  }
}

// The flush's measured signature (validation/data/flush_state_h100.json): a read-only stream
// writes back more the more it reads, up to what the L2 held dirty.
TEST(L2DirtyLines, AReadOnlyStreamWritesBackUpToWhatWasDirty) {
  const double capacity = 50 * kMiB;
  double last = 0;
  for (const double mib : {10.0, 20.0, 40.0, 80.0, 160.0, 320.0}) {
    L2DirtyLines lines(capacity, 0.55);
    const double held = lines.dirty();
    const double wb = lines.bring_in(mib * kMiB, 0).evicted;
    EXPECT_GT(wb, last);
    EXPECT_LE(wb, held);
    last = wb;
  }
  EXPECT_GT(last, 0.99 * 0.55 * capacity);
}

// A kernel that finds nearly all its inputs in L2 (a few bytes loaded, kilobytes stored) pays
// what it pays with nothing loaded: the closed form's s C (1 - e^-u) must not cancel. HF decode's
// RoPE and norm pieces find all but ~1e-7 of their inputs; a cancelling form set the dirty count
// to garbage there, and the kernels after it wrote back megabytes more or less.
TEST(L2DirtyLines, NearlyNothingLoadedPaysAsNothingLoaded) {
  const double capacity = 50 * kMiB, share = 0.55;
  for (const double below : {0.0, 1.0, 10.0, 200.0}) {  // granules below the limit
    for (const double stores : {4.0, 16384.0, 131072.0, 4 * kMiB}) {
      for (const double loads : {1e-9, 1e-4, 0.5}) {
        L2DirtyLines none(capacity, share), few(capacity, share);
        if (below > 0) {  // clean `below` granules: a read-only stream that evicts them
          const double evict =
              capacity * std::log(none.dirty() / (none.dirty() - below * L2DirtyLines::kGranule));
          none.bring_in(evict, 0);
          few.bring_in(evict, 0);
        }
        ASSERT_EQ(none.dirty(), few.dirty());
        const auto a = none.bring_in(0, stores);
        const auto b = few.bring_in(loads, stores);
        EXPECT_NEAR(b.evicted, a.evicted, 1.0) << below << " " << stores << " " << loads;
        EXPECT_NEAR(b.overflow, a.overflow, 1.0) << below << " " << stores << " " << loads;
        EXPECT_EQ(few.dirty(), none.dirty()) << below << " " << stores << " " << loads;
      }
    }
  }
}

// Repeated work reaches one state exactly (the count is kept in whole granules), so the kernel
// outcome cache, keyed on what a kernel pays, sees the same keys layer after layer.
TEST(L2DirtyLines, RepeatedWorkSettlesOnOneState) {
  L2DirtyLines lines(50 * kMiB, 0.55);
  double before = -1;
  int settled_at = -1;
  for (int layer = 0; layer < 50 && settled_at < 0; ++layer) {
    lines.bring_in(60 * kMiB, 2 * kMiB);  // a weight stream with small stores
    lines.bring_in(1 * kMiB, 1 * kMiB);   // an elementwise kernel
    if (lines.dirty() == before) settled_at = layer;
    before = lines.dirty();
  }
  EXPECT_GE(settled_at, 0);
  EXPECT_LT(settled_at, 10);
}

}  // namespace
}  // namespace gpusim::hw
