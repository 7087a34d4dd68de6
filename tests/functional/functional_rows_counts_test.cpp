// Row reductions, elementwise kernels, RoPE's eager kernels and MoE's grouped GEMMs against
// the bytes (and, for the grouped GEMM, tensor FLOPs) the cost models charge on h100.
//
// What agrees exactly: softmax and the activations CTA by CTA (grid, unique bytes read, bytes
// written); LayerNorm per launch (fused and two-kernel paths); RoPE's neg, cat and add; the
// grouped GEMM's tensor FLOPs (whole tiles) and bytes.
// Documented gaps:
//  * RMSNorm: the decomposition stores one fp32 statistic per row (rstd; there is no mean),
//    the model charges 8 bytes per row ("rstd (and a dummy)"): 4 B per row more written by
//    the fused kernel, and on the two-kernel path 4 B per row more written by the moments
//    kernel and read by the forward kernel.
//  * RoPE's mul by cos and by sin: cos and sin are [S, D] tables broadcast over batch and
//    heads; the model charges every element's load of them as a DRAM read (n elements), so it
//    charges (n - S * D) elements more than their footprint. The loads themselves (what goes
//    through L2) agree.
#include <gtest/gtest.h>

#include "functional_test_support.h"
#include "models/families.h"
#include "validation/functional/activations.h"
#include "validation/functional/grouped_gemm.h"
#include "validation/functional/model_totals.h"
#include "validation/functional/norms.h"
#include "validation/functional/rope.h"
#include "validation/functional/softmax.h"

namespace gpusim::functional {
namespace {
using testing::h100;
using testing::kBf16;

// Every CTA's unique reads and writes equal the model's DRAM bytes for it, in grid order.
void expect_same_ctas(const hw::Launch& l, const KernelCounts& k) {
  const auto model = model_ctas(l);
  ASSERT_EQ(model.size(), k.ctas.size()) << l.name;
  for (std::size_t c = 0; c < model.size(); ++c) {
    EXPECT_EQ(model[c].dram_read_bytes, static_cast<double>(k.ctas[c].bytes_unique)) << "CTA " << c;
    EXPECT_EQ(model[c].dram_write_bytes, static_cast<double>(k.ctas[c].bytes_written)) << "CTA " << c;
  }
}

std::vector<hw::Launch> lower(models::OpKind kind, models::OpShape shape) {
  return models::default_kernel_models().lower(models::Op(kind, hw::DType::kBf16, std::move(shape)),
                                               h100(), "op0");
}

TEST(FunctionalRowsCounts, SoftmaxPerCta) {
  // C = 200: softmax_warp_forward, 4 rows per CTA (the last CTA 1 row); C = 1500: one warp
  // per row, 4 per CTA; C = 5000: one CTA per row (cunn_SoftMaxForwardReg).
  for (const std::int64_t C : {200, 1500, 5000}) {
    SCOPED_TRACE(C);
    const auto launches = lower(models::OpKind::kSoftmax, models::RowShape{37, C});
    ASSERT_EQ(launches.size(), 1u);
    const OpRun run = softmax(random_tensor({37, C}, 300), softmax_rows_per_cta(C, kBf16), kBf16);
    expect_same_ctas(launches[0], run.kernels[0]);
    EXPECT_EQ(hw::totals(launches[0]).fp32_flops, static_cast<double>(run.total().math_flops));
  }
}

TEST(FunctionalRowsCounts, LayerNormPerLaunch) {
  for (const std::int64_t C : {200, 201}) {  // fused, and moments + forward
    SCOPED_TRACE(C);
    const auto launches = lower(models::OpKind::kLayerNorm, models::RowShape{37, C});
    const OpRun run = layer_norm(random_tensor({37, C}, 310), random_tensor({C}, 311),
                                 random_tensor({C}, 312), 1e-5f, kBf16);
    ASSERT_EQ(launches.size(), run.kernels.size());
    for (std::size_t i = 0; i < launches.size(); ++i) {
      const hw::LaunchTotals m = hw::totals(launches[i]);
      const CtaCount f = run.kernels[i].total();
      EXPECT_EQ(launches[i].cta_count(), static_cast<std::int64_t>(run.kernels[i].ctas.size()));
      EXPECT_TRUE(same_total(m.dram_read_bytes, static_cast<double>(f.bytes_unique))) << i;
      EXPECT_EQ(m.dram_write_bytes, static_cast<double>(f.bytes_written)) << i;
    }
  }
}

TEST(FunctionalRowsCounts, RmsNormChargesAFourByteDummyStatisticPerRow) {
  const std::int64_t R = 37;
  for (const std::int64_t C : {200, 201}) {
    SCOPED_TRACE(C);
    const auto launches = lower(models::OpKind::kRmsNorm, models::RowShape{R, C});
    const OpRun run = rms_norm(random_tensor({R, C}, 320), random_tensor({C}, 321), 1e-6f, kBf16);
    ASSERT_EQ(launches.size(), run.kernels.size());
    const double gap = 4.0 * static_cast<double>(R);
    if (C % 4 == 0) {
      const hw::LaunchTotals m = hw::totals(launches[0]);
      const CtaCount f = run.kernels[0].total();
      EXPECT_TRUE(same_total(m.dram_read_bytes, static_cast<double>(f.bytes_unique)));
      EXPECT_EQ(m.dram_write_bytes, static_cast<double>(f.bytes_written) + gap);
    } else {
      const hw::LaunchTotals moments = hw::totals(launches[0]), forward = hw::totals(launches[1]);
      const CtaCount fm = run.kernels[0].total(), ff = run.kernels[1].total();
      EXPECT_TRUE(same_total(moments.dram_read_bytes, static_cast<double>(fm.bytes_unique)));
      EXPECT_EQ(moments.dram_write_bytes, static_cast<double>(fm.bytes_written) + gap);
      EXPECT_TRUE(same_total(forward.dram_read_bytes, static_cast<double>(ff.bytes_unique) + gap));
      EXPECT_EQ(forward.dram_write_bytes, static_cast<double>(ff.bytes_written));
    }
  }
}

TEST(FunctionalRowsCounts, ActivationsPerCta) {
  const Tensor x = random_tensor({5003}, 330);  // 4 full CTAs of 1024 elements and 907
  expect_same_ctas(lower(models::OpKind::kSilu, models::ElementwiseShape{5003})[0], silu(x, kBf16).kernels[0]);
  // ATen runs both GELU forms in GeluCUDAKernelImpl: the same launch, the same bytes.
  const auto gelu = lower(models::OpKind::kGelu, models::ElementwiseShape{5003});
  expect_same_ctas(gelu[0], gelu_erf(x, kBf16).kernels[0]);
  expect_same_ctas(gelu[0], gelu_tanh(x, kBf16).kernels[0]);
}

TEST(FunctionalRowsCounts, RopeEagerKernels) {
  // q of 2 sequences x 37 tokens x 3 heads x 64 (as workloads/hf_eager_lowering.cpp's rope():
  // transposed views, so the strided kernels; more than one token, so a strided add too).
  const std::int64_t B = 2, H = 3, S = 37, D = 64, n = B * H * S * D;
  const auto ew = [&](models::EwFunc f, std::int64_t elems) {
    models::ElementwiseProblem p;
    p.func = f;
    p.n = elems;
    p.strided = true;
    return models::lower_elementwise(p, h100(), "op0").at(0);
  };
  const hw::Launch cat = models::lower_cat({n / 2, n / 2}, hw::DType::kBf16, false, {}, {}, h100());
  const std::vector<hw::Launch> model{ew(models::EwFunc::kMul, n), ew(models::EwFunc::kNeg, n / 2), cat,
                                      ew(models::EwFunc::kMul, n), ew(models::EwFunc::kAdd, n)};
  const OpRun run = rope(random_tensor({B, H, S, D}, 340), random_tensor({S, D}, 341),
                         random_tensor({S, D}, 342), RopeLaunch{cat.grid.x, false}, kBf16);
  ASSERT_EQ(run.kernels.size(), model.size());
  for (std::size_t i = 0; i < model.size(); ++i) {
    SCOPED_TRACE(run.kernels[i].name);
    const hw::LaunchTotals m = hw::totals(model[i]);
    const CtaCount f = run.kernels[i].total();
    EXPECT_EQ(model[i].cta_count(), static_cast<std::int64_t>(run.kernels[i].ctas.size()));
    EXPECT_TRUE(same_total(m.dram_read_bytes, static_cast<double>(f.bytes_loaded)));
    EXPECT_TRUE(same_total(m.dram_write_bytes, static_cast<double>(f.bytes_written)));
    const bool broadcast = i == 0 || i == 3;  // mul by cos, mul by sin
    const double table_gap = broadcast ? static_cast<double>((n - S * D) * kBf16) : 0.0;
    EXPECT_TRUE(same_total(m.dram_read_bytes, static_cast<double>(f.bytes_unique) + table_gap));
  }
}

TEST(FunctionalRowsCounts, GroupedGemmBothHopperTiles) {
  // Pingpong 64 x 128 tiles (74 rows in all, 14 a group) and cooperative 128 x 256 (1103 rows,
  // 220 a group); experts
  // without rows cost nothing; N and K not multiples of the tiles.
  const std::vector<std::vector<std::int64_t>> cases{{0, 40, 3, 0, 31}, {0, 700, 3, 0, 400}};
  const std::int64_t N = 300, K = 72;
  for (const auto& rows : cases) {
    std::int64_t S = 0;
    for (const auto r : rows) S += r;
    SCOPED_TRACE(S);
    const auto launches = models::lower_grouped_gemm(rows, N, K, hw::DType::kBf16, {}, {}, {}, h100());
    const hw::Launch& l = launches.at(1);
    const OpRun run = grouped_gemm(random_tensor({S, K}, 350),  rows,
                                   random_tensor({static_cast<std::int64_t>(rows.size()), N, K}, 351),
                                   grouped_gemm_tiling(S, static_cast<std::int64_t>(rows.size()), N, true), kBf16);
    const hw::LaunchTotals m = hw::totals(l);
    const CtaCount f = run.total();
    EXPECT_EQ(m.tensor_flops, static_cast<double>(f.math_flops));
    EXPECT_EQ(f.useful_flops, 2 * S * N * K);
    // The weights of the 3 experts with rows and the rows themselves, once each.
    EXPECT_EQ(f.bytes_unique, (3 * N * K + S * K) * kBf16);
    EXPECT_TRUE(same_total(m.dram_read_bytes, static_cast<double>(f.bytes_unique)));
    EXPECT_TRUE(same_total(m.dram_write_bytes, static_cast<double>(f.bytes_written)));
  }
}

}  // namespace
}  // namespace gpusim::functional
