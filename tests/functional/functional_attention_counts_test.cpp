// Attention decompositions' counts against the cost models: cuDNN's prefill and split-KV
// decode on h100 (models/cudnn_attention.cpp) and FlashAttention-2's prefill on a100
// (models/flash_attention_model.cpp).
//
// What agrees exactly: tensor FLOPs (both sides run whole 128 x 128 score tiles, QK^T and PV,
// and causal units stop at the same diagonal tile, so partial tiles cost the same on both
// sides: no rounding to document); the bytes each CTA loads and stores (the models' l2_bytes)
// and writes; the unique read footprint (Q, K and V once), up to the double rounding of the
// models' even spread of it over CTAs.
// Documented gap: cuDNN decode with more than 16 query heads per KV head (g > 16) runs
// ceil(g / 16) head tiles per KV head, each streaming the same keys; the model charges every
// tile's K and V as DRAM reads, while only the first read of a key is unique (the others hit
// L2): the model charges (ceil(g / 16) - 1) x the K and V bytes more than the footprint.
#include <gtest/gtest.h>

#include "functional_test_support.h"
#include "models/families.h"
#include "validation/functional/decode_attention.h"
#include "validation/functional/flash_attention.h"
#include "validation/functional/model_totals.h"

namespace gpusim::functional {
namespace {
using testing::h100;
using testing::kBf16;

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

TEST(FunctionalAttentionCounts, CudnnPrefillOnH100) {
  const std::int64_t B = 2, H = 3, S = 200, D = 64;
  const Tensor q = random_tensor({B, H, S, D}, 200), k = random_tensor({B, H, S, D}, 201),
               v = random_tensor({B, H, S, D}, 202);
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "non-causal");
    const auto launches = models::FlashAttentionModel().lower(
        models::Op(models::OpKind::kSdpa, hw::DType::kBf16, models::SdpaShape{B, H, S, D, causal}),
        h100(), "op0");
    const hw::LaunchTotals m = hw::totals(launch_of(launches, "cudnn_sdpa_fwd"));
    const OpRun run = flash_attention(q, k, v, causal, FlashTiling{128, 128, false}, kBf16);
    const CtaCount f = run.total();
    // 2 query tiles x 6 (batch, head): 2 key tiles each, or 1 and 2 under the causal mask.
    EXPECT_EQ(run.kernels[0].ctas.size(), 12u);
    EXPECT_EQ(m.tensor_flops, static_cast<double>(f.math_flops));
    EXPECT_EQ(f.math_flops, 4 * 128 * 128 * D * B * H * (causal ? 3 : 4));
    // The useful part: every (query, visible key) pair, 4 D FLOPs each.
    const std::int64_t pairs = causal ? S * (S + 1) / 2 : S * S;
    EXPECT_EQ(f.useful_flops, 4 * D * B * H * pairs);
    EXPECT_EQ(m.l2_bytes, static_cast<double>(f.bytes_loaded + f.bytes_written));
    EXPECT_EQ(f.bytes_unique, 3 * B * H * S * D * kBf16);
    EXPECT_TRUE(same_total(m.dram_read_bytes, static_cast<double>(f.bytes_unique)));
    EXPECT_EQ(m.dram_write_bytes, static_cast<double>(f.bytes_written));
  }
}

TEST(FunctionalAttentionCounts, FlashAttention2PrefillOnA100PerCta) {
  const auto& a100 = testing::preset("a100");
  const std::int64_t B = 2, H = 3, S = 200, D = 64;
  const Tensor q = random_tensor({B, H, S, D}, 210), k = random_tensor({B, H, S, D}, 211),
               v = random_tensor({B, H, S, D}, 212);
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "non-causal");
    const auto launches = models::FlashAttentionModel().lower(
        models::Op(models::OpKind::kSdpa, hw::DType::kBf16, models::SdpaShape{B, H, S, D, causal}),
        a100, "op0");
    const hw::Launch& l = launch_of(launches, "flash_fwd");
    // hdim 64: Flash_fwd_kernel_traits<64, 128, 128, 4>; FA2 stores the LSE too.
    const OpRun run = flash_attention(q, k, v, causal, FlashTiling{128, 128, true}, kBf16);
    const auto model = model_ctas(l);
    const auto& ctas = run.kernels[0].ctas;
    ASSERT_EQ(model.size(), ctas.size());
    for (std::size_t c = 0; c < ctas.size(); ++c) {
      EXPECT_EQ(model[c].tensor_flops, static_cast<double>(ctas[c].math_flops)) << "CTA " << c;
      EXPECT_EQ(model[c].l2_bytes, static_cast<double>(ctas[c].bytes_loaded + ctas[c].bytes_written));
      EXPECT_EQ(model[c].dram_write_bytes, static_cast<double>(ctas[c].bytes_written));
    }
    EXPECT_TRUE(same_total(hw::totals(l).dram_read_bytes, static_cast<double>(run.total().bytes_unique)));
  }
}

TEST(FunctionalAttentionCounts, CudnnSplitKvDecodeOnH100PerCta) {
  // B = 2, Hq = 8 over Hkv = 2, L = 517, D = 64: 4 (batch, KV head) CTAs, so cuDNN splits the
  // keys 4 ways (130, 130, 130, 127 keys).
  const std::int64_t B = 2, Hq = 8, Hkv = 2, L = 517, D = 64;
  const auto launches = models::DecodeAttentionModel().lower(
      models::Op(models::OpKind::kSdpaDecode, hw::DType::kBf16, models::SdpaDecodeShape{B, Hq, Hkv, L, D}),
      h100(), "op0");
  const hw::Launch& split = launch_of(launches, "cudnn_sdpa_decode");
  const hw::Launch& reduce = launch_of(launches, "cudnn_sdpa_reduce");
  const std::int64_t splits = split.grid.x;
  ASSERT_EQ(splits, 4);
  const DecodePlan plan{splits, ceil_div(L, splits), 128, 16, 1};
  const OpRun run = decode_attention(random_tensor({B, Hq, D}, 220), random_tensor({B, Hkv, L, D}, 221),
                                     random_tensor({B, Hkv, L, D}, 222), plan, kBf16);
  ASSERT_EQ(run.kernels.size(), 2u);

  const auto model = model_ctas(split);
  const auto& ctas = run.kernels[0].ctas;
  ASSERT_EQ(model.size(), ctas.size());
  for (std::size_t c = 0; c < ctas.size(); ++c) {
    EXPECT_EQ(model[c].tensor_flops, static_cast<double>(ctas[c].math_flops)) << "CTA " << c;
    EXPECT_EQ(model[c].l2_bytes, static_cast<double>(ctas[c].bytes_loaded + ctas[c].bytes_written));
    EXPECT_EQ(model[c].dram_write_bytes, static_cast<double>(ctas[c].bytes_written));
  }
  const CtaCount f = run.kernels[0].total();
  EXPECT_EQ(f.bytes_unique, (B * Hq * D + 2 * B * Hkv * L * D) * kBf16);
  EXPECT_TRUE(same_total(hw::totals(split).dram_read_bytes, static_cast<double>(f.bytes_unique)));

  const auto rmodel = model_ctas(reduce);
  const auto& rctas = run.kernels[1].ctas;
  ASSERT_EQ(rmodel.size(), rctas.size());
  for (std::size_t c = 0; c < rctas.size(); ++c) {
    EXPECT_EQ(rmodel[c].dram_read_bytes, static_cast<double>(rctas[c].bytes_unique)) << "CTA " << c;
    EXPECT_EQ(rmodel[c].dram_write_bytes, static_cast<double>(rctas[c].bytes_written));
  }
}

TEST(FunctionalAttentionCounts, CudnnDecodeWithMoreThan16QueryHeadsPerKvHead) {
  // g = 20: two head tiles per KV head (16 + 4 rows); L = 700 keys in the split count the
  // model picks (read from its grid: 4 today).
  const std::int64_t B = 1, Hq = 40, Hkv = 2, L = 700, D = 64;
  const auto launches = models::DecodeAttentionModel().lower(
      models::Op(models::OpKind::kSdpaDecode, hw::DType::kBf16, models::SdpaDecodeShape{B, Hq, Hkv, L, D}),
      h100(), "op0");
  const hw::Launch& split = launch_of(launches, "cudnn_sdpa_decode");
  const std::int64_t splits = split.grid.x;
  ASSERT_EQ(split.grid.y, 4);  // 2 KV heads x 2 head tiles
  const OpRun run = decode_attention(random_tensor({B, Hq, D}, 230), random_tensor({B, Hkv, L, D}, 231),
                                     random_tensor({B, Hkv, L, D}, 232),
                                     DecodePlan{splits, ceil_div(L, splits), 128, 16, 1}, kBf16);
  const hw::LaunchTotals m = hw::totals(split);
  const CtaCount f = run.kernels[0].total();
  EXPECT_EQ(m.tensor_flops, static_cast<double>(f.math_flops));
  // Q and the written bytes agree; the model counts the second head tile's K and V again.
  const double kv_bytes = static_cast<double>(2 * B * Hkv * L * D * kBf16);
  EXPECT_TRUE(same_total(m.dram_read_bytes, static_cast<double>(f.bytes_unique) + kv_bytes));
  EXPECT_TRUE(same_total(m.dram_write_bytes, static_cast<double>(f.bytes_written)));
}

}  // namespace
}  // namespace gpusim::functional
