// Each functional kernel against its double-precision reference, on random inputs of sizes
// that are not multiples of the tiles, so that edge tiles, short K slices, partial key tiles
// and empty-ish splits are all exercised.
#include <gtest/gtest.h>

#include <cmath>

#include "functional_test_support.h"
#include "validation/functional/activations.h"
#include "validation/functional/decode_attention.h"
#include "validation/functional/flash_attention.h"
#include "validation/functional/gemm.h"
#include "validation/functional/moe.h"
#include "validation/functional/norms.h"
#include "validation/functional/reference.h"
#include "validation/functional/rope.h"
#include "validation/functional/softmax.h"

namespace gpusim::functional {
namespace {
using testing::h100;
using testing::kBf16;
using testing::kFp32Tolerance;

models::GemmTiling h100_tiling(std::int64_t M, std::int64_t N, std::int64_t K) {
  models::GemmProblem p;
  p.M = M;
  p.N = N;
  p.K = K;
  return models::gemm_tiling(p, h100());
}

TEST(FunctionalNumerics, GemmWithTheH100Tiling) {
  const Tensor a = random_tensor({77, 301}, 1), b = random_tensor({301, 130}, 2);
  const auto t = h100_tiling(77, 130, 301);
  const OpRun run = gemm(a, b, t, kBf16);
  EXPECT_LT(relative_error(run.out, reference::gemm(a, b)), kFp32Tolerance);
}

TEST(FunctionalNumerics, GemmSplitKWithAShortLastSlice) {
  // 3 slices of 128 over K = 301: the last has 45 elements. Edge tiles in M and N.
  const Tensor a = random_tensor({77, 301}, 3), b = random_tensor({301, 130}, 4);
  const models::GemmTiling t{48, 64, 64, 3, 128};
  const OpRun run = gemm(a, b, t, kBf16);
  ASSERT_EQ(run.kernels.size(), 2u);
  EXPECT_LT(relative_error(run.out, reference::gemm(a, b)), kFp32Tolerance);
}

TEST(FunctionalNumerics, GemmSplitKTheH100Chooses) {
  // M = 5, N = 304, K = 3000 on h100 (16-byte rows: nvjet): 8-row tiles (5 rows real),
  // split-K in slices of at least 1280 with a short last slice (1536, then 1464).
  const Tensor a = random_tensor({5, 3000}, 5), b = random_tensor({3000, 304}, 6);
  const auto t = h100_tiling(5, 304, 3000);
  ASSERT_EQ(t.split, 2);
  ASSERT_EQ(t.k_per_split, 1536);
  const OpRun run = gemm(a, b, t, kBf16);
  EXPECT_LT(relative_error(run.out, reference::gemm(a, b)), kFp32Tolerance);
}

TEST(FunctionalNumerics, GemmLinearLayout) {
  const Tensor a = random_tensor({33, 70}, 7), w = random_tensor({45, 70}, 8);  // W [N, K]
  const OpRun run = gemm(a, w, models::GemmTiling{16, 32, 16, 2, 48}, kBf16, /*b_nk=*/true);
  EXPECT_LT(relative_error(run.out, reference::gemm(a, w, true)), kFp32Tolerance);
}

TEST(FunctionalNumerics, FlashPrefill) {
  // B = 2, H = 3, S = 200 (a full and a 72-row query tile; a full and a 72-key key tile).
  const Tensor q = random_tensor({2, 3, 200, 64}, 10), k = random_tensor({2, 3, 200, 64}, 11),
               v = random_tensor({2, 3, 200, 64}, 12);
  for (const bool causal : {false, true}) {
    const OpRun run = flash_attention(q, k, v, causal, FlashTiling{}, kBf16);
    EXPECT_LT(relative_error(run.out, reference::attention(q, k, v, causal)), kFp32Tolerance)
        << "causal = " << causal;
  }
}

TEST(FunctionalNumerics, FlashGroupedQueryAttentionWithSmallerTiles) {
  // 6 query heads over 2 KV heads, 64-row query tiles, 32-key tiles, Sq < Sk (bottom-right
  // aligned mask: every query sees the first Sk - Sq keys).
  const Tensor q = random_tensor({1, 6, 70, 32}, 13), k = random_tensor({1, 2, 150, 32}, 14),
               v = random_tensor({1, 2, 150, 32}, 15);
  for (const bool causal : {false, true}) {
    const OpRun run = flash_attention(q, k, v, causal, FlashTiling{64, 32, true}, kBf16);
    EXPECT_LT(relative_error(run.out, reference::attention(q, k, v, causal)), kFp32Tolerance)
        << "causal = " << causal;
  }
}

TEST(FunctionalNumerics, DecodeSplitKvAndCombine) {
  // B = 2, Hq = 8 over Hkv = 2 (4 query heads per CTA), L = 517 in 4 splits of 130 keys (the
  // last 127), 128-key tiles: each split ends in a 2- or 127-key partial tile.
  const Tensor q = random_tensor({2, 8, 64}, 20), k = random_tensor({2, 2, 517, 64}, 21),
               v = random_tensor({2, 2, 517, 64}, 22);
  const auto ref = reference::decode_attention(q, k, v);
  const OpRun split = decode_attention(q, k, v, DecodePlan{4, 130, 128, 16, 1}, kBf16);
  ASSERT_EQ(split.kernels.size(), 2u);
  EXPECT_LT(relative_error(split.out, ref), kFp32Tolerance);
  // 6 splits of 104 keys in 64-key tiles: 5 x 104 = 520 >= 517 leaves the last split empty.
  const OpRun many = decode_attention(q, k, v, DecodePlan{6, 104, 64, 16, 3}, kBf16);
  EXPECT_LT(relative_error(many.out, ref), kFp32Tolerance);
  const OpRun whole = decode_attention(q, k, v, DecodePlan{1, 517, 128, 16, 1}, kBf16);
  ASSERT_EQ(whole.kernels.size(), 1u);
  EXPECT_LT(relative_error(whole.out, ref), kFp32Tolerance);
}

TEST(FunctionalNumerics, SoftmaxShortAndLongRows) {
  for (const std::int64_t C : {7, 200, 1500}) {
    const Tensor x = random_tensor({37, C}, 30, -4.f, 4.f);
    const OpRun run = softmax(x, softmax_rows_per_cta(C, kBf16), kBf16);
    EXPECT_LT(relative_error(run.out, reference::softmax(x)), kFp32Tolerance) << "C = " << C;
  }
}

TEST(FunctionalNumerics, LayerNormAndRmsNormBothKernelPaths) {
  for (const std::int64_t C : {200, 201}) {  // fused (C % 4 == 0) and two-kernel paths
    const Tensor x = random_tensor({37, C}, 31, -3.f, 3.f);
    const Tensor g = random_tensor({C}, 32, 0.5f, 1.5f), b = random_tensor({C}, 33);
    const OpRun ln = layer_norm(x, g, b, 1e-5f, kBf16);
    EXPECT_EQ(ln.kernels.size(), C % 4 == 0 ? 1u : 2u);
    EXPECT_LT(relative_error(ln.out, reference::layer_norm(x, g, b, 1e-5)), kFp32Tolerance);
    const OpRun rms = rms_norm(x, g, 1e-6f, kBf16);
    EXPECT_LT(relative_error(rms.out, reference::rms_norm(x, g, 1e-6)), kFp32Tolerance);
  }
}

TEST(FunctionalNumerics, Activations) {
  const Tensor x = random_tensor({5003}, 40, -6.f, 6.f);
  EXPECT_LT(relative_error(silu(x, kBf16).out, reference::silu(x)), kFp32Tolerance);
  EXPECT_LT(relative_error(gelu_erf(x, kBf16).out, reference::gelu_erf(x)), kFp32Tolerance);
  EXPECT_LT(relative_error(gelu_tanh(x, kBf16).out, reference::gelu_tanh(x)), kFp32Tolerance);
}

TEST(FunctionalNumerics, RopeRotateHalf) {
  const Tensor x = random_tensor({2, 3, 37, 64}, 50);
  Tensor cos({37, 64}), sin({37, 64});
  // Hugging Face's table: angle = position * inv_freq[d mod D/2], the halves repeated.
  for (std::int64_t s = 0; s < 37; ++s) {
    for (std::int64_t d = 0; d < 64; ++d) {
      const double inv_freq = std::pow(10000.0, -static_cast<double>(2 * (d % 32)) / 64.0);
      cos[s * 64 + d] = static_cast<float>(std::cos(static_cast<double>(s) * inv_freq));
      sin[s * 64 + d] = static_cast<float>(std::sin(static_cast<double>(s) * inv_freq));
    }
  }
  const OpRun run = rope(x, cos, sin, RopeLaunch{7, false}, kBf16);
  ASSERT_EQ(run.kernels.size(), 5u);
  EXPECT_LT(relative_error(run.out, reference::rope(x, cos, sin)), kFp32Tolerance);
}

MoeWeights moe_weights(std::int64_t E, std::int64_t d, std::int64_t F, std::uint32_t seed) {
  // Scaled so that activations stay O(1): 1/sqrt(fan_in).
  const float sd = 1.f / std::sqrt(static_cast<float>(d)), sf = 1.f / std::sqrt(static_cast<float>(F));
  return MoeWeights{random_tensor({E, d}, seed, -sd, sd), random_tensor({E, 2 * F, d}, seed + 1, -sd, sd),
                    random_tensor({E, d, F}, seed + 2, -sf, sf)};
}

TEST(FunctionalNumerics, MoeTopKRoutingAndExpertDispatch) {
  const std::int64_t T = 37, d = 64, E = 8, F = 48;
  const Tensor x = random_tensor({T, d}, 60, -2.f, 2.f);
  const MoeWeights w = moe_weights(E, d, F, 61);
  for (const bool renorm : {true, false}) {
    MoeConfig cfg;
    cfg.top_k = 2;
    cfg.renormalize = renorm;
    cfg.router_tiling = h100_tiling(T, E, d);
    const MoeRun run = moe(x, w, cfg);
    std::int64_t routed = 0;
    for (const auto r : run.rows_per_expert) routed += r;
    EXPECT_EQ(routed, T * cfg.top_k);
    EXPECT_LT(relative_error(run.run.out, reference::moe(x, w, cfg.top_k, renorm)), kFp32Tolerance)
        << "renormalize = " << renorm;
  }
}

}  // namespace
}  // namespace gpusim::functional
