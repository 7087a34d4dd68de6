// The GEMM decomposition's counts against what models/gemm_model.cpp charges on h100, for the
// tiling and split the model itself chooses (models::gemm_tiling).
//
// What agrees exactly: the unit (tile x K slice) count; the persistent grid's units per CTA;
// the bytes (A and B read once, C or the fp32 split-K partials written once, the reduce
// reading every partial and writing C: the model spreads these totals evenly over its CTAs,
// so they agree up to that division's double rounding); the reduce's grid and FLOPs.
// What differs, by design of the model: it charges every K slice k_per_split deep, while the
// last slice only holds K - (split - 1) * k_per_split elements (padded to tile_k). When split
// does not divide K into whole k_per_split slices the model charges
//   2 * tile_m * tile_n * tiles * (k_per_split - round_up(last slice, tile_k))
// more tensor FLOPs than the decomposition executes (+1.2% for 8 x 1024 x 16384: 7 x 2368
// charged for K = 16384; +2.1% for 5 x 300 x 3001: 8 x 384 charged for 7 x 384 + 320); the
// test asserts exactly that relationship.
#include <gtest/gtest.h>

#include <map>

#include "functional_test_support.h"
#include "validation/functional/gemm.h"
#include "validation/functional/model_totals.h"

namespace gpusim::functional {
namespace {
using testing::h100;
using testing::kBf16;

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Shape {
  std::int64_t M, N, K;
  std::int64_t split;  // what h100's choice is today (guards the test's coverage)
  bool short_last_slice;
};

TEST(FunctionalGemmCounts, TilesAndSplitKMatchTheH100CostModel) {
  const Shape shapes[] = {
      {77, 136, 296, 1, false},    // edge tiles in M and N, K padded to the tile depth (16-byte rows: nvjet)
      {200, 256, 512, 1, false},   // few tiles, short K: not split
      {2304, 2304, 8, 1, false},   // more tiles than SMs: persistent CTAs loop over tiles
      {1, 4096, 4096, 2, false},   // split-K, two whole slices of 2048
      {8, 1024, 16384, 8, false},  // split-K, 8 whole slices of 2048 (16 tiles x 8: 128 of 132 SMs)
      {5, 304, 3000, 2, true},     // split-K with a short last slice: 1536, then 1464
  };
  for (const auto& s : shapes) {
    SCOPED_TRACE(::testing::Message() << s.M << "x" << s.N << "x" << s.K);
    models::GemmProblem p;
    p.M = s.M;
    p.N = s.N;
    p.K = s.K;
    p.a = "a";
    p.b = "b";
    p.c = "c";
    const auto t = models::gemm_tiling(p, h100());
    ASSERT_EQ(t.split, s.split);
    const auto launches = models::lower_gemm(p, h100(), "op0");
    const hw::Launch& main = launch_of(launches, "gemm");

    const OpRun run = gemm(random_tensor({s.M, s.K}, 100), random_tensor({s.K, s.N}, 101), t, kBf16);
    ASSERT_EQ(run.kernels.size(), s.split > 1 ? 2u : 1u);
    const KernelCounts& tiles = run.kernels[0];
    const CtaCount total = tiles.total();
    const hw::LaunchTotals model = hw::totals(main);

    // FLOPs: the padded tile math, exactly, plus the model's full-depth last slice.
    const std::int64_t tm = ceil_div(s.M, t.tile_m), tn = ceil_div(s.N, t.tile_n);
    const std::int64_t last = s.K - (t.split - 1) * t.k_per_split;
    const std::int64_t gap =
        2 * t.tile_m * t.tile_n * tm * tn * (t.k_per_split - ceil_div(last, t.tile_k) * t.tile_k);
    EXPECT_EQ(gap > 0, s.short_last_slice);
    EXPECT_EQ(model.tensor_flops, static_cast<double>(total.math_flops + gap));
    EXPECT_EQ(total.useful_flops, 2 * s.M * s.N * s.K);
    EXPECT_GE(total.math_flops, total.useful_flops);

    // The persistent grid: unit u runs on CTA u mod ctas (the model's even split gives the
    // first units % ctas CTAs one unit more); with no short slice every unit is charged what
    // it does, so every CTA matches.
    const auto per_cta = model_ctas(main);
    ASSERT_EQ(static_cast<std::int64_t>(per_cta.size()), main.cta_count());
    EXPECT_EQ(static_cast<std::int64_t>(tiles.ctas.size()), t.split * tm * tn);
    if (s.M == 2304) {
      EXPECT_GT(static_cast<std::int64_t>(tiles.ctas.size()), main.cta_count());
    }
    if (!s.short_last_slice) {
      std::vector<std::int64_t> flops(per_cta.size(), 0);
      for (std::size_t u = 0; u < tiles.ctas.size(); ++u) flops[u % flops.size()] += tiles.ctas[u].math_flops;
      for (std::size_t c = 0; c < per_cta.size(); ++c) {
        EXPECT_EQ(per_cta[c].tensor_flops, static_cast<double>(flops[c])) << "CTA " << c;
      }
    }

    // Bytes: each A and B element is read once from DRAM (later reads hit L2), each output
    // (or fp32 partial) written once.
    EXPECT_EQ(total.bytes_unique, (s.M * s.K + s.K * s.N) * kBf16);
    EXPECT_TRUE(same_total(model.dram_read_bytes, static_cast<double>(total.bytes_unique)))
        << model.dram_read_bytes << " vs " << total.bytes_unique;
    EXPECT_TRUE(same_total(model.dram_write_bytes, static_cast<double>(total.bytes_written)))
        << model.dram_write_bytes << " vs " << total.bytes_written;

    if (s.split > 1) {
      const hw::Launch& reduce = launch_of(launches, "gemm_splitk_reduce");
      const KernelCounts& r = run.kernels[1];
      const hw::LaunchTotals rm = hw::totals(reduce);
      const CtaCount rt = r.total();
      EXPECT_EQ(static_cast<std::int64_t>(r.ctas.size()), reduce.cta_count());
      EXPECT_EQ(rt.bytes_unique, s.split * s.M * s.N * 4);
      EXPECT_TRUE(same_total(rm.dram_read_bytes, static_cast<double>(rt.bytes_unique)));
      EXPECT_TRUE(same_total(rm.dram_write_bytes, static_cast<double>(rt.bytes_written)));
      EXPECT_TRUE(same_total(rm.fp32_flops, static_cast<double>(rt.math_flops)));
    }
  }
}

TEST(FunctionalGemmCounts, GemmTilingIsTheTilingTheLoweringUses) {
  // models::gemm_tiling against what lower_gemm emits, over a sweep of h100 bf16 shapes: the
  // nvjet name carries tile_n x tile_m and tile_k, the main launch's tensor FLOPs are
  // 2 * tile_m * tile_n * k_per_split per unit, and split-K writes split fp32 partials. (Rows
  // of 16 bytes: unaligned shapes take the mma.sync kernels, UnalignedOperandsRunMmaSyncKernels.)
  for (const std::int64_t M : {1, 8, 16, 77, 128, 1000}) {
    for (const std::int64_t N : {136, 1024, 4096}) {
      for (const std::int64_t K : {296, 4096, 16384}) {
        SCOPED_TRACE(::testing::Message() << M << "x" << N << "x" << K);
        models::GemmProblem p;
        p.M = M;
        p.N = N;
        p.K = K;
        const auto t = models::gemm_tiling(p, h100());
        const auto launches = models::lower_gemm(p, h100(), "op0");
        const hw::Launch& main = launch_of(launches, "gemm");
        EXPECT_NE(main.name.find("_" + std::to_string(t.tile_n) + "x" + std::to_string(t.tile_m) + "_" +
                                 std::to_string(t.tile_k) + "x"),
                  std::string::npos)
            << main.name;
        const std::int64_t units = ceil_div(M, t.tile_m) * ceil_div(N, t.tile_n) * t.split;
        EXPECT_EQ(hw::totals(main).tensor_flops,
                  static_cast<double>(units * 2 * t.tile_m * t.tile_n * t.k_per_split));
        EXPECT_EQ(t.split > 1, main.name.find("_splitK") != std::string::npos);
        EXPECT_TRUE(same_total(hw::totals(main).dram_write_bytes,
                               static_cast<double>(M * N * t.split * (t.split > 1 ? 4 : kBf16))));
        EXPECT_EQ(t.k_per_split, ceil_div(ceil_div(K, t.split), t.tile_k) * t.tile_k);
      }
    }
  }
}

}  // namespace
}  // namespace gpusim::functional
