// Kernel cost models: work conservation (FLOPs and bytes against analytic counts), launch
// geometry from the library sources and the H100 measurements, split-K / split-KV behaviour,
// the registry, and resource sanity on every hardware preset.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/occupancy.h"
#include "models/families.h"
#include "models/flash_common.h"
#include "models/gemm_config.h"
#include "sim/error.h"
#include "tests/models/model_test_support.h"

namespace gpusim::models {
namespace {

using hw::DType;
using testing::lower;
using testing::preset;
using testing::totals;

const hw::HardwareSpec& h100() {
  static const hw::HardwareSpec spec = preset("h100");
  return spec;
}
const hw::HardwareSpec& a100() {
  static const hw::HardwareSpec spec = preset("a100");
  return spec;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Microseconds the engine takes for an op's launches, one after another on an H100.
double simulated_us(const std::vector<Launch>& launches) {
  std::vector<hw::KernelNode> nodes;
  for (const auto& l : launches) nodes.push_back({l, "op", 0, {}, std::nullopt});
  double total = 0;
  for (const auto& k : hw::run_engine(h100(), hw::LaunchMode::kGraph, nodes).kernels) {
    total += k.duration().seconds() * 1e6;
  }
  return total;
}

// One op of every kind and several regimes of each, for the sanity sweeps.
std::vector<Op> op_zoo() {
  return {
      Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2048, 2048, 2048}),
      Op(OpKind::kMatmul, DType::kBf16, MatmulShape{3000, 3000, 3000}),
      Op(OpKind::kMatmul, DType::kBf16, MatmulShape{8, 1024, 16384}),
      Op(OpKind::kMatmul, DType::kFp16, MatmulShape{512, 512, 512}),
      Op(OpKind::kMatmul, DType::kFp32, MatmulShape{1024, 1024, 1024}),
      Op(OpKind::kMatmul, DType::kTf32, MatmulShape{4096, 4096, 4096}),
      Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, 7, 3}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{1, 11008, 4096, false}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{16, 4096, 4096, true}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{2048, 4096, 4096, true}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{128, 11008, 4096, false}),
      Op(OpKind::kSdpa, DType::kFp16, SdpaShape{16, 8, 512, 64, false}),
      Op(OpKind::kSdpa, DType::kBf16, SdpaShape{8, 16, 1024, 64, true}),
      Op(OpKind::kSdpa, DType::kBf16, SdpaShape{1, 32, 2048, 128, true}),
      Op(OpKind::kSdpa, DType::kBf16, SdpaShape{2, 4, 300, 256, true}),
      Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{4, 32, 8, 4096, 128}),
      Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{64, 32, 8, 512, 128}),
      Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{1, 12, 2, 2000, 64}),
      Op(OpKind::kNaiveAttention, DType::kFp32, NaiveAttentionShape{4, 12, 512, 64, false}),
      Op(OpKind::kNaiveAttention, DType::kFp32, NaiveAttentionShape{8, 16, 1024, 64, true}),
      Op(OpKind::kNaiveAttention, DType::kBf16, NaiveAttentionShape{2, 8, 256, 64, true}),
      Op(OpKind::kAdd, DType::kBf16, ElementwiseShape{1048576}),
      Op(OpKind::kMul, DType::kFp32, ElementwiseShape{1000}),
      Op(OpKind::kSilu, DType::kBf16, ElementwiseShape{65537}),
      Op(OpKind::kGelu, DType::kBf16, ElementwiseShape{16777216}),
      Op(OpKind::kCast, DType::kBf16, CastShape{1048576, DType::kFp32, DType::kBf16}),
      Op(OpKind::kCast, DType::kFp32, CastShape{1048576, DType::kBf16, DType::kFp32}),
      Op(OpKind::kLayerNorm, DType::kBf16, RowShape{4096, 4096}),
      Op(OpKind::kLayerNorm, DType::kBf16, RowShape{512, 50257}),
      Op(OpKind::kRmsNorm, DType::kBf16, RowShape{16, 4096}),
      Op(OpKind::kSoftmax, DType::kBf16, RowShape{8192, 1024}),
      Op(OpKind::kSoftmax, DType::kFp32, RowShape{4096, 4096}),
      Op(OpKind::kSoftmax, DType::kBf16, RowShape{512, 50257}),
      Op(OpKind::kSoftmax, DType::kBf16, RowShape{100, 10240}),
      Op(OpKind::kSoftmax, DType::kFp16, RowShape{3, 20}),
  };
}

// ---- registry -----------------------------------------------------------------------------

TEST(KernelModelRegistryTest, LowersEveryOpKindOnEveryPreset) {
  const std::vector<Op> one_per_kind = {
      Op(OpKind::kMatmul, DType::kBf16, MatmulShape{256, 256, 256}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{4, 1536, 1536, false}),
      Op(OpKind::kSdpa, DType::kBf16, SdpaShape{1, 16, 512, 64, false}),
      Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{1, 32, 32, 1024, 128}),
      Op(OpKind::kNaiveAttention, DType::kFp32, NaiveAttentionShape{1, 16, 2048, 64, false}),
      Op(OpKind::kAdd, DType::kFp32, ElementwiseShape{65536}),
      Op(OpKind::kMul, DType::kBf16, ElementwiseShape{65536}),
      Op(OpKind::kSilu, DType::kBf16, ElementwiseShape{65536}),
      Op(OpKind::kGelu, DType::kBf16, ElementwiseShape{65536}),
      Op(OpKind::kCast, DType::kBf16, CastShape{65536, DType::kFp32, DType::kBf16}),
      Op(OpKind::kLayerNorm, DType::kBf16, RowShape{16, 4096}),
      Op(OpKind::kRmsNorm, DType::kBf16, RowShape{16, 4096}),
      Op(OpKind::kSoftmax, DType::kBf16, RowShape{64, 32000}),
      Op(OpKind::kCopy, DType::kBf16, ElementwiseShape{65536, true}),
      Op(OpKind::kRope, DType::kBf16, RopeShape{2, 16, 8, 128}),
      Op(OpKind::kAllReduce, DType::kBf16, CollectiveShape{1 << 20, 2}),
      Op(OpKind::kAllGather, DType::kBf16, CollectiveShape{1 << 20, 2}),
      Op(OpKind::kReduceScatter, DType::kBf16, CollectiveShape{1 << 20, 2}),
      Op(OpKind::kAllToAll, DType::kBf16, CollectiveShape{1 << 20, 2}),
      Op(OpKind::kSendRecv, DType::kBf16, CollectiveShape{1 << 20, 2}),
  };
  ASSERT_EQ(one_per_kind.size(), op_names().size());
  for (const auto& name : testing::preset_names()) {
    const auto hw = preset(name);
    for (const auto& op : one_per_kind) {
      // A collective needs a system: a chip alone (no interconnect) refuses it.
      if (is_collective(op.kind()) && hw.system.interconnect.kind == "none") {
        EXPECT_THROW(lower(op, hw), ModelError) << name << " " << describe(op);
        continue;
      }
      EXPECT_FALSE(lower(op, hw).empty()) << name << " " << describe(op);
    }
  }
  const auto dgx = hw::load_hardware(
      "dgx-h100", hw::PresetCatalog(std::vector{testing::repo() / "configs" / "hw", testing::repo() / "configs" / "systems"}));
  for (const auto& op : one_per_kind) {
    if (!is_collective(op.kind())) continue;
    const auto launches = lower(op, dgx);
    ASSERT_EQ(launches.size(), 1u) << describe(op);
    EXPECT_EQ(launches[0].family, op_name(op.kind()));
  }
}

TEST(KernelModelRegistryTest, UnregisteredKindIsAModelError) {
  KernelModelRegistry empty;
  EXPECT_THROW(empty.model_for(OpKind::kAdd), ModelError);
  const Op op(OpKind::kAdd, DType::kBf16, ElementwiseShape{16});
  EXPECT_THROW(empty.lower(op, h100(), "op0"), ModelError);
}

TEST(KernelModelRegistryTest, UnsupportedMathIsAModelError) {
  // The A100 has no fp8 tensor cores; flash attention has no fp32 path.
  EXPECT_THROW(lower(Op(OpKind::kMatmul, DType::kFp8, MatmulShape{64, 64, 64}), a100()), ModelError);
  EXPECT_THROW(lower(Op(OpKind::kSdpa, DType::kFp32, SdpaShape{1, 1, 128, 64, false}), h100()),
               ModelError);
}

// ---- sanity on every preset (f) ----------------------------------------------------------

TEST(KernelModelSanityTest, ClassesCoverTheGridAndResourcesFitTheSm) {
  for (const auto& name : testing::preset_names()) {
    const auto hw = preset(name);
    for (const auto& op : op_zoo()) {
      std::vector<Launch> ls;
      try {
        ls = lower(op, hw);
      } catch (const ModelError& e) {
        ADD_FAILURE() << name << " " << describe(op) << ": " << e.what();
        continue;
      }
      for (const auto& l : ls) {
        const std::string where = name + " " + describe(op) + " " + l.name;
        std::int64_t count = 0;
        for (const auto& c : l.ctas) {
          EXPECT_GT(c.count, 0) << where;
          count += c.count;
          const auto& w = c.work;
          EXPECT_GE(w.tensor_flops, 0) << where;
          EXPECT_GE(w.fp32_flops, 0) << where;
          EXPECT_GE(w.sfu_ops, 0) << where;
          EXPECT_GE(w.dram_read_bytes, 0) << where;
          EXPECT_GE(w.dram_write_bytes, 0) << where;
          // DRAM traffic is a part of the L2 traffic (every byte passes through L2).
          EXPECT_LE(w.dram_read_bytes + w.dram_write_bytes, w.l2_bytes * (1 + 1e-9) + 1e-6)
              << where;
          EXPECT_GE(w.fixed.ps(), 0) << where;
        }
        EXPECT_EQ(count, l.grid.count()) << where;
        const int threads = static_cast<int>(l.block.count());
        EXPECT_LE(threads, hw.sm.max_threads_per_cta) << where;
        const auto occ = hw::compute_occupancy(
            hw.sm, hw::BlockResources{threads, l.regs_per_thread, l.smem_per_cta});
        EXPECT_GE(occ.ctas_per_sm, 1) << where << ": " << occ.does_not_fit;
        EXPECT_FALSE(l.name.empty());
        EXPECT_FALSE(l.family.empty());
        for (const auto& t : l.reads) EXPECT_EQ(t.tensor.rfind("op0.", 0), 0u) << t.tensor;
        for (const auto& t : l.writes) EXPECT_EQ(t.tensor.rfind("op0.", 0), 0u) << t.tensor;
      }
    }
  }
}

// ---- GEMM ---------------------------------------------------------------------------------

TEST(GemmModelTest, FullTilesCharge2MNK) {
  // 2048^3 on H100: 256x128 tiles, K a multiple of 64: no padding.
  const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2048, 2048, 2048}), h100());
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_DOUBLE_EQ(totals(ls).tensor_flops, 2.0 * 2048 * 2048 * 2048);
  EXPECT_EQ(totals(ls).fp32_flops, 0);
  // The unique inputs come from DRAM once and the output goes back once.
  EXPECT_DOUBLE_EQ(totals(ls).dram_read_bytes, 2.0 * (2048.0 * 2048 * 2));
  EXPECT_DOUBLE_EQ(totals(ls).dram_write_bytes, 2048.0 * 2048 * 2);
  // A100 (non-persistent mma.sync tiles): also exact.
  const auto la = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2048, 2048, 2048}), a100());
  EXPECT_DOUBLE_EQ(totals(la).tensor_flops, 2.0 * 2048 * 2048 * 2048);
}

TEST(GemmModelTest, EdgeTilesInflateFlopsButNotBytes) {
  // 3000^3 on H100 runs 192x192 tiles (as measured): cuBLAS computes whole tiles, so the math
  // covers 3072 x 3072 outputs over K rounded up to the 64-deep tile: 3008.
  const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{3000, 3000, 3000}), h100());
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_TRUE(contains(ls[0].name, "192x192")) << ls[0].name;
  EXPECT_DOUBLE_EQ(totals(ls).tensor_flops, 2.0 * 3072 * 3072 * 3008);
  EXPECT_GT(totals(ls).tensor_flops, 2.0 * 3000 * 3000 * 3000);
  EXPECT_DOUBLE_EQ(totals(ls).dram_read_bytes, 2.0 * 3000 * 3000 * 2);
  EXPECT_DOUBLE_EQ(totals(ls).dram_write_bytes, 3000.0 * 3000 * 2);
}

TEST(GemmModelTest, PersistentHopperKernelsSplitTilesOverAtMostOneWave) {
  // 8192^3: 26 x 64 tiles of 320x128 on 132 CTAs: 80 CTAs run 13 tiles, 52 run 12.
  const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{8192, 8192, 8192}), h100());
  ASSERT_EQ(ls.size(), 2u);  // cuBLAS's workspace memset, then the GEMM (ops_h100.csv)
  EXPECT_EQ(ls[0].name, "Memset (Device)");
  const auto& g = ls[1];
  EXPECT_EQ(g.name, "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT");
  EXPECT_EQ(g.grid.count(), 132);
  ASSERT_EQ(g.ctas.size(), 2u);
  EXPECT_EQ(g.ctas[0].count, 80);
  EXPECT_EQ(g.ctas[1].count, 52);
  EXPECT_DOUBLE_EQ(g.ctas[0].work.tensor_flops / g.ctas[1].work.tensor_flops, 13.0 / 12.0);
}

TEST(GemmModelTest, LinearWithBiasReadsTheBiasInTheSameKernel) {
  const auto plain = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{2048, 4096, 4096, false}), h100());
  const auto bias = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{2048, 4096, 4096, true}), h100());
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(bias.size(), 1u);  // cuBLASLt bias epilogue: no extra kernel
  EXPECT_NEAR(totals(bias).dram_read_bytes - totals(plain).dram_read_bytes, 4096.0 * 2, 1e-6);
  EXPECT_EQ(bias[0].reads.back().tensor, "op0.bias");
}

TEST(GemmModelTest, SkinnyShapesSplitKAndAddAReduceKernel) {
  // Decode-like shapes where cuBLAS split K on H100 (ops_h100.csv: 8x1024x16384 and
  // 1x1536x8960 ran "_splitK" kernels followed by splitKreduce_kernel).
  for (const auto& op : {Op(OpKind::kMatmul, DType::kBf16, MatmulShape{8, 1024, 16384}),
                         Op(OpKind::kLinear, DType::kBf16, LinearShape{1, 1536, 8960, false})}) {
    const auto ls = lower(op, h100());
    ASSERT_EQ(ls.size(), 2u) << describe(op);
    EXPECT_TRUE(contains(ls[0].name, "_splitK")) << ls[0].name;
    EXPECT_TRUE(contains(ls[1].name, "splitKreduce_kernel")) << ls[1].name;
    EXPECT_EQ(ls[1].block.count(), 512);
    // A DRAM round trip, then its partials four to an L2 round trip (sets 3-8: 1.37 + 0.032 us
    // per partial).
    EXPECT_EQ(ls[1].ctas.front().work.fixed, h100().dram.latency);
    // The reduce reads every slice's fp32 partials and writes the bf16 output once.
    const auto& s = op.kind() == OpKind::kMatmul ? MatmulShape{8, 1024, 16384} : MatmulShape{1, 1536, 8960};
    EXPECT_DOUBLE_EQ(totals(ls[1]).dram_write_bytes, static_cast<double>(s.M * s.N) * 2);
    EXPECT_DOUBLE_EQ(totals(ls[0]).dram_write_bytes, totals(ls[1]).dram_read_bytes);
    // Unique inputs still read once.
    EXPECT_DOUBLE_EQ(totals(ls[0]).dram_read_bytes, static_cast<double>(s.M * s.K + s.K * s.N) * 2);
  }
  // Also on the A100's mma.sync path.
  const auto la = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{16, 4096, 4096, false}), a100());
  ASSERT_EQ(la.size(), 2u);
  EXPECT_TRUE(contains(la[1].name, "splitKreduce_kernel"));
}

TEST(GemmModelTest, ReduceLeftoverPartialsRunOneLoadAtATime) {
  // splitKreduce sums four partials a step; the split % 4 left over run one at a time, at most two
  // steps (sets 3-24: 1.50 us for 4 partials, 1.81 for 5, 2.05 for 6, 1.66 for 8).
  const auto chain = [](std::int64_t split) { return gemm_detail::reduce_chain_seconds(h100(), split); };
  EXPECT_LT(chain(4), chain(1));
  EXPECT_LT(chain(4), chain(5));
  EXPECT_LT(chain(5), chain(6));
  EXPECT_DOUBLE_EQ(chain(6), chain(7));
  EXPECT_LT(chain(8), chain(5));
  EXPECT_DOUBLE_EQ(chain(2), chain(3));
  // Linear in the groups of four beyond that.
  EXPECT_NEAR(chain(132) - chain(128), chain(8) - chain(4), 1e-15);
}

TEST(GemmModelTest, DeepFewTileProductsSliceKAsCublasDoes) {
  // The partials a reduce sums tell the split: one fp32 add each.
  const auto split_of = [](const Op& op, std::int64_t M, std::int64_t N) {
    const auto ls = lower(op, h100());
    const auto& r = ls.back();
    EXPECT_TRUE(contains(r.name, "splitKreduce_kernel")) << describe(op);
    return static_cast<std::int64_t>(std::llround(totals(r).fp32_flops / static_cast<double>(M * N)));
  };
  // tf32 on the align1 kernels: slices of K / 132 rounded up to 4 (measured 130, 103, 129).
  EXPECT_EQ(split_of(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{22, 14, 1038}), 22, 14), 130);
  EXPECT_EQ(split_of(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{2, 2, 1234}), 2, 2), 103);
  EXPECT_EQ(split_of(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{16, 8, 5661}), 16, 8), 129);
  // bf16 align1, at most 12 rows: K / 264 rounded up to 8 for a matmul (measured 261, 175), K / 96
  // for F.linear (measured 92, 84).
  EXPECT_EQ(split_of(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{12, 45, 2084}), 12, 45), 261);
  EXPECT_EQ(split_of(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{4, 3, 2800}), 4, 3), 175);
  EXPECT_EQ(split_of(Op(OpKind::kLinear, DType::kBf16, LinearShape{2, 7, 2194, false}), 2, 7), 92);
  EXPECT_EQ(split_of(Op(OpKind::kLinear, DType::kBf16, LinearShape{5, 42, 4011, false}), 5, 42), 84);
  // More rows keep the estimate's deeper slices.
  EXPECT_LT(split_of(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{17, 45, 2084}), 17, 45), 100);
}

TEST(GemmModelTest, WideTwoDeepProductsRunThe128TileVariantWithBf16Partials) {
  // bf16 align1, K of 2-3, more 64x64 tiles than SMs and fewer than 2^21 outputs: 128x128 tiles,
  // unsplit, bf16 partials and a reduce of bf16 partials (sets 3-27: 370x4677x2, 223x9310x3).
  const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{370, 4677, 2}), h100());
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_TRUE(contains(ls[0].name, "_128x128_")) << ls[0].name;
  EXPECT_TRUE(contains(ls[1].name, "splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16"))
      << ls[1].name;
  const double outputs = 370.0 * 4677.0;
  EXPECT_DOUBLE_EQ(totals(ls[0]).dram_write_bytes, outputs * 2);  // 16-bit partials
  EXPECT_DOUBLE_EQ(totals(ls[1]).dram_read_bytes, outputs * 2);
  // From 2^21 outputs on, no reduce (698x3082x3); K of 4 keeps the estimate's choice.
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{698, 3082, 3}), h100()).size(), 1u);
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{94, 10709, 4}), h100()).size(), 1u);
}

TEST(GemmModelTest, Tf32ProductsOfManyTilesSplitOnlyWhenDeep) {
  // tf32 with 16-byte rows on the sm_80 kernels, more than 8 tiles: unsplit without the reduce
  // (16x7904x128, 1696x16x96 as measured), split only from K = 480 over at most 80 tiles
  // (2544x16x992 split 6 ways as measured).
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{16, 7904, 128}), h100()).size(),
            1u);
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{1696, 16, 96}), h100()).size(), 1u);
  const auto deep = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{2544, 16, 992}), h100());
  ASSERT_EQ(deep.size(), 2u);
  EXPECT_TRUE(contains(deep[1].name, "splitKreduce_kernel")) << deep[1].name;
}

TEST(GemmModelTest, ShallowProductsOf129To200ColumnsRunThe128TileVariant) {
  // bf16 align1 of at least 200 rows, 129-200 columns, K up to 19: 128x128 tiles, K in slices of 8,
  // fp32 partials and the reduce (sets 3-28: 1121x152x19 -> 3 slices, 540x195x7 unsplit).
  const auto deep = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1121, 152, 19}), h100());
  ASSERT_EQ(deep.size(), 2u);
  EXPECT_TRUE(contains(deep[0].name, "_128x128_")) << deep[0].name;
  EXPECT_EQ(deep[0].grid.count(), 9 * 2 * 3);
  EXPECT_TRUE(contains(deep[1].name, "splitKreduce_kernel<32, 16, int, float")) << deep[1].name;
  // 40-64 rows and at least 139 columns: 128x64 tiles (128 columns, one tile high), bf16 partials
  // (53x591x12 -> 2 slices, as measured).
  const auto row = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{53, 591, 12}), h100());
  ASSERT_EQ(row.size(), 2u);
  EXPECT_TRUE(contains(row[0].name, "_128x64_")) << row[0].name;
  EXPECT_EQ(row[0].grid.count(), 5 * 2);
  EXPECT_TRUE(
      contains(row[1].name, "splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16"))
      << row[1].name;
  // Fewer rows keep the 64x64 tiles (150x151x5 as measured).
  EXPECT_TRUE(
      contains(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{150, 151, 5}), h100())[0].name,
               "_64x64_"));
  // A thread's element stores wait before its CTA ends, 20 cycles each: a 128x128 tile's 128
  // elements a thread take longer than a 64x64 tile's 32 (one-step launches: 4.5-5.5 us against
  // 2.8-3.1 measured), beside the step's load issue for twice the rows and columns.
  const auto small = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{540, 100, 7}), h100());
  const auto big = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{540, 195, 7}), h100());
  ASSERT_TRUE(contains(small[0].name, "_64x64_")) << small[0].name;
  const double stores = (128 - 32) * 20.0, issue = (256 - 128) * 32 * 0.04;
  EXPECT_NEAR(big[0].ctas.front().work.fixed.seconds() - small[0].ctas.front().work.fixed.seconds(),
              stores / h100().clocks.sustained_other_hz, 1e-12);
  EXPECT_NEAR(big[0].ctas.front().work.critical_path.seconds() -
                  small[0].ctas.front().work.critical_path.seconds(),
              issue / h100().clocks.sustained_other_hz, 1e-12);
}

TEST(GemmModelTest, Fp32ProductsOfFewTilesAndModerateKRunThe32TileUnsplit) {
  // fp32, K 100-240, at most 140 tiles of 32x32, 12,288+ outputs: sm80_xmma's 32x32 tile unsplit
  // (192x192x208 and 1215x27x195 as measured); fewer outputs keep the split (112x96x160).
  for (const auto& s : {MatmulShape{192, 192, 208}, MatmulShape{1215, 27, 195}}) {
    const auto ls = lower(Op(OpKind::kMatmul, DType::kFp32, s), h100());
    ASSERT_EQ(ls.size(), 1u);
    EXPECT_TRUE(contains(ls[0].name, "tilesize32x32x8")) << ls[0].name;
  }
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{112, 96, 160}), h100()).size(), 2u);
}

TEST(GemmModelTest, MidSizeUnalignedTf32ProductsRunTheFfmaXmmaKernel) {
  // tf32 rows that allow no 16-byte loads, 2^17 to 2^20 outputs, K 17-256: cuBLAS's fp32
  // sm80_xmma 32x32 kernel (sets 3-27: 10751x25x252, 73x12444x27), on the FP32 pipe.
  const auto ls = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{10751, 25, 252}), h100());
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_TRUE(contains(ls[0].name, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8"))
      << ls[0].name;
  EXPECT_GT(totals(ls[0]).fp32_flops, 0.0);
  EXPECT_DOUBLE_EQ(totals(ls[0]).tensor_flops, 0.0);
  // Its 64-thread CTAs step through K in 0.7 DRAM latencies an 8-deep step (sets 3-28: 0.26 us a
  // step on the H100), 32 steps for K = 252.
  EXPECT_NEAR(ls[0].ctas.front().work.critical_path.seconds(),
              32 * 0.7 * h100().dram.latency.seconds(), 1e-12);
  // Tall products of a few columns and K up to 16 from 2,400 rows: the 256-row align1 tiles, K in
  // 4-deep slices and the reduce (3944x3x13 -> 4 slices, as measured).
  const auto tall = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{3944, 3, 13}), h100());
  ASSERT_EQ(tall.size(), 2u);
  EXPECT_TRUE(contains(tall[0].name, "_128x256_")) << tall[0].name;
  EXPECT_EQ(tall[0].grid.count(), 16 * 4);
  // Fewer outputs keep the tf32 xmma kernel (6x27x5).
  const auto small = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{583, 24, 19}), h100());
  EXPECT_TRUE(contains(small[0].name, "tf32f32")) << small[0].name;
}

TEST(GemmModelTest, FewNvjetTilesSplitKIntoSlicesAtLeast1280Deep) {
  // cuBLAS on the H100 (random sets 3-8): 16x16x2096 unsplit, 16x16x3568 in 2 slices,
  // 16x16x15344 in 11, 71 tiles of 16x4528x3440 unsplit (two slices would overfill the SMs).
  const auto split_of = [](std::int64_t M, std::int64_t N, std::int64_t K) {
    GemmProblem p;
    p.M = M, p.N = N, p.K = K;
    return gemm_tiling(p, h100()).split;
  };
  EXPECT_EQ(split_of(16, 16, 2096), 1);
  EXPECT_EQ(split_of(16, 16, 3568), 2);
  EXPECT_EQ(split_of(16, 16, 15344), 11);
  EXPECT_EQ(split_of(16, 16, 40000), 16);  // at most 16 slices
  EXPECT_EQ(split_of(16, 4528, 3440), 1);
}

TEST(GemmModelTest, NvjetKStepsAreAChainOfBarrierHandoffs) {
  // A lone nvjet CTA's K steps each take about 180 cycles however few bytes they move: its
  // critical path is the chain, and its time grows with K at that pace (sets 3-8: 0.08-0.09 us
  // per 64-deep step for 1-16 CTAs).
  const auto short_k = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{16, 16, 640}), h100());
  const auto long_k = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{16, 16, 2048}), h100());
  ASSERT_EQ(short_k.size(), 1u);
  ASSERT_EQ(long_k.size(), 1u);
  ASSERT_TRUE(contains(long_k[0].name, "nvjet")) << long_k[0].name;
  const double step = 180.0 / h100().clocks.boost_hz;
  EXPECT_NEAR(long_k[0].ctas.front().work.critical_path.seconds(), 32 * step, 1e-12);
  const auto seconds = [](const std::vector<Launch>& ls) {
    std::vector<hw::KernelNode> nodes;
    for (const auto& l : ls) nodes.push_back({l, "op", 0, {}, std::nullopt});
    return hw::run_engine(h100(), hw::LaunchMode::kGraph, nodes).kernels.front().duration().seconds();
  };
  EXPECT_NEAR(seconds(long_k) - seconds(short_k), 22 * step, 0.1 * 22 * step);
  // The bias epilogue waits one DRAM round trip for the bias before it stores.
  const auto biased = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{16, 16, 640, true}), h100());
  const auto plain = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{16, 16, 640, false}), h100());
  ASSERT_TRUE(contains(biased[0].name, "nvjet")) << biased[0].name;
  EXPECT_EQ(biased[0].ctas.front().work.fixed - plain[0].ctas.front().work.fixed, h100().dram.latency);
}

TEST(GemmModelTest, SmallAlign2ProductsRunTheWmmaKernel) {
  // Random sets 3-8 on the H100: 16-bit products with 4-byte rows below 2^24 multiply-adds ran
  // cutlass_80_wmma_tensorop_..._32x32_..._align2; larger ones the s16816 kernels.
  const auto small = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2313, 142, 8}), h100());
  ASSERT_EQ(small.size(), 1u);
  EXPECT_TRUE(contains(small[0].name, "cutlass_80_wmma_tensorop_bf16") && contains(small[0].name, "_align2"))
      << small[0].name;
  EXPECT_EQ(small[0].grid.count(), 73 * 5);  // 32x32 tiles
  const auto large = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2176, 10476, 10}), h100());
  EXPECT_FALSE(contains(large[0].name, "wmma")) << large[0].name;
  // Unsplit up to K = 1024, then slices of about 128 with the reduce kernel.
  const auto shallow = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{62, 14, 692, false}), h100());
  ASSERT_EQ(shallow.size(), 1u);
  const auto deep = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{130, 22, 3688}), h100());
  ASSERT_EQ(deep.size(), 2u);
  EXPECT_EQ(deep[0].grid.count(),
            5 * 28);  // slices of 132 (whole 16-byte groups; measured 31 of 119)
  EXPECT_TRUE(contains(deep[1].name, "splitKreduce_kernel"));
  // Where mma.sync is the native path (A100), the s16816 kernels as before.
  EXPECT_FALSE(contains(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2313, 142, 8}), a100())[0].name, "wmma"));
}

TEST(GemmModelTest, WmmaKernelsStepAsDeepAsTheirKTile) {
  // F.linear of at most 16 rows runs one-warp 16x16 tiles in one stage, the K step as deep as K
  // needs (sets 3-28: 4x4x10 on 16x16_32x1, 4x262x120 on 16x16_64x1, 2x86x516 on 16x16_128x1).
  const auto name_of = [](const Op& op) { return lower(op, h100())[0].name; };
  EXPECT_TRUE(contains(name_of(Op(OpKind::kLinear, DType::kBf16, LinearShape{4, 4, 10, false})),
                       "_16x16_32x1_tn"));
  EXPECT_TRUE(contains(name_of(Op(OpKind::kLinear, DType::kBf16, LinearShape{4, 262, 120, false})),
                       "_16x16_64x1_tn"));
  EXPECT_TRUE(contains(name_of(Op(OpKind::kLinear, DType::kBf16, LinearShape{2, 86, 516, false})),
                       "_16x16_128x1_tn"));
  // bf16 matmuls of 4-16 rows and at most 10 columns: 16x16 tiles, K in slices of 8 however deep,
  // bf16 partials and their reduce (14x2x3658 -> 458 slices, 10x2x4 unsplit with the reduce).
  const auto narrow = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{14, 2, 3658}), h100());
  ASSERT_EQ(narrow.size(), 2u);
  EXPECT_TRUE(contains(narrow[0].name, "_16x16_128x2_nn")) << narrow[0].name;
  EXPECT_EQ(narrow[0].grid.count(), 458);
  EXPECT_TRUE(
      contains(narrow[1].name, "splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16"))
      << narrow[1].name;
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{10, 2, 4}), h100()).size(), 2u);
  // Most others 32x32 tiles over 128-deep steps in two stages (2313x142x8).
  EXPECT_TRUE(contains(name_of(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2313, 142, 8})),
                       "_32x32_128x2_nn"));
  // A step walks its whole K tile 16 deep: one-step kernels take longer on deeper steps whatever
  // K is (measured 2.05 us on 32-deep, 2.9 on 128-deep), by 150 cycles a 16-deep sub-step.
  const auto path = [](const Op& op) {
    return lower(op, h100())[0].ctas.front().work.critical_path.seconds();
  };
  const double shallow =
      path(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2, 30, 16}));  // 32-deep step
  const double deep =
      path(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{20, 4, 2}));  // 128-deep step
  EXPECT_NEAR(deep - shallow, 6 * 150.0 / h100().clocks.sustained_other_hz, 1e-12);
}

TEST(GemmModelTest, Fp16Align1ProductsRunTheSm75WmmaKernel) {
  // Random sets 3-10 on the H100: fp16 products of single-element rows, K >= 2, fewer than 2^20
  // outputs and 4e8 multiply-adds ran cutlass_75_wmma_tensorop_..._align1 (2382x163x9,
  // 4101x7x12203); larger ones the s1688 kernels (8268x390x5), bf16's never the wmma kernel.
  const auto small = lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{2382, 163, 9}), h100());
  ASSERT_EQ(small.size(), 1u);
  EXPECT_TRUE(contains(small[0].name, "cutlass_75_wmma_tensorop_f16") && contains(small[0].name, "_align1"))
      << small[0].name;
  EXPECT_EQ(small[0].grid.count(), 75 * 6);  // 32x32 tiles
  // Its first loads wait in its K-step chain: 2.5 DRAM round trips fewer before it than the
  // 4 round trips and an L2 hit of the TMA kernels' prologue.
  const auto& h = h100();
  EXPECT_EQ(small[0].ctas.front().work.fixed.ps(),
            3 * h.dram.latency.ps() / 2 + h.l2.hit_latency.ps());
  const auto deep = lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{4101, 7, 12203}), h100());
  EXPECT_TRUE(contains(deep[0].name, "cutlass_75_wmma")) << deep[0].name;
  const auto wide = lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{8268, 390, 5}), h100());
  EXPECT_TRUE(contains(wide[0].name, "cutlass_75_tensorop_s1688gemm_f16")) << wide[0].name;
  // From 2^19 outputs too (the shallow probe: 1542x385x362, 594K outputs, ran the tiles).
  const auto mid = lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{1542, 385, 362}), h100());
  EXPECT_TRUE(contains(mid[0].name, "cutlass_75_tensorop_s1688gemm_f16")) << mid[0].name;
  const auto bf16 = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2382, 163, 9}), h100());
  EXPECT_FALSE(contains(bf16[0].name, "wmma")) << bf16[0].name;
  const auto one_deep = lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{2382, 163, 1}), h100());
  EXPECT_FALSE(contains(one_deep[0].name, "wmma")) << one_deep[0].name;
}

TEST(GemmModelTest, Sm75WmmaSplitsMidDepthProductsOfFewTiles) {
  // Sets 3-42 (H100, H200): the sm_75 wmma kernel splits K of 512-1,024 when its tiles fill few
  // SMs: 8 ways over 3-16 tiles (163x11x912), 4 ways over up to a wave and a quarter
  // (1542x35x926); more tiles (6279x4x803) or shallower (928x14x395) unsplit, one or two tiles
  // too.
  // The main kernel's CTAs, negative where a reduce kernel follows.
  const auto ctas = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const auto ls = lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{m, n, k}), h100());
    EXPECT_TRUE(contains(ls[0].name, "cutlass_75_wmma")) << ls[0].name;
    const auto count = static_cast<std::int64_t>(ls[0].grid.count());
    return ls.size() > 1 ? -count : count;
  };
  EXPECT_EQ(ctas(163, 11, 912), -6 * 8);
  EXPECT_EQ(ctas(1542, 35, 926), -49 * 2 * 4);
  EXPECT_EQ(ctas(6279, 4, 803), 197);
  EXPECT_EQ(ctas(928, 14, 395), 29);
  EXPECT_EQ(ctas(2, 2, 613), 1);
  // fp16's few-row products leave gemmSN for it from K = 352 unless wider than 4,096 columns
  // (the shallow probe's 3x173x362; 9x13119x381 ran gemmSN).
  const auto fp16 = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{m, n, k}), h100())[0].name;
  };
  EXPECT_TRUE(contains(fp16(3, 173, 362), "cutlass_75_wmma")) << fp16(3, 173, 362);
  EXPECT_TRUE(contains(fp16(9, 13119, 381), "gemmSN")) << fp16(9, 13119, 381);
  EXPECT_TRUE(contains(fp16(2, 539, 299), "gemmSN")) << fp16(2, 539, 299);
}

TEST(GemmModelTest, CpAsyncSixteenBitKernelsStoreTheirTileAfterTheMainloop) {
  // Sets 3-42: one 256x128 tile of K = 2 on the s16816 kernel takes 7-8 us (1400x3062x2 in 8.4 us
  // on 132 such tiles), the mainloop's one step 3-4: each thread stores the tile `align` elements
  // at a time, about 40 cycles a store, after the mainloop.
  const auto& h = h100();
  const auto fixed_of = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{m, n, k}), h);
    EXPECT_TRUE(contains(ls[0].name, "cutlass_80_tensorop_s16816gemm_bf16_64x64")) << ls[0].name;
    return ls[0].ctas.front().work.fixed.seconds();
  };
  // 64x64 tiles of 128 threads: 32 elements a thread, 16 stores of two elements (N = 4,094) or 8
  // of four (N = 4,092), the same tile and grid otherwise.
  const double two = fixed_of(128, 4094, 2000);
  const double four = fixed_of(128, 4092, 2000);
  EXPECT_NEAR(two - four, 8 * 40.0 / h.clocks.sustained_other_hz, 1e-12);
  // Shallow products of more than 2^20 outputs leave the wmma kernel for the s16816 tiles
  // (3420x362x2 ran 128x64 tiles); smaller ones keep it (2313x142x8).
  const auto wide = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{3420, 362, 2}), h);
  EXPECT_TRUE(contains(wide[0].name, "s16816gemm")) << wide[0].name;
  const auto small = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2313, 142, 8}), h);
  EXPECT_TRUE(contains(small[0].name, "wmma")) << small[0].name;
}

TEST(GemmModelTest, LargeShapesDoNotSplitK) {
  for (const auto& name : testing::preset_names()) {
    const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{4096, 4096, 4096}), preset(name));
    for (const auto& l : ls) EXPECT_FALSE(contains(l.name, "splitK")) << name << " " << l.name;
  }
}

TEST(GemmModelTest, OneRowProductsOffHopperRunAGemv) {
  // Seed 003 (RTX 5090 decode): cuBLAS's gemvx kernel streams the weight, many CTAs.
  const auto ls = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{1, 11008, 4096, false}),
                        preset("rtx5090"));
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_TRUE(contains(ls[0].name, "gemvx"));
  EXPECT_GE(ls[0].grid.count(), 2 * preset("rtx5090").sm_count);
  EXPECT_DOUBLE_EQ(totals(ls).fp32_flops, 2.0 * 11008 * 4096);
  EXPECT_DOUBLE_EQ(totals(ls).dram_read_bytes, (11008.0 * 4096 + 4096) * 2);
}

TEST(GemmModelTest, MathPipeFollowsTheDtype) {
  const auto fp32 = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{2048, 2048, 2048}), h100());
  EXPECT_EQ(totals(fp32).tensor_flops, 0);
  EXPECT_DOUBLE_EQ(totals(fp32).fp32_flops, 2.0 * 2048 * 2048 * 2048);
  // ops_h100.csv: cutlass_80_simt_sgemm_256x128_8x4, grid 128, 256 threads, 202 regs, 48 KiB.
  EXPECT_EQ(fp32[0].name, "cutlass_80_simt_sgemm_256x128_8x4_nn_align1");
  EXPECT_EQ(testing::dims(fp32[0].grid), "128x1x1");
  EXPECT_EQ(fp32[0].regs_per_thread, 202);
  EXPECT_EQ(fp32[0].smem_per_cta, 49152);

  const auto tf32 = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{4096, 4096, 4096}), h100());
  const auto& g = tf32.back();
  EXPECT_GT(g.ctas[0].work.tensor_flops, 0);
  EXPECT_EQ(g.ctas[0].work.tensor_dtype, DType::kTf32);
  EXPECT_DOUBLE_EQ(totals(g).dram_read_bytes, 2.0 * 4096 * 4096 * 4);  // fp32 storage
}

TEST(GemmModelTest, Align1EpilogueStoresTakeTurnsAtTheSchedulers) {
  // A one-step align1 product of many 64x64 tiles (sets 3-14: 5467x10083x5 in 91 us on both
  // chips): each tile's element-wise stores issue for about 1,000 cycles, which the five CTAs an
  // SM holds take in turn, as they do the single K step's loads (0.04 cycles an element of the
  // 64x32 slabs of A and B); the aligned kernels' stores have no such part.
  const auto u = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{5467, 10083, 5}), h100());
  const auto& main = u.front().name.find("Memset") == std::string::npos ? u.front() : u[1];
  ASSERT_TRUE(contains(main.name, "64x64_nn_align1")) << main.name;
  const double cycles =
      main.ctas.front().work.issue_path.seconds() * h100().clocks.sustained_other_hz;
  EXPECT_NEAR(cycles, 1000.0 + 0.04 * (64 + 64) * 32, 0.01);
  const auto a = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{5472, 10080, 8}), h100());
  EXPECT_EQ(a.front().ctas.front().work.issue_path.ps(), 0);
  // Simulated, the launch runs within 15% of the measured 91 us; without the turns it ran 71.
  EXPECT_NEAR(simulated_us(u), 91.0, 0.15 * 91.0);
  auto no_turns = u;
  for (auto& l : no_turns) {
    for (auto& c : l.ctas) c.work.issue_path = sim::Time();
  }
  EXPECT_LT(simulated_us(no_turns), 0.8 * 91.0);
}

TEST(GemmModelTest, ShallowFp32ProductsSliceAsCublasDoes) {
  // Sets 3-33 (H100): shallow fp32 products of few tiles run CUTLASS's SIMT split-K variants
  // through the reduce, K in slices of 4 up to K = 24, one slice at K = 32; products of three or
  // more 64-row tiles and two or more 128-column ones (or exactly three 64-row tiles) on the
  // 128x64 variant.
  const auto main_and_split = [](std::int64_t M, std::int64_t N, std::int64_t K) {
    const auto l = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{M, N, K}), h100());
    EXPECT_TRUE(contains(l.back().name, "splitKreduce")) << l.back().name;
    return l;
  };
  const auto k19 = main_and_split(27, 64, 19);
  EXPECT_TRUE(contains(k19.front().name, "simt_sgemm_64x64")) << k19.front().name;
  EXPECT_EQ(k19.front().grid.count(), 5);  // one tile, 5 slices
  const auto k32 = main_and_split(32, 16, 32);
  EXPECT_TRUE(contains(k32.front().name, "simt_sgemm_64x64")) << k32.front().name;
  EXPECT_EQ(k32.front().grid.count(), 1);
  const auto tall = main_and_split(160, 16, 16);  // three 64-row tiles
  EXPECT_TRUE(contains(tall.front().name, "simt_sgemm_128x64")) << tall.front().name;
  EXPECT_EQ(tall.front().grid.count(), 3 * 4);
  const auto wide = main_and_split(448, 256, 16);  // 7 x 2 tiles
  EXPECT_TRUE(contains(wide.front().name, "simt_sgemm_128x64")) << wide.front().name;
  EXPECT_EQ(wide.front().grid.count(), 7 * 2 * 4);
  const auto narrow = main_and_split(512, 16, 16);  // 8 row tiles, one column tile
  EXPECT_TRUE(contains(narrow.front().name, "simt_sgemm_64x64")) << narrow.front().name;
}

TEST(GemmModelTest, HopperRunsNoThirtyTwoRowCutlass80Tile) {
  // Sets 3-17 (H100): products of 32 rows or fewer on cuBLAS's cutlass_80 kernels ran 64-row
  // tiles (16x1056x10000 tf32: cutlass_80_tensorop_s1688gemm_128x64_32x6_nn_align1); the
  // 32-row tiles stay for chips not measured.
  const Op op(OpKind::kMatmul, DType::kTf32, MatmulShape{16, 1056, 10000});
  const auto h = lower(op, h100());
  EXPECT_TRUE(contains(h.front().name, "cutlass_80_tensorop")) << h.front().name;
  EXPECT_FALSE(contains(h.front().name, "x32_")) << h.front().name;
  const auto a = lower(op, a100());
  EXPECT_TRUE(contains(a.front().name, "x32_")) << a.front().name;
}

TEST(GemmModelTest, UnalignedOperandsRunMmaSyncKernelsOnHopper) {
  // TMA needs 16-byte row strides: K = 578 (bf16) leaves cuBLAS its sm_75-style align1 kernels
  // (ops3_h100.csv: cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_nn_align1), far slower.
  const auto u = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{10360, 1991, 578}), h100());
  EXPECT_TRUE(contains(u.front().name, "cutlass_75_tensorop_s1688gemm_bf16_")) << u.front().name;
  EXPECT_TRUE(contains(u.front().name, "_align1"));
  EXPECT_DOUBLE_EQ(u.front().ctas.front().work.tensor_efficiency, h100().throughput.mma_sync_share);
  EXPECT_GT(u.front().ctas.front().work.critical_path.ps(), 0);
  // Even dims allow 4-byte loads: the sm_80-style multistage kernels, no per-step chain.
  const auto two = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1024, 1026, 1024}), h100());
  EXPECT_TRUE(contains(two.front().name, "_align2")) << two.front().name;
  // ... which reach more of the tensor rate than the register-staged ones (their own share).
  EXPECT_DOUBLE_EQ(two.front().ctas.front().work.tensor_efficiency, h100().throughput.mma_sync_cp_async_share);
  EXPECT_GT(h100().throughput.mma_sync_cp_async_share, h100().throughput.mma_sync_share);
  const auto aligned = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1024, 1024, 1024}), h100());
  EXPECT_TRUE(contains(aligned.front().name, "nvjet")) << aligned.front().name;
  // tf32: small products take the sm_80-style kernels too (ops3_h100.csv), large ones sm_90's.
  EXPECT_FALSE(contains(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{32, 160, 3152}), h100()).front().name, "sm90"));
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{4096, 4096, 4096}), h100()).back().name, "sm90"));
  // sm_90 tf32: deep products with both sides of some size take the two-warpgroup 128x256 tile
  // at the full rate; others one consumer warpgroup at about half (2352x2992x864 ran 128x128 in
  // 47 us, 5280x13152x7072 128x256 in 2586).
  const auto wide = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{5280, 13152, 7072}), h100());
  EXPECT_TRUE(contains(wide.back().name, "warpgroupsize2x1x1")) << wide.back().name;
  EXPECT_DOUBLE_EQ(wide.back().ctas.front().work.tensor_efficiency, 1.0);
  const auto mid = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{2352, 2992, 864}), h100());
  EXPECT_TRUE(contains(mid.back().name, "warpgroupsize1x1x1")) << mid.back().name;
  EXPECT_LT(mid.back().ctas.front().work.tensor_efficiency, 0.6);
  // Where mma.sync is the native path (A100), it runs at the full tensor rate.
  const auto a = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1024, 1026, 1024}), preset("a100"));
  EXPECT_DOUBLE_EQ(a.front().ctas.front().work.tensor_efficiency, 1.0);
}

TEST(GemmModelTest, Tf32OnHopperFollowsItsMeasuredKernels) {
  // Single-element tf32 rows: 128-byte-deep K steps, three stages, each step waiting for its
  // loads (2696x1491x6839: "..._s1688gemm_128x256_32x3_nn_align1", 2.2 us a step), and the
  // mma.sync share taken of the 16-bit rate (as fast in FLOP/s as the 16-bit kernels).
  const auto big = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{2696, 1491, 6839}), h100());
  EXPECT_TRUE(contains(big.front().name, "_32x3_nn_align1")) << big.front().name;
  const auto& w = big.front().ctas.front().work;
  EXPECT_GT(w.critical_path.ps(), 0);
  EXPECT_DOUBLE_EQ(w.tensor_efficiency,
                   h100().throughput.mma_sync_share * h100().tensor_flops_per_cycle(DType::kBf16) /
                       h100().tensor_flops_per_cycle(DType::kTf32));
  // Small unaligned products run sm80_xmma's 32x32x64 kernel unsplit, its K steps chained.
  const auto small = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{253, 18, 443}), h100());
  ASSERT_EQ(small.size(), 1u);
  EXPECT_TRUE(contains(small[0].name, "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x64")) << small[0].name;
  EXPECT_EQ(testing::dims(small[0].grid), "8x1x1");
  EXPECT_EQ(small[0].smem_per_cta, 49152);  // 3 stages of 32x64 A and B slabs, as measured
  EXPECT_EQ(small[0].regs_per_thread, 72);
  EXPECT_GT(small[0].ctas[0].work.critical_path.ps(), 6 * h100().dram.latency.ps());
  // Up to K = 640: 17x2x597 ran it, 12x527x756 a cutlass_80 kernel split over K.
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{17, 2, 597}), h100())
                           .front().name, "tilesize32x32x64"));
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{12, 527, 756}), h100())
                           .front().name, "cutlass_80_tensorop"));
  // Few-row tf32 products never ran gemmSN (13x64x55 ran sm80_xmma's 32x32x64 kernel).
  for (const auto& l : lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{13, 64, 55}), h100())) {
    EXPECT_FALSE(contains(l.name, "gemmSN")) << l.name;
  }
  // 16-byte rows over many tiles: no reduce kernel (7504x80x16 ran 236 tiles alone); a single
  // tile splits K and reduces (16x16x48 -> 12 slices).
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{7504, 80, 16}), h100()).size(), 1u);
  const auto one = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{16, 16, 48}), h100());
  ASSERT_EQ(one.size(), 2u);
  EXPECT_TRUE(contains(one[1].name, "splitKreduce_kernel"));
  // Up to 24 tiles in more than one column of them, shallow K, split too (32x1120x16 -> 24 tiles
  // x 4 and the reduce); as many tiles in one column do not (1344x16x16 ran 21 tiles alone).
  const auto wide = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{32, 1120, 16}), h100());
  ASSERT_EQ(wide.size(), 2u);
  EXPECT_TRUE(contains(wide[1].name, "splitKreduce_kernel"));
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{1344, 16, 16}), h100()).size(), 1u);
  // Rows that allow no 16-byte loads, one deep or shallow with many outputs: cuBLAS's fp32 SIMT
  // kernels (10573x4222x1, 462x16278x3); few outputs keep the small xmma kernel (2x1423x3).
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{10573, 4222, 1}), h100()).front().name, "simt"));
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{462, 16278, 3}), h100()).front().name, "simt"));
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{2, 1423, 3}), h100()).front().name,
                       "tf32f32_f32_nn_n_tilesize32x32x64"));
  // Where mma.sync is native (A100) tf32 keeps its own rate.
  const auto a = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{2696, 1491, 6839}), preset("a100"));
  EXPECT_DOUBLE_EQ(a.front().ctas.front().work.tensor_efficiency, 1.0);
}

TEST(GemmModelTest, LinearWithoutTheBiasEpilogueCopiesTheBiasFirst) {
  // F.linear's addmm without cuBLASLt's bias epilogue (one output column or row, or K = 1):
  // ATen copies the bias into the output, then runs the GEMM with beta = 1, whose GEMV reads the
  // output before its store (sets 3-17, H100: 209x1x2 with a bias ran direct_copy on one CTA,
  // then gemvx).
  const auto linear = [](std::int64_t m, std::int64_t n, std::int64_t k, bool bias) {
    return lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{m, n, k, bias}), h100());
  };
  const auto column = linear(209, 1, 2, true);
  ASSERT_EQ(column.size(), 2u);
  EXPECT_TRUE(contains(column[0].name, "elementwise_kernel<128, 4")) << column[0].name;
  EXPECT_TRUE(contains(column[0].name, "direct_copy")) << column[0].name;
  EXPECT_EQ(column[0].writes.front().tensor, column[1].writes.front().tensor);
  EXPECT_TRUE(contains(column[1].name, "gemvx")) << column[1].name;
  const auto plain = linear(209, 1, 2, false);
  ASSERT_EQ(plain.size(), 1u);
  const auto& h = h100();
  const auto fixed = [](const hw::Launch& l) { return l.ctas.front().work.fixed.seconds(); };
  EXPECT_NEAR(fixed(column[1]) - fixed(plain[0]), h.dram.latency.seconds(), 1e-12);
  // The dot kernels of a long column too (16x1x15570: direct_copy, dot_kernel, reduce).
  const auto dot = linear(16, 1, 15570, true);
  ASSERT_EQ(dot.size(), 3u);
  EXPECT_TRUE(contains(dot[0].name, "direct_copy")) << dot[0].name;
  EXPECT_TRUE(contains(dot[1].name, "dot_kernel")) << dot[1].name;
  // One deep (K = 1): the copy over the whole output ahead of the tiled kernel (171x1427x1: 477
  // CTAs of 512 elements).
  const auto outer = linear(171, 1427, 1, true);
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_TRUE(contains(outer[0].name, "direct_copy")) << outer[0].name;
  EXPECT_EQ(testing::dims(outer[0].grid), "477x1x1");
  EXPECT_TRUE(contains(outer[1].name, "cutlass_75_tensorop")) << outer[1].name;
  // Across a row the copy is a contiguous memcpy, not a kernel: the GEMV alone.
  const auto row = linear(1, 8, 44, true);
  ASSERT_EQ(row.size(), 1u);
  EXPECT_TRUE(contains(row[0].name, "gemvx")) << row[0].name;
}

TEST(GemmModelTest, OneRowOrColumnProductsOnHopperRunGemvOrDotKernels) {
  // Sets 3-5 (ops{3,4,5}_h100.json): a few long dot products ran dot_kernel (32 chunks of K per
  // product) and reduce_1Block_kernel; other single rows or columns the GEMV, columns over A's
  // rows; aligned 16-bit single rows keep nvjet.
  const auto dot = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, 61, 7898}), h100());
  ASSERT_EQ(dot.size(), 2u);
  EXPECT_TRUE(contains(dot[0].name, "dot_kernel")) << dot[0].name;
  EXPECT_EQ(testing::dims(dot[0].grid), "32x1x61");
  EXPECT_TRUE(contains(dot[1].name, "reduce_1Block_kernel"));
  EXPECT_EQ(testing::dims(dot[1].grid), "1x1x61");
  EXPECT_DOUBLE_EQ(totals(dot).dram_read_bytes, (61.0 * 7898 + 7898) * 2);
  const auto column = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{6844, 1, 239}), h100());
  ASSERT_EQ(column.size(), 1u);
  EXPECT_TRUE(contains(column[0].name, "gemvx")) << column[0].name;
  EXPECT_EQ(testing::dims(column[0].grid), "1711x1x1");  // 4 of A's rows per CTA
  // A row's outputs per CTA grow with their count (1x902x234: 4, 226 CTAs; 1x2581x787: 16, 162;
  // 1x9946x782: 32, 311); F.linear's short K takes 64 (1x2572x2: 41 CTAs; a matmul's short row
  // runs gemv2N on 128, ShortRowMatmulGemvWalksKPerThread).
  const auto row_grid = [](std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, n, k}), h100())[0].grid.count();
  };
  EXPECT_EQ(row_grid(902, 234), 226);
  EXPECT_EQ(row_grid(2581, 787), 162);
  EXPECT_EQ(row_grid(9946, 782), 311);
  EXPECT_EQ(lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{1, 2572, 2}), h100())[0].grid.count(), 41);
  EXPECT_EQ(row_grid(2572, 2), 21);
  // The GEMV waits one and a half DRAM round trips longer than gemmSN before its stores (its
  // warps' reduction): 3.5 round trips and an L2 hit in all.
  const auto& h = h100();
  EXPECT_NEAR(column[0].ctas.front().work.fixed.seconds(),
              3.5 * h.dram.latency.seconds() + h.l2.hit_latency.seconds(), 1e-12);
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{1, 8283, 1943}), h100())[0].name, "gemvx"));
  // fp32 has no sm_90 tensor-core path: aligned one-row products take the GEMV too (1x4x20).
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{1, 4, 20}), h100())[0].name, "gemvx"));
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, 4096, 4096}), h100())[0].name, "nvjet"));
  // Narrow fp32 products of short K run gemmSN (7x5x8), longer K the SIMT kernels (16x16x112).
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{7, 5, 8}), h100())[0].name, "gemmSN"));
  EXPECT_FALSE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{16, 16, 112}), h100())[0].name, "gemmSN"));
  // Deeper fp32 products keep gemmSN only when wide and at least as wide as deep (16x7968x2608);
  // 16x5120x9552 and 16x1664x576 ran the SIMT kernels.
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{16, 7968, 2608}), h100())[0].name, "gemmSN"));
  EXPECT_FALSE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{16, 5120, 9552}), h100())[0].name, "gemmSN"));
  EXPECT_FALSE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{16, 1664, 576}), h100())[0].name, "gemmSN"));
}

TEST(GemmModelTest, GemvVariantsHoldTheirRegistersAndManyOutputsRunGemv2T) {
  // Sets 3-21 (H100): gemvx's long variant holds about 160 registers a thread, so the 1711 CTAs
  // of 6844x1x239 run three an SM, in waves; the short variant (rows of K within 128 bytes) 32.
  const auto gemv = [](DType d, std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, d, MatmulShape{m, n, k}), h100())[0];
  };
  const auto long_k = gemv(DType::kBf16, 6844, 1, 239);
  EXPECT_TRUE(contains(long_k.name, "gemvx")) << long_k.name;
  EXPECT_EQ(long_k.regs_per_thread, 160);
  EXPECT_EQ(hw::compute_occupancy(h100().sm, {128, 160, 0}).ctas_per_sm, 3);
  EXPECT_EQ(gemv(DType::kBf16, 11518, 1, 52).regs_per_thread, 32);  // 104-byte rows: short
  EXPECT_EQ(gemv(DType::kFp32, 3421, 1, 31).regs_per_thread, 32);   // 124 bytes: short
  const auto fp32_70 = gemv(DType::kFp32, 1213, 1, 70);              // 280 bytes: long, 4 a CTA
  EXPECT_EQ(fp32_70.regs_per_thread, 160);
  EXPECT_EQ(fp32_70.grid.count(), 304);
  // Many outputs, each a contiguous row: gemv2T_kernel_val, 8 outputs a CTA, 66 registers
  // (11777x1x210 linear on 1473 CTAs, 1x9384x1487 linear on 1173), for columns too.
  const auto linear = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{m, n, k, false}), h100())[0];
  };
  const auto column = linear(11777, 1, 210);
  EXPECT_TRUE(contains(column.name, "gemv2T_kernel_val")) << column.name;
  EXPECT_EQ(column.grid.count(), 1473);
  EXPECT_EQ(column.regs_per_thread, 66);
  EXPECT_EQ(linear(1, 9384, 1487).grid.count(), 1173);
  EXPECT_TRUE(contains(gemv(DType::kFp16, 11422, 1, 2142).name, "gemv2T_kernel_val"));
  // Fewer outputs keep gemvx unless K is deep; so does a matmul's row, whose outputs are W's
  // columns.
  EXPECT_TRUE(contains(linear(2689, 1, 467).name, "gemvx"));
  EXPECT_TRUE(contains(gemv(DType::kBf16, 1, 9946, 782).name, "gemvx"));
  // A matmul's 16-bit row: 4 outputs a CTA below 1024, then 16 and 64 on CTAs of 512 threads
  // and 128 registers, 32 from 8192 (1x113x893 on 29 CTAs, 1x6512x647 on 102, 1x9946x782 on 311).
  EXPECT_EQ(gemv(DType::kBf16, 1, 113, 893).grid.count(), 29);
  const auto wide = gemv(DType::kBf16, 1, 6512, 647);
  EXPECT_EQ(wide.grid.count(), 102);
  EXPECT_EQ(wide.block.count(), 512);
  EXPECT_EQ(wide.regs_per_thread, 128);
  EXPECT_EQ(gemv(DType::kBf16, 1, 9946, 782).block.count(), 128);
  // Deep K over fewer CTAs than four an SM: split to about two waves of resident CTAs (seven an
  // SM), at most 8 ways, and splitKreduce_kernel adds the fp32 partials (2977x1x8286 on 373x1x5,
  // the reduce on 1x187; 979x1x9269 on 123x1x8); 944 CTAs of 7548x1x4493 unsplit.
  const auto deep = lower(Op(OpKind::kMatmul, DType::kFp16, MatmulShape{2977, 1, 8286}), h100());
  ASSERT_EQ(deep.size(), 2u);
  EXPECT_TRUE(contains(deep[0].name, "gemv2T_kernel_val")) << deep[0].name;
  EXPECT_EQ(testing::dims(deep[0].grid), "373x1x5");
  EXPECT_TRUE(contains(deep[1].name, "splitKreduce_kernel")) << deep[1].name;
  EXPECT_EQ(testing::dims(deep[1].grid), "1x187x1");
  EXPECT_DOUBLE_EQ(totals(deep).dram_write_bytes, 2977.0 * 5 * 4 + 2977.0 * 2);  // partials, then y
  EXPECT_EQ(testing::dims(gemv(DType::kBf16, 979, 1, 9269).grid), "123x1x8");
  const auto unsplit = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{7548, 1, 4493}), h100());
  ASSERT_EQ(unsplit.size(), 1u);
  EXPECT_EQ(testing::dims(unsplit[0].grid), "944x1x1");
  // More registers a thread, fewer CTAs at once: the columns of 6844x1x239 take longer than
  // if they all fit in one wave, as measured (9.95 us).
  auto one_wave = long_k;
  one_wave.regs_per_thread = 32;
  EXPECT_GT(simulated_us({long_k}), 1.4 * simulated_us({one_wave}));
}

// The CTAs of a matmul's main launch (its split-K slices of one tile), checking that the launch
// is the kernel `kernel_part` names and that cuBLASLt's reduce follows it.
std::int64_t one_tile_slices(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                             const std::string& kernel_part) {
  const auto ls = lower(Op(OpKind::kMatmul, dtype, MatmulShape{m, n, k}), h100());
  EXPECT_TRUE(contains(ls.front().name, kernel_part))
      << m << "x" << n << "x" << k << ": " << ls.front().name;
  EXPECT_EQ(ls.size(), 2u) << m << "x" << n << "x" << k << ": the reduce";
  return ls.front().grid.count();
}

TEST(GemmModelTest, Fp32OneTileProductsSplitKAsCublas) {
  // Products on one 64x64 SIMT tile split K as cuBLAS did in sets 3-39 (measured splits): slices a
  // multiple of 32 when K is one, of 4 otherwise, at most 36 of them up to K = 4,000 and 132
  // deeper; more than 16 rows: 4 ways up to K = 600, slices of at least 68 beyond.
  const auto split = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return one_tile_slices(DType::kFp32, m, n, k, "cutlass_80_simt_sgemm_64x64_8x5_nn_align1");
  };
  EXPECT_EQ(split(16, 16, 1024), 32);
  EXPECT_EQ(split(4, 5, 172), 22);
  EXPECT_EQ(split(16, 16, 352), 11);
  EXPECT_EQ(split(2, 18, 2240), 35);
  EXPECT_EQ(split(9, 5, 4074), 128);
  EXPECT_EQ(split(16, 16, 4928), 77);
  EXPECT_EQ(split(16, 32, 5424), 80);
  EXPECT_EQ(split(34, 3, 554), 4);
  EXPECT_EQ(split(35, 51, 7250), 107);
}

TEST(GemmModelTest, Align1OneTileProductsOfMoreRowsSplitAsCublas) {
  // bf16 products of 17-64 rows on one 64x64 tile of cutlass_75's align1 kernel, K of 170-600:
  // slices of 8, at most 16 of them (measured in sets 3-39: 23x15x258 -> 11, 19x51x197 -> 13,
  // 22x29x522 -> 14, 19x5x488 -> 16).
  const auto split = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return one_tile_slices(DType::kBf16, m, n, k, "cutlass_75_tensorop_s1688gemm_bf16_64x64");
  };
  EXPECT_EQ(split(23, 15, 258), 11);
  EXPECT_EQ(split(19, 51, 197), 13);
  EXPECT_EQ(split(22, 29, 522), 14);
  EXPECT_EQ(split(19, 5, 488), 16);
}

TEST(GemmModelTest, Fp32KernelChoiceFollowsCublas) {
  const auto fp32 = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{m, n, k}), h100());
  };
  // The 256x128 tile runs 128 rows by 256 columns (4144x1904x832: 33 x 8 = 264 CTAs).
  const auto big = fp32(4144, 1904, 832);
  EXPECT_EQ(big[0].name, "cutlass_80_simt_sgemm_256x128_8x4_nn_align1");
  EXPECT_EQ(big[0].grid.count(), 264);
  // Shallow products of few tiles: the 64x64 kernel's split-K variant, slices of about 4 and the
  // reduce even unsplit (80x16x16: 2 tiles x 4 slices; 19x398x2: one slice).
  const auto shallow = fp32(80, 16, 16);
  ASSERT_EQ(shallow.size(), 2u);
  EXPECT_EQ(shallow[0].name, "cutlass_80_simt_sgemm_64x64_8x5_nn_align1");
  EXPECT_EQ(shallow[0].grid.count(), 2 * 4);
  EXPECT_EQ(shallow[1].name, "cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float>");
  const auto unsplit = fp32(19, 398, 2);
  ASSERT_EQ(unsplit.size(), 2u);
  EXPECT_EQ(unsplit[0].grid.count(), 7);
  // Long thin ones of more than 26 such tiles run sm80_xmma's 32x32 tile unsplit, no reduce
  // (2928x64x16 on 92x2 CTAs in 2.9 us); as thin but squarer ones keep the split-K variant.
  const auto thin = fp32(2928, 64, 16);
  ASSERT_EQ(thin.size(), 1u);
  EXPECT_TRUE(contains(thin[0].name, "tilesize32x32x8")) << thin[0].name;
  EXPECT_EQ(testing::dims(thin[0].grid), "92x2x1");
  EXPECT_EQ(fp32(880, 112, 16)[0].name, "cutlass_80_simt_sgemm_64x64_8x5_nn_align1");
  EXPECT_EQ(fp32(4032, 16, 16)[0].name, "cutlass_80_simt_sgemm_64x64_8x5_nn_align1");
  // Shallow products of many tiles never take the 256x128 tile (3969x10157x43 ran sm80_xmma 64x64).
  EXPECT_TRUE(contains(fp32(3969, 10157, 43)[0].name, "tilesize64x64x8")) << fp32(3969, 10157, 43)[0].name;
  // Deep ones may take sm80_xmma's 128x128 tile, at the FFMA share of 128 outputs a thread.
  const auto deep = fp32(4320, 336, 4240);
  EXPECT_TRUE(contains(deep[0].name, "tilesize128x128x8")) << deep[0].name;
  EXPECT_DOUBLE_EQ(deep[0].ctas.front().work.fp32_efficiency, big[0].ctas.front().work.fp32_efficiency);
  EXPECT_LT(fp32(3969, 10157, 43)[0].ctas.front().work.fp32_efficiency, deep[0].ctas.front().work.fp32_efficiency);
  // Narrow products may take sm80_xmma's 32-column tiles (13072x16x16 ran 32x32, 3632x16x5696
  // 128x32 split 9; the 32x32 tile has 64 threads).
  const auto narrow = fp32(13072, 16, 16);
  EXPECT_TRUE(contains(narrow[0].name, "tilesize32x32x8_stage3_warpsize1x2x1")) << narrow[0].name;
  EXPECT_EQ(narrow[0].block.x, 64);
  const auto narrow_deep = fp32(3632, 16, 5696);
  EXPECT_TRUE(contains(narrow_deep[0].name, "tilesize128x32x8")) << narrow_deep[0].name;
  // Outer products: the 128x32 kernel unsplit (6115x1281x1).
  const auto outer = fp32(6115, 1281, 1);
  ASSERT_EQ(outer.size(), 1u);
  EXPECT_EQ(outer[0].name, "cutlass_80_simt_sgemm_128x32_8x5_nn_align1");
  // Narrow products of 2-16 rows keep gemmSN up to K = 96 (3x3x85; 2x64x105 the SIMT kernels).
  EXPECT_TRUE(contains(fp32(3, 3, 85)[0].name, "gemmSN")) << fp32(3, 3, 85)[0].name;
  EXPECT_FALSE(contains(fp32(2, 64, 105)[0].name, "gemmSN")) << fp32(2, 64, 105)[0].name;
}

TEST(GemmModelTest, Fp32SkinnyShapesSplitLongKManyWays) {
  // ops3_h100.csv: cuBLAS splits 16x3x10508 fp32 into 132 slices (64x64 SIMT tiles) and
  // 21x144x10169 into 66 (128x32 tiles); the square shapes keep at most 4 (512^3: 64x64 split 4).
  const auto problem = [](std::int64_t M, std::int64_t N, std::int64_t K) {
    GemmProblem p;
    p.M = M;
    p.N = N;
    p.K = K;
    p.dtype = DType::kFp32;
    return p;
  };
  const auto t = gemm_tiling(problem(16, 3, 10508), h100());
  EXPECT_GE(t.split, 32);
  const auto sq = gemm_tiling(problem(512, 512, 512), h100());
  EXPECT_LE(sq.split, 4);
  const auto ls = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{16, 3, 10508}), h100());
  ASSERT_EQ(ls.size(), 2u);  // the tiles and the split-K reduce
}

TEST(GemmModelTest, XmmaSimtSplitsReduceInTheirOwnKernel) {
  // sets 3-19 (H100): sm80_xmma's SIMT kernels sum their split-K partials in their own
  // "execute_split_k_kernel", two CTAs a tile of the main kernel's threads walking the partials
  // in turn (2192x16x11600 on 128x32 tiles: 35 x 1 x 2 CTAs, 5.6 us for 15 partials), not in
  // cuBLASLt's splitKreduce_kernel, which sums four partials a round trip.
  const auto ls = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{2192, 16, 11600}), h100());
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_TRUE(contains(ls[0].name, "tilesize128x32x8") && contains(ls[0].name, "execute_kernel"))
      << ls[0].name;
  EXPECT_TRUE(contains(ls[1].name, "tilesize128x32x8") &&
              contains(ls[1].name, "execute_split_k_kernel"))
      << ls[1].name;
  EXPECT_EQ(testing::dims(ls[1].grid), "18x1x2");
  EXPECT_EQ(ls[1].block.x, ls[0].block.x);
  const std::int64_t split = ls[0].grid.count() / 18;
  ASSERT_GT(split, 1);
  EXPECT_LE(split, 33);  // cuBLAS's most
  // Each thread holds 128 x 32 / (2 x 128) = 16 outputs: one L2 round trip and a half a partial.
  const auto& h = h100();
  EXPECT_NEAR(ls[1].ctas.front().work.critical_path.seconds(),
              static_cast<double>(split) * 1.6 * h.l2.hit_latency.seconds(), 1e-12);
  // Its time follows the partials: far dearer than cuBLASLt's reduce of as many.
  EXPECT_GT(simulated_us({ls[1]}), 2.0 + 0.15 * static_cast<double>(split));
  // Few-tile products split on CUTLASS's 64x64 kernel and cuBLASLt's reduce (61x502x1773: 8
  // tiles, 16 slices measured); products of many tiles never run it (6115x1281x1 on 128x32).
  const auto few = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{61, 502, 1773}), h100());
  ASSERT_EQ(few.size(), 2u);
  EXPECT_EQ(few[0].name, "cutlass_80_simt_sgemm_64x64_8x5_nn_align1");
  EXPECT_GE(few[0].grid.count(), 8 * 8);
  EXPECT_TRUE(contains(few[1].name, "splitKreduce_kernel")) << few[1].name;
}

// Tall fp32 matmuls of 2-11 columns run CUTLASS's 128x32 SIMT kernel along their rows, K in
// slices of 4 up to 16 of them, through cuBLASLt's reduce (sets 3-30, H100: 3097x5x918 on 97
// tiles in 14 slices, 2963x6x21 in 6); 12 columns, more than 100 tiles or K above 4,096 do not.
TEST(GemmModelTest, TallThinFp32RunsCutlass128x32SplitAlongRows) {
  const auto tall = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{3097, 5, 918}), h100());
  ASSERT_EQ(tall.size(), 2u);
  EXPECT_EQ(tall[0].name, "cutlass_80_simt_sgemm_128x32_8x5_nn_align1");
  EXPECT_EQ(tall[0].grid.count(), 97 * 16);  // ceil(3097 / 32) tiles x min(16, 918 / 4) slices
  EXPECT_TRUE(contains(tall[1].name, "splitKreduce_kernel")) << tall[1].name;
  const auto shallow = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{2963, 6, 21}), h100());
  ASSERT_EQ(shallow.size(), 2u);
  EXPECT_EQ(shallow[0].grid.count(), 93 * 6);  // slices of 4
  for (const MatmulShape s :
       {MatmulShape{3097, 12, 918}, MatmulShape{5021, 6, 918}, MatmulShape{1950, 4, 14862}}) {
    EXPECT_NE(lower(Op(OpKind::kMatmul, DType::kFp32, s), h100())[0].name,
              "cutlass_80_simt_sgemm_128x32_8x5_nn_align1")
        << s.M << "x" << s.N << "x" << s.K;
  }
}

// CUTLASS's SIMT kernels wait one DRAM round trip fewer before their K steps than the tiled
// kernels' four: their first loads wait in the step chain (sets 3-30, H100: one-step 64x64
// launches 2.5-2.8 us, 10-30% slow with the full prologue).
TEST(GemmModelTest, CutlassSimtPrologueWaitsOneRoundTripFewer) {
  const auto ls = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{80, 16, 16}), h100());
  ASSERT_EQ(ls.size(), 2u);
  ASSERT_EQ(ls[0].name, "cutlass_80_simt_sgemm_64x64_8x5_nn_align1");
  const auto& h = h100();
  EXPECT_NEAR(ls[0].ctas.front().work.fixed.seconds(),
              3.0 * h.dram.latency.seconds() + h.l2.hit_latency.seconds(), 1e-12);
}

// tf32: one column of 22-34 tiles at K = 16 splits 4 ways (2 when 4 would overflow the SMs)
// with the reduce; 21 tiles and fewer, and 35 and more, stay unsplit (sets 3-30, H100).
TEST(GemmModelTest, Tf32OneColumnOfTilesAtK16SplitsWithTheReduce) {
  const auto split_of = [](std::int64_t M, std::int64_t N) {
    const auto ls = lower(Op(OpKind::kMatmul, DType::kTf32, MatmulShape{M, N, 16}), h100());
    const bool reduce = ls.size() == 2 && contains(ls[1].name, "splitKreduce_kernel");
    const std::int64_t tiles = (M + 63) / 64 * ((N + 63) / 64);
    return std::make_pair(ls[0].grid.count() / tiles, reduce);
  };
  EXPECT_EQ(split_of(1872, 16), std::make_pair(std::int64_t{4}, true));
  EXPECT_EQ(split_of(2128, 16), std::make_pair(std::int64_t{2}, true));  // 34 tiles: 4 x 34 > 132
  EXPECT_EQ(split_of(1344, 16), std::make_pair(std::int64_t{1}, false));
  EXPECT_EQ(split_of(4480, 16), std::make_pair(std::int64_t{1}, false));
}

// The split-K reduce's name says the partials' type as its reads cost it: "float" for 4-byte
// partials (fp16's too, after the "s1688gemm_f16" and nvjet kernels: 88 of the 123 fp16 reduces of
// sets 3-30), the output's type for the 16-bit-partial variants.
TEST(GemmModelTest, SplitKReduceNamesThePartialsItsReadsCost) {
  int reduces = 0, float_partials = 0, half_partials = 0;
  for (const DType d : {DType::kBf16, DType::kFp16}) {
    for (const MatmulShape s : {MatmulShape{16, 16, 8000}, MatmulShape{13, 7, 5001},
                                MatmulShape{600, 300, 3}, MatmulShape{3000, 3000, 2},
                                MatmulShape{64, 200, 9000}, MatmulShape{9, 2, 14}}) {
      const auto ls = lower(Op(OpKind::kMatmul, d, s), h100());
      for (const auto& l : ls) {
        if (!contains(l.name, "splitKreduce_kernel")) continue;
        ++reduces;
        const auto t = totals(std::vector<hw::Launch>{l});
        const double outputs = static_cast<double>(s.M * s.N);
        const double split = t.fp32_flops / outputs;  // one add per partial element
        const double bytes = t.dram_read_bytes / (split * outputs);
        const bool named_float = contains(l.name, "<32, 16, int, float,");
        EXPECT_EQ(named_float, bytes == 4.0) << l.name << " " << bytes;
        (named_float ? float_partials : half_partials) += 1;
      }
    }
  }
  EXPECT_GT(reduces, 4);
  EXPECT_GT(float_partials, 0);
  EXPECT_GT(half_partials, 0);
}

// A 16-bit matmul's one-row product of a short row runs gemv2N_kernel: 128 outputs a CTA, each
// thread walking K alone, so its chain grows with K (sets 3-30, H100: 1x66x37 in 5.7 us, 1x538x10
// in 3.6); F.linear's runs gemvx's short variant (64 outputs a CTA).
TEST(GemmModelTest, ShortRowMatmulGemvWalksKPerThread) {
  const auto row = [](std::int64_t N, std::int64_t K) {
    return lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, N, K}), h100()).front();
  };
  const auto shallow = row(1235, 15), deeper = row(1235, 37);
  EXPECT_TRUE(contains(shallow.name, "gemv2N_kernel")) << shallow.name;
  EXPECT_EQ(shallow.grid.x, 10);  // ceil(1235 / 128)
  EXPECT_EQ(shallow.block.x, 128);
  EXPECT_NEAR(deeper.ctas[0].work.critical_path.seconds() - shallow.ctas[0].work.critical_path.seconds(),
              0.25 * 22.0 * h100().dram.latency.seconds(), 1e-12);
  const auto linear = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{1, 1235, 15}), h100()).front();
  EXPECT_TRUE(contains(linear.name, "gemvx")) << linear.name;
  EXPECT_EQ(linear.grid.x, 20);  // ceil(1235 / 64)
}

TEST(GemmModelTest, SmallMRunsGemmSnOnHopper) {
  // ops3_h100.csv: fp32 16x10624x2528 ran gemmSN_NN on 166x4 CTAs of 256 threads; GPT-2's
  // lm_head (4 x 50257 x 768, rows of an odd number of bf16) gemmSN_TN on 6283 CTAs of 128.
  const auto nn = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{16, 10624, 2528}), h100());
  ASSERT_EQ(nn.size(), 1u);
  EXPECT_TRUE(contains(nn[0].name, "gemmSN_NN")) << nn[0].name;
  EXPECT_EQ(testing::dims(nn[0].grid), "166x4x1");
  const auto tn = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{4, 50257, 768}), h100());
  ASSERT_EQ(tn.size(), 1u);
  EXPECT_TRUE(contains(tn[0].name, "gemmSN_TN")) << tn[0].name;
  EXPECT_EQ(testing::dims(tn[0].grid), "6283x1x1");
  // Aligned 16-bit rows keep nvjet; other chips keep their own kernels.
  EXPECT_TRUE(contains(lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{4, 50256, 768}), h100())[0].name, "nvjet"));
  EXPECT_FALSE(contains(lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{4, 50257, 768}), preset("a100"))[0].name, "gemmSN"));
  // 16-bit NN products of single-element rows: gemmSN however few its CTAs up to K = 512
  // (5x256x405), deeper only up to 13 rows and wider than 4,096 columns (13x5340x1137;
  // 8x2190x2539, 11x2375x1580 and 16x1195x6675 ran the tiled kernel).
  const auto nn16 = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{m, n, k}), h100()).front().name;
  };
  EXPECT_TRUE(contains(nn16(5, 256, 405), "gemmSN_NN")) << nn16(5, 256, 405);
  EXPECT_TRUE(contains(nn16(13, 5340, 1137), "gemmSN_NN")) << nn16(13, 5340, 1137);
  EXPECT_FALSE(contains(nn16(8, 2190, 2539), "gemmSN")) << nn16(8, 2190, 2539);
  EXPECT_FALSE(contains(nn16(11, 2375, 1580), "gemmSN")) << nn16(11, 2375, 1580);
  EXPECT_FALSE(contains(nn16(15, 7791, 2437), "gemmSN")) << nn16(15, 7791, 2437);
  // Each thread keeps 6 bytes in flight for 16-bit NN (256 threads), 12 for fp32 NN (128 threads
  // for narrow, shallow products: 7x5x8 as measured).
  const auto sn16 = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{5, 256, 405}), h100());
  EXPECT_DOUBLE_EQ(sn16[0].ctas.front().work.max_inflight_bytes, 256.0 * 6.0);
  const auto sn32 = lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{7, 5, 8}), h100());
  EXPECT_DOUBLE_EQ(sn32[0].ctas.front().work.max_inflight_bytes, 128.0 * 12.0);
  // The grid's y splits the rows (the kernels' template arguments): 1 CTA up to 5 rows, 2 up to
  // 14, 4 above (ops3-16_h100.csv: 3x59x109 on 1x1, 14x2x359 on 1x2, 16x16x16 on 1x4).
  const auto grid = [](DType d, std::int64_t m, std::int64_t n, std::int64_t k) {
    return testing::dims(lower(Op(OpKind::kMatmul, d, MatmulShape{m, n, k}), h100())[0].grid);
  };
  EXPECT_EQ(grid(DType::kBf16, 3, 59, 109), "1x1x1");
  EXPECT_EQ(grid(DType::kBf16, 14, 2, 359), "1x2x1");
  EXPECT_EQ(grid(DType::kFp32, 16, 16, 16), "1x4x1");
  // Its threads walk K in turn, 4 K groups for 256 threads: a fifth of a DRAM round trip a step,
  // one before the first (the TN kernel's exact instances stream instead).
  const auto chain = [](std::int64_t k) {
    return lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{4, 4, k}), h100())[0]
        .ctas.front().work.critical_path.ps();
  };
  const double step = 0.2 * static_cast<double>(h100().dram.latency.ps());
  EXPECT_EQ(chain(287) - chain(7), static_cast<std::int64_t>(70 * step));
  EXPECT_EQ(tn[0].ctas.front().work.critical_path.ps(), 0);
  // Outer products (K = 1) run the tiled kernels whatever the dtype (3x13698x1 bf16, 5x473x1 fp32).
  EXPECT_TRUE(contains(nn16(3, 13698, 1), "cutlass_75_tensorop")) << nn16(3, 13698, 1);
  EXPECT_FALSE(contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{5, 473, 1}), h100())[0].name, "gemmSN"));
  // 16-bit F.linear of short K: gemmSN up to 16 columns (6x15x6), the tiled kernels wider
  // (10x119x34, 2x285x14).
  const auto tn16 = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{m, n, k, false}), h100()).front().name;
  };
  EXPECT_TRUE(contains(tn16(6, 15, 6), "gemmSN_TN")) << tn16(6, 15, 6);
  EXPECT_TRUE(contains(tn16(10, 119, 34), "cutlass_75_tensorop")) << tn16(10, 119, 34);
  EXPECT_TRUE(contains(tn16(2, 285, 14), "cutlass_75_tensorop")) << tn16(2, 285, 14);
  // Deeper ones keep gemmSN while its CTAs (8 columns) are at least a thread's K steps (16 K
  // groups): 4x3920x4031 and 3x4526x2325 ran it, 11x453x9287 and 3x1292x4257 cutlass_75.
  EXPECT_TRUE(contains(tn16(4, 3920, 4031), "gemmSN_TN")) << tn16(4, 3920, 4031);
  EXPECT_TRUE(contains(tn16(3, 4526, 2325), "gemmSN_TN")) << tn16(3, 4526, 2325);
  EXPECT_TRUE(contains(tn16(11, 453, 9287), "cutlass_75_tensorop")) << tn16(11, 453, 9287);
  EXPECT_TRUE(contains(tn16(3, 1292, 4257), "cutlass_75_tensorop")) << tn16(3, 1292, 4257);
  // Its threads keep 10 bytes in flight; the padded instances (3 rows on the 4-row one) also walk
  // K / 16 steps at half a DRAM round trip each, one before the first.
  const auto tn_work = [](std::int64_t m) {
    return lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{m, 4526, 2325, false}), h100())
        .front()
        .ctas.front()
        .work;
  };
  EXPECT_DOUBLE_EQ(tn_work(4).max_inflight_bytes, 128.0 * 10);
  EXPECT_DOUBLE_EQ(tn_work(3).max_inflight_bytes, 128.0 * 10);
  EXPECT_EQ(tn_work(4).critical_path.ps(), 0);
  const double lat = static_cast<double>(h100().dram.latency.ps());
  EXPECT_NEAR(static_cast<double>(tn_work(3).critical_path.ps()), (1.0 + 146 * 0.5) * lat, 1.0);
}

TEST(GemmModelTest, DeepNarrowLinearRunsGemmSnInItsTwoWindows) {
  // Issue 16's twenty-third round, sets 3-40 (alike on both chips): deep 16-bit F.linear narrower
  // than K / 2 runs gemmSN for 2-4 rows on 12 or more CTAs with at most 1.5 M weights, and for
  // 6-16 rows on at most 8 CTAs up to K = 4,500; cutlass_75's split-K otherwise (and for 5 rows).
  const auto tn16 = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{m, n, k, false}), h100())
        .front()
        .name;
  };
  for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{{2, 109, 6072},
                                                                      {2, 620, 1693},
                                                                      {3, 156, 2707},
                                                                      {4, 95, 1528},
                                                                      {7, 28, 4411},
                                                                      {13, 25, 1184},
                                                                      {11, 7, 754}}) {
    EXPECT_TRUE(contains(tn16(m, n, k), "gemmSN_TN")) << m << "x" << n << "x" << k;
  }
  for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{{3, 59, 9591},
                                                                      {2, 433, 6085},
                                                                      {4, 819, 2776},
                                                                      {14, 21, 7414},
                                                                      {11, 196, 1129},
                                                                      {5, 42, 4011}}) {
    EXPECT_TRUE(contains(tn16(m, n, k), "cutlass_75_tensorop")) << m << "x" << n << "x" << k;
  }
  // Its grids as measured: one CTA row group of 10 or 14 rows, two of 6 for 11-12 rows and two of
  // 8 for 15-16 (10x10x7 on 2x1, 13x3x442 on 1x1, 11x5x13 and 15x3x2 on 1x2), with the shared
  // memory of the instance's rows (13x3x442: 22.5 KiB).
  const auto tn = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{m, n, k, false}), h100()).front();
  };
  EXPECT_EQ(testing::dims(tn(10, 10, 7).grid), "2x1x1");
  EXPECT_EQ(testing::dims(tn(13, 3, 442).grid), "1x1x1");
  EXPECT_EQ(testing::dims(tn(11, 5, 13).grid), "1x2x1");
  EXPECT_EQ(testing::dims(tn(15, 3, 2).grid), "1x2x1");
  EXPECT_EQ(tn(13, 3, 442).smem_per_cta, 23040);
  // The padded 14-row instance on 4 CTAs (13x25x1184) walks 74 steps of half a round trip: 13 us
  // of its 15.9 measured on the H100, where cutlass_75's split-K had given 6.6.
  const auto deep =
      lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{13, 25, 1184, false}), h100());
  EXPECT_NEAR(static_cast<double>(deep.front().ctas.front().work.critical_path.ps()) / 1e6,
              (1.0 + 74 * 0.5) * static_cast<double>(h100().dram.latency.ps()) / 1e6, 0.01);
  // The 6-row instance steps at about a third of a round trip (6x6x2899 on one CTA, 24.2 us).
  const auto six = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{6, 6, 2899, false}), h100());
  EXPECT_NEAR(static_cast<double>(six.front().ctas.front().work.critical_path.ps()) / 1e6,
              (1.0 + 182 * 0.35) * static_cast<double>(h100().dram.latency.ps()) / 1e6, 0.01);
}

TEST(GemmModelTest, SingleSixteenBitDotProductRunsDotKernelOn496Ctas) {
  // Sets 3-40, both chips: a 1x1xK bf16 or fp16 matmul ran dot_kernel on 496 CTAs whatever K (1,
  // 3, 644, 1950) and reduce_1Block_kernel over their partials, 3.4-4.2 us in all.
  for (const std::int64_t k : {1, 644, 1950}) {
    const auto l = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, 1, k}), h100());
    ASSERT_EQ(l.size(), 2u) << k;
    EXPECT_TRUE(contains(l[0].name, "dot_kernel")) << l[0].name;
    EXPECT_EQ(l[0].grid.count(), 496) << k;
    EXPECT_TRUE(contains(l[1].name, "reduce_1Block_kernel")) << l[1].name;
  }
  // fp32's one-element product stays on the GEMV.
  EXPECT_FALSE(
      contains(lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{1, 1, 41}), h100())[0].name,
               "dot_kernel"));
}

TEST(GemmModelTest, BiasedAlign1ProductsOfManyRowsCutFewerSlices) {
  // Sets 3-40: F.linear with a bias on the align1 kernel over a few tiles keeps the parallel split
  // and its reduce, but more than 8 rows cut about 0.4 as many slices as without, at most 21
  // (43x43x4415 -> 21, 60x177x746 -> 7 measured; the estimate alone split 69 and 9-12 ways).
  const auto split = [](std::int64_t m, std::int64_t n, std::int64_t k, bool bias) {
    const auto l = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{m, n, k, bias}), h100());
    EXPECT_TRUE(contains(l.front().name, "cutlass_75_tensorop")) << l.front().name;
    EXPECT_TRUE(contains(l.back().name, "splitKreduce_kernel")) << l.back().name;
    return l.front().grid.count() / (((m + 63) / 64) * ((n + 63) / 64));
  };
  const std::int64_t deep = split(43, 43, 4415, true);
  EXPECT_GE(deep, 16);
  EXPECT_LE(deep, 21);
  EXPECT_LE(2 * split(60, 177, 746, true), split(60, 177, 746, false));
}

TEST(GemmModelTest, MatmulRowGemvThreadsWalkTheirShareOfK) {
  // A 16-bit matmul's one-row product on the long GEMV variant: each output's threads (32 of them
  // on 4x32 blocks, 4 on 32x4) walk K / threads steps a tenth of a DRAM round trip apart (sets
  // 3-40: 1x2x1063 on one CTA in 3.7 us, where streaming alone gave 2.9).
  const auto work = [](std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, n, k}), h100())
        .front()
        .ctas.front()
        .work;
  };
  const double lat = static_cast<double>(h100().dram.latency.ps());
  EXPECT_NEAR(static_cast<double>(work(113, 893).critical_path.ps()), 0.1 * 893.0 / 32.0 * lat,
              2.0);
  EXPECT_NEAR(static_cast<double>(work(10246, 799).critical_path.ps()), 0.1 * 799.0 / 4.0 * lat,
              2.0);
}

TEST(GemmModelTest, WideShallowFp16GemmSnRunsTheSmallerInstance) {
  // Sets 3-40: fp16's wide, shallow NN products ran gemmSN's 128-thread instance (4x2282x31,
  // 2x13817x26), bf16's the 256-thread one (3x14277x20): half the K groups, twice the steps.
  const auto launch = [](DType d, std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, d, MatmulShape{m, n, k}), h100()).front();
  };
  EXPECT_EQ(launch(DType::kFp16, 4, 2282, 31).block.x, 128);
  EXPECT_EQ(launch(DType::kFp16, 2, 13817, 26).block.x, 128);
  EXPECT_EQ(launch(DType::kBf16, 3, 14277, 20).block.x, 256);
  EXPECT_EQ(launch(DType::kFp16, 6, 4439, 136).block.x, 256);
  EXPECT_GT(launch(DType::kFp16, 4, 2282, 31).ctas.front().work.critical_path.ps(),
            launch(DType::kBf16, 4, 2282, 31).ctas.front().work.critical_path.ps());
}

TEST(GemmModelTest, OneRowOuterProductsRunTheTiledKernel) {
  // Sets 3-40: a 16-bit 1xNx1 product ran cutlass_75's 64x64 tiles (as Mx1x1 does), not a GEMV.
  for (const auto& op : {Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, 808, 1}),
                         Op(OpKind::kMatmul, DType::kFp16, MatmulShape{1, 2188, 1}),
                         Op(OpKind::kLinear, DType::kBf16, LinearShape{1, 14304, 1, false})}) {
    const auto name = lower(op, h100()).front().name;
    EXPECT_TRUE(contains(name, "cutlass_75_tensorop")) << name;
  }
}

TEST(GemmModelTest, NarrowGemv2NRowsStepFasterThanWide) {
  // gemv2N's thread waits on DRAM where its step enters a new 32-byte sector of W's rows: 1x2x25
  // (4 bytes a row) steps at a third of 1x66x37's pace (2.9 and 5.7 us measured on the H100).
  const auto chain = [](std::int64_t n, std::int64_t k) {
    const auto l = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1, n, k}), h100()).front();
    EXPECT_TRUE(contains(l.name, "gemv2N")) << l.name;
    return static_cast<double>(l.ctas.front().work.critical_path.ps()) / static_cast<double>(k);
  };
  EXPECT_NEAR(chain(2, 25) / chain(66, 37), 0.35, 0.01);
  EXPECT_NEAR(chain(11, 29) / chain(66, 37), 22.0 / 32.0, 0.01);
}

TEST(GemmModelTest, SixteenBitGemv2TKeepsFewerBytesInFlight) {
  // gemv2T streams 16-bit rows at 1.2-1.6 TB/s and tf32 ones at 1.9-2.1 (sets 3-40, H100):
  // about 10 bytes a thread in flight for 16-bit, two 16-byte loads for tf32.
  const auto inflight = [](DType d) {
    const auto l = lower(Op(OpKind::kMatmul, d, MatmulShape{8547, 1, 7995}), h100()).front();
    EXPECT_TRUE(contains(l.name, "gemv2T")) << l.name;
    return l.ctas.front().work.max_inflight_bytes;
  };
  EXPECT_DOUBLE_EQ(inflight(DType::kBf16), 128.0 * 10.0);
  EXPECT_DOUBLE_EQ(inflight(DType::kTf32), 128.0 * 32.0);
}

TEST(GemmModelTest, FewRowProductsWithinTwoToTheTwentyOneRunUnsplit) {
  // The few-row probe (small_gemm_h200.json.gz): bf16 matmuls of 2-3 rows with 2- or 4-element
  // rows run the wmma 32x32 kernel unsplit, 4-5 rows gemmSN, while M x N x K stays within 2^21
  // (2x12x9468 on one CTA in 150 us); beyond, they split K (2x172x9468).
  const auto l = [](DType d, std::int64_t m, std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, d, MatmulShape{m, n, k}), h100());
  };
  const auto wmma = l(DType::kBf16, 2, 12, 9468);
  ASSERT_EQ(wmma.size(), 1u);
  EXPECT_TRUE(contains(wmma[0].name, "wmma")) << wmma[0].name;
  EXPECT_EQ(wmma[0].grid.z, 1);
  const auto sn = l(DType::kBf16, 4, 100, 4012);
  EXPECT_TRUE(contains(sn.front().name, "gemmSN_NN")) << sn.front().name;
  EXPECT_DOUBLE_EQ(sn.front().ctas.front().work.max_inflight_bytes, 256.0 * 10.0);
  EXPECT_GT(l(DType::kBf16, 2, 172, 9468).size(), 1u);  // split, with the reduce
  EXPECT_FALSE(contains(l(DType::kFp16, 5, 2, 1636).front().name, "gemmSN"));
}

TEST(GemmModelTest, Fp32MatmulRowsOfTwoKThreadsWalkHalfOfK) {
  // fp32 one-row matmuls on gemvx's 64x2 blocks around K = 300 and 32x2 blocks for 600-3,500
  // outputs up to K = 1,150 (the few-row probe; 1x999x1123 in 15.4 us): each thread walks K / 2
  // steps at 0.07 of a round trip, 56 bytes in flight.
  const auto l = [](std::int64_t n, std::int64_t k) {
    return lower(Op(OpKind::kMatmul, DType::kFp32, MatmulShape{1, n, k}), h100()).front();
  };
  const double lat = static_cast<double>(h100().dram.latency.ps());
  const auto wide = l(999, 1123);
  EXPECT_EQ(wide.block.x, 64);
  EXPECT_EQ(wide.grid.x, 32);
  EXPECT_NEAR(static_cast<double>(wide.ctas.front().work.critical_path.ps()),
              0.07 / 2.0 * 1123 * lat, 2.0);
  EXPECT_EQ(l(2938, 296).block.x, 128);
  EXPECT_EQ(l(2938, 296).grid.x, 46);                             // 64 outputs a CTA
  EXPECT_EQ(l(10, 791).ctas.front().work.critical_path.ps(), 0);  // 4x32 blocks: unchanged
}

TEST(GemmModelTest, DeepProductsWithFewGemmSnCtasSplitATiledKernel) {
  // ops4_h100.csv.gz: 12x19x5802 bf16 (odd rows) would give gemmSN 2 CTAs; cuBLAS ran the align1
  // tiled kernel split 242 ways and the reduce kernel. Short K keeps gemmSN (3x59x109).
  const auto deep = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{12, 19, 5802}), h100());
  ASSERT_EQ(deep.size(), 2u);
  EXPECT_TRUE(contains(deep[0].name, "cutlass_75_tensorop")) << deep[0].name;
  EXPECT_GT(deep[0].grid.count(), 16);  // more slices than the nvjet kernels' 16
  EXPECT_TRUE(contains(deep[1].name, "splitKreduce_kernel"));
  // The reduce walks its partials: deeper splits take longer on the critical path.
  EXPECT_GT(deep[1].ctas.front().work.critical_path.ps(), 4 * h100().l2.hit_latency.ps());
  EXPECT_TRUE(contains(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{3, 59, 109}), h100())[0].name,
                       "gemmSN_NN"));
}

TEST(GemmModelTest, ShallowestAlign1ProductsPickByRowsColumnsAndTiles) {
  // The shallow probe (validation/data/shallow_gemm_h200.json.gz), K of 2-8, bf16 single-element
  // rows. The kernel and whether a reduce follows (and its partials' type):
  const auto kernels = [](OpKind kind, std::int64_t m, std::int64_t n, std::int64_t k) {
    const auto ls = kind == OpKind::kLinear
                        ? lower(Op(kind, DType::kBf16, LinearShape{m, n, k, false}), h100())
                        : lower(Op(kind, DType::kBf16, MatmulShape{m, n, k}), h100());
    std::string out = ls[0].name;
    if (ls.size() > 1) out += " + " + ls[1].name;
    return out;
  };
  const auto plain64 = [](const std::string& n) {
    return contains(n, "s1688gemm_bf16_64x64") && !contains(n, "splitKreduce");
  };
  // At least 200 rows and 400 columns over at most 1.1 waves of 64x64 tiles: the plain kernel
  // (222x897x2 in 3.0 us where the split-K variant and its reduce take 4.5).
  EXPECT_TRUE(plain64(kernels(OpKind::kMatmul, 222, 897, 2))) << kernels(OpKind::kMatmul, 222, 897, 2);
  EXPECT_TRUE(plain64(kernels(OpKind::kMatmul, 376, 1501, 4)));
  // F.linear from 128 rows and 200 columns, or of at most 16 rows from 512 columns.
  EXPECT_TRUE(plain64(kernels(OpKind::kLinear, 145, 419, 7)));
  EXPECT_TRUE(plain64(kernels(OpKind::kLinear, 16, 568, 3)));
  // Fewer rows keep the 64x64 variant and its reduce; 200-400 columns the 128x128 variant with
  // fp32 partials (F.linear of 65-127 rows from 200 columns too).
  const auto few = kernels(OpKind::kMatmul, 145, 957, 4);
  EXPECT_TRUE(contains(few, "s1688gemm_bf16_64x64") && contains(few, "splitKreduce")) << few;
  for (const auto& n : {kernels(OpKind::kMatmul, 500, 259, 7), kernels(OpKind::kLinear, 100, 957, 3)}) {
    EXPECT_TRUE(contains(n, "tensorop_s1688gemm_bf16_128x128") &&
                contains(n, "splitKreduce_kernel<32, 16, int, float"))
        << n;
  }
  // More tiles, fewer than 2^21 outputs: bf16 partials (2000x419x4), from K = 4 only for at least
  // 256 columns (8193x232x5 ran the plain kernel).
  const auto many = kernels(OpKind::kMatmul, 2000, 419, 4);
  EXPECT_TRUE(contains(many, "s1688gemm_bf16_128x128") &&
              contains(many, "splitKreduce_kernel<32, 16, int, __nv_bfloat16"))
      << many;
  EXPECT_FALSE(contains(kernels(OpKind::kMatmul, 8193, 232, 5), "splitKreduce"));
  // F.linear of 6-16 rows and up to 64 columns runs gemmSN (7x51x3), fewer rows cutlass_75.
  EXPECT_TRUE(contains(kernels(OpKind::kLinear, 7, 51, 3), "gemmSN_TN"));
  EXPECT_FALSE(contains(kernels(OpKind::kLinear, 5, 21, 5), "gemmSN"));
}

TEST(GemmModelTest, ShallowAlign1ProductsTakeTheSplitKVariant) {
  // Sets 3-7 (H100): K of 2-8 over one wave ran the align1 kernel with fp32 partials and the
  // reduce (8314x13x2: 130 CTAs, then splitKreduce); K of 9-80 over few tiles, slices of about 8
  // (1029x6x17: 17 tiles x 3 slices); more tiles, or K = 1, or a bias: one bf16 kernel.
  const auto k2 = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{8314, 13, 2}), h100());
  ASSERT_EQ(k2.size(), 2u);
  EXPECT_TRUE(contains(k2[0].name, "_align1")) << k2[0].name;
  EXPECT_EQ(k2[0].grid.count(), 130);
  EXPECT_EQ(k2[0].writes.front().tensor, "op0.splitk_workspace");
  EXPECT_TRUE(contains(k2[1].name, "splitKreduce_kernel")) << k2[1].name;
  const auto k17 = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1029, 6, 17}), h100());
  ASSERT_EQ(k17.size(), 2u);
  EXPECT_EQ(k17[0].grid.count(), 17 * 3);
  EXPECT_TRUE(contains(k17[1].name, "splitKreduce_kernel"));
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{1901, 63, 23}), h100()).size(), 1u);
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{9083, 10, 1}), h100()).size(), 1u);
  EXPECT_EQ(lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{1029, 6, 17, true}), h100()).size(), 1u);
  // Tall products of at most 19 columns split over more tiles while the launch stays within 4.5
  // waves: 5829x13x20 (92 tiles) -> 3 slices; 13086x11x22 (205 tiles, 615 CTAs) unsplit.
  const auto tall = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{5829, 13, 20}), h100());
  ASSERT_EQ(tall.size(), 2u);
  EXPECT_EQ(tall[0].grid.count(), 92 * 3);
  EXPECT_EQ(lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{13086, 11, 22}), h100()).size(),
            1u);
  // Deeper products of few tiles, K up to 264, keep the slices of 8 (sets 3-33: 19x172x125 on 3
  // tiles -> 16 slices, 40x259x115 -> 15), however the estimate would split them.
  const auto k125 = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{19, 172, 125}), h100());
  ASSERT_EQ(k125.size(), 2u);
  EXPECT_EQ(k125[0].grid.count(), 3 * 16);
  EXPECT_TRUE(contains(k125[1].name, "splitKreduce_kernel"));
  const auto k115 =
      lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{40, 259, 115, false}), h100());
  ASSERT_EQ(k115.size(), 2u);
  EXPECT_EQ(k115[0].grid.count(), 5 * 15);
  // Nor products of 5 rows or fewer: 2x285x14 and 3x138x3 ran one bf16 kernel, 7x460x5 the variant.
  EXPECT_EQ(lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{2, 285, 14, false}), h100()).size(), 1u);
  EXPECT_EQ(lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{3, 138, 3, false}), h100()).size(), 1u);
  EXPECT_EQ(lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{7, 460, 5, false}), h100()).size(), 2u);
  // The register-staged kernel sets up no tensor maps and its first loads wait in its K-step
  // chain: four DRAM round trips less before it than base_work's, where its element stores
  // wait instead, after the mainloop (one-step align1 kernels of a few CTAs: 2.8-3.1 us
  // measured); the TMA kernels' first loads wait in their chain for one round trip of theirs.
  // Both charge their first wave's misses the queue (prologue_loads).
  const auto one = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{178, 2, 1}), h100());
  const auto tma = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{176, 8, 8}), h100());
  ASSERT_TRUE(contains(tma[0].name, "nvjet")) << tma[0].name;
  const double stores_ps = 32 * 20.0 / h100().clocks.sustained_other_hz * 1e12;  // 64x64 tile
  EXPECT_NEAR(static_cast<double>(one[0].ctas.front().work.fixed.ps() +
                                  3 * h100().dram.latency.ps()) - stores_ps,
              static_cast<double>(tma[0].ctas.front().work.fixed.ps()), 2.0);
  EXPECT_TRUE(one[0].prologue_loads);
  EXPECT_TRUE(tma[0].prologue_loads);
}

TEST(GemmModelTest, BiasOnSingleElementRowsSplitsSeriallyInTheKernel) {
  // ops3_h100.csv: F.linear 769x2x975 with a bias ran a memset and the align1 kernel on 13 x 3
  // CTAs, no reduce kernel; without the bias the split is parallel, with splitKreduce.
  const auto bias = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{769, 2, 975, true}), h100());
  ASSERT_EQ(bias.size(), 2u);
  EXPECT_EQ(bias[0].name, "Memset (Device)");
  EXPECT_TRUE(contains(bias[1].name, "_align1")) << bias[1].name;
  // 64x64 tiles, one column of them: slices of about 256, ceil(975 / 256) = 4, as measured 3.
  EXPECT_EQ(bias[1].grid.count(), 13 * 4);
  EXPECT_EQ(bias[1].reads.back().tensor, "op0.bias");
  EXPECT_EQ(bias[1].writes.front().tensor, "op0.y");  // the slices add into the output
  const auto plain = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{769, 2, 975, false}), h100());
  EXPECT_TRUE(contains(plain.back().name, "splitKreduce_kernel")) << plain.back().name;
  // Few tiles in more than one column keep the parallel split, and its reduce adds the bias
  // (ops6_h100.csv.gz: 5x83x6104 ran 64 slices and splitKreduce_kernel).
  const auto few = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{5, 83, 6104, true}), h100());
  EXPECT_NE(few.front().name, "Memset (Device)");
  EXPECT_TRUE(contains(few.back().name, "splitKreduce_kernel")) << few.back().name;
  EXPECT_EQ(few.back().reads.back().tensor, "op0.bias");
  // Many tiles split serially, slices of about 768 (ops3_h100.csv: 1917x71x547, 60 tiles, 2 ways).
  const auto many = lower(Op(OpKind::kLinear, DType::kBf16, LinearShape{1917, 71, 547, true}), h100());
  ASSERT_EQ(many.size(), 2u);
  EXPECT_EQ(many[0].name, "Memset (Device)");
  EXPECT_EQ(many[1].grid.count(), 30 * 2 * 2);
  // The align1 kernel's K steps are a chain: the same tile, twice the depth, twice the steps'
  // path; its element stores (20 cycles each of a thread's 32) follow them once, in the fixed
  // time after the mainloop.
  const auto k1 = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{6160, 153, 96}), h100());
  const auto k2 = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{6160, 153, 192}), h100());
  EXPECT_TRUE(contains(k1[0].name, "64x64")) << k1[0].name;
  EXPECT_EQ(k2[0].grid.count(), k1[0].grid.count());
  const auto& w1 = k1[0].ctas.front().work;
  const auto& w2 = k2[0].ctas.front().work;
  EXPECT_NEAR(static_cast<double>(w2.critical_path.ps()),
              2.0 * static_cast<double>(w1.critical_path.ps()), 4.0);
  EXPECT_EQ(w2.fixed, w1.fixed);
  const double stores_ps = 20.0 * 32.0 / h100().clocks.sustained_other_hz * 1e12;
  EXPECT_GT(static_cast<double>(w1.fixed.ps()), stores_ps);
  // Each step's loads are issued in turn with the other CTAs on the SM: the issue part grows
  // with the depth too, over the epilogue's stores that both have once.
  EXPECT_GT(w2.issue_path.ps(), w1.issue_path.ps());
  EXPECT_LT(w2.issue_path.ps(), 2 * w1.issue_path.ps());
}

TEST(GemmModelTest, WorkspaceMemsetsCostTheLaunchAlone) {
  // ops3_h100.csv: every workspace memset took 0.70-0.83 us, the launch; its CTA does no work,
  // but its bytes still enter L2's state.
  const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{8192, 8192, 8192}), h100());
  ASSERT_EQ(ls[0].name, "Memset (Device)");
  const hw::LaunchTotals t = totals(ls[0]);
  EXPECT_EQ(t.dram_write_bytes + t.l2_bytes + t.fp32_flops, 0.0);
  ASSERT_EQ(ls[0].writes.size(), 1u);
  EXPECT_GT(ls[0].writes[0].bytes, 0);
}

TEST(GemmModelTest, ChoiceRespondsToTheHardware) {
  // Fewer SMs: a persistent kernel's grid follows the SM count (and the tile choice may move).
  auto small = h100();
  small.sm_count = 66;
  const auto ls = lower(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{8192, 8192, 8192}), small);
  EXPECT_EQ(ls.back().grid.count(), 66);
  EXPECT_GE(totals(ls).tensor_flops, 2.0 * 8192 * 8192 * 8192);
}

// ---- elementwise --------------------------------------------------------------------------

TEST(ElementwiseModelTest, VectorizedKernelGeometryAndBytes) {
  // ops_h100.csv: vectorized_elementwise_kernel<8> for bf16, <4> for fp32, 128 threads,
  // 1024 elements per CTA; registers 34 (bf16 add), 40 (bf16 mul), 32 otherwise.
  const auto add = lower(Op(OpKind::kAdd, DType::kBf16, ElementwiseShape{1048576}), h100());
  ASSERT_EQ(add.size(), 1u);
  EXPECT_TRUE(contains(add[0].name, "vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>"));
  EXPECT_EQ(testing::dims(add[0].grid), "1024x1x1");
  EXPECT_EQ(testing::dims(add[0].block), "128x1x1");
  EXPECT_EQ(add[0].regs_per_thread, 34);
  EXPECT_DOUBLE_EQ(totals(add).dram_read_bytes, 2.0 * 1048576 * 2);
  EXPECT_DOUBLE_EQ(totals(add).dram_write_bytes, 1048576.0 * 2);

  const auto addf = lower(Op(OpKind::kAdd, DType::kFp32, ElementwiseShape{1048576}), h100());
  EXPECT_TRUE(contains(addf[0].name, "vectorized_elementwise_kernel<4,"));
  EXPECT_EQ(addf[0].grid.x, 1024);

  // A tail CTA with the remainder.
  const auto silu = lower(Op(OpKind::kSilu, DType::kBf16, ElementwiseShape{65537}), h100());
  EXPECT_EQ(silu[0].grid.x, 65);
  ASSERT_EQ(silu[0].ctas.size(), 2u);
  EXPECT_DOUBLE_EQ(totals(silu).sfu_ops, 2.0 * 65537);  // exp and reciprocal per element
  EXPECT_DOUBLE_EQ(totals(silu).dram_read_bytes, 65537.0 * 2);
}

TEST(ElementwiseModelTest, GeluIsIssueBoundWhereBandwidthOutrunsIt) {
  // Sets 3-13: large bf16 GELUs run at the same 1.34-1.46 ns per million elements on the H200 as
  // on the H100, where silu streams 30% faster on the H200: erff's issue slots, not its bytes.
  const auto fp32_vs_dram = [](const hw::HardwareSpec& hw) {
    const auto g = lower(Op(OpKind::kGelu, DType::kBf16, ElementwiseShape{120453093}), hw);
    return (totals(g).fp32_flops / hw.peak_fp32_flops()) /
           ((totals(g).dram_read_bytes + totals(g).dram_write_bytes) / hw.dram.achievable_bandwidth());
  };
  EXPECT_GT(fp32_vs_dram(preset("h200")), 1.0);
  EXPECT_LT(fp32_vs_dram(h100()), 1.0);
}

TEST(ElementwiseModelTest, BranchyFunctorsRunTheirElementsAsAChain) {
  // silu's IEEE division and gelu's erff branch per element: a thread's eight elements run one
  // after another once its loads arrive (sets 3-23: small launches 0.3-0.5 us over their loads).
  const auto& hw = h100();
  const auto chain = [&](OpKind k, std::int64_t n) {
    const auto l = lower(Op(k, DType::kBf16, ElementwiseShape{n}), hw);
    return l[0].ctas.back().work.critical_path.seconds() - hw.dram.latency.seconds();
  };
  const double cycle = 1.0 / hw.clocks.sustained_other_hz;
  EXPECT_NEAR(chain(OpKind::kSilu, 1024), 8 * 130 * cycle, 1e-12);  // a full CTA: 8 a thread
  EXPECT_NEAR(chain(OpKind::kSilu, 1025), 1 * 130 * cycle, 1e-12);  // its tail CTA: one
  EXPECT_NEAR(chain(OpKind::kGelu, 1024), 8 * 90 * cycle, 1e-12);
  const auto mul = lower(Op(OpKind::kMul, DType::kBf16, ElementwiseShape{1024}), hw);
  EXPECT_EQ(mul[0].ctas[0].work.critical_path.seconds(), 0.0);  // interleaved: hidden
  // So a small silu outlasts a small multiply of more bytes.
  const auto small = [&](OpKind k) {
    return simulated_us(lower(Op(k, DType::kBf16, ElementwiseShape{8192}), hw));
  };
  const double silu_us = small(OpKind::kSilu);
  const double mul_us = small(OpKind::kMul);
  EXPECT_GT(silu_us, mul_us + 0.3);
}

TEST(ElementwiseModelTest, CastsPickTheirKernels) {
  // fp32 -> bf16: bfloat16_copy_kernel_cuda, vectorized <8>; bf16 -> fp32: the unrolled
  // kernel with LoadWithCast, 512 elements per CTA (ops_h100.csv: grid 128 for 65536).
  const auto down = lower(Op(OpKind::kCast, DType::kBf16, CastShape{65536, DType::kFp32, DType::kBf16}), h100());
  EXPECT_TRUE(contains(down[0].name, "vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda"));
  EXPECT_EQ(down[0].grid.x, 64);
  const auto up = lower(Op(OpKind::kCast, DType::kFp32, CastShape{65536, DType::kBf16, DType::kFp32}), h100());
  EXPECT_TRUE(contains(up[0].name, "unrolled_elementwise_kernel"));
  EXPECT_EQ(up[0].grid.x, 128);
  EXPECT_DOUBLE_EQ(totals(up).dram_read_bytes, 65536.0 * 2);
  EXPECT_DOUBLE_EQ(totals(up).dram_write_bytes, 65536.0 * 4);
}

TEST(ElementwiseModelTest, SplitsForThirtyTwoBitIndexing) {
  // 8 x 12 x 4096 x 4096 fp32 = 6.4 GB: TensorIterator halves it twice (ops_h100.csv: four
  // launches of 393216 CTAs for naive attention's scale at S = 4096).
  const std::int64_t n = 8LL * 12 * 4096 * 4096;
  const auto ls = lower(Op(OpKind::kMul, DType::kFp32, ElementwiseShape{n}), h100());
  ASSERT_EQ(ls.size(), 4u);
  for (const auto& l : ls) EXPECT_EQ(l.grid.x, 393216);
  EXPECT_DOUBLE_EQ(totals(ls).dram_write_bytes, static_cast<double>(n) * 4);
}

// ---- row reductions -----------------------------------------------------------------------

TEST(RowReductionModelTest, LayerNormVectorizedAndFallback) {
  // C % 4 == 0: one launch, grid R, block (32, 4), 24 B (ops_h100.csv).
  const auto v = lower(Op(OpKind::kLayerNorm, DType::kBf16, RowShape{2048, 4096}), h100());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(testing::dims(v[0].grid), "2048x1x1");
  EXPECT_EQ(testing::dims(v[0].block), "32x4x1");
  EXPECT_EQ(v[0].smem_per_cta, 24);
  EXPECT_EQ(v[0].regs_per_thread, 32);
  // X, gamma and beta once; Y plus mean and rstd per row.
  EXPECT_DOUBLE_EQ(totals(v).dram_read_bytes, 2048.0 * 4096 * 2 + 2 * 4096.0 * 2);
  EXPECT_DOUBLE_EQ(totals(v).dram_write_bytes, 2048.0 * 4096 * 2 + 2048.0 * 8);
  EXPECT_DOUBLE_EQ(totals(v).sfu_ops, 2048.0 * (4096 + 1));  // Welford's 1/n per element, rsqrt per row

  // C = 50257: RowwiseMomentsCUDAKernel (512 threads, 768 B) then LayerNormForwardCUDAKernel.
  const auto f = lower(Op(OpKind::kLayerNorm, DType::kBf16, RowShape{512, 50257}), h100());
  ASSERT_EQ(f.size(), 2u);
  EXPECT_TRUE(contains(f[0].name, "RowwiseMomentsCUDAKernel"));
  EXPECT_EQ(f[0].block.x, 512);
  EXPECT_EQ(f[0].smem_per_cta, 768);
  EXPECT_TRUE(contains(f[1].name, "LayerNormForwardCUDAKernel"));
  EXPECT_EQ(f[1].block.x, 256);
  // Every moments CTA waits on its block-wide Welford reduction, however short its row (short
  // rows took 2.5-2.9 us per CTA, ops3_h100.csv); longer rows add their chunks.
  const auto s97 = lower(Op(OpKind::kLayerNorm, DType::kBf16, RowShape{16572, 97}), h100());
  const double latency = h100().dram.latency.seconds();
  EXPECT_GE(s97[0].ctas[0].work.critical_path.seconds(), 5.0 * latency);
  EXPECT_GT(f[0].ctas[0].work.critical_path, s97[0].ctas[0].work.critical_path);
  EXPECT_GT(f[1].ctas[0].work.critical_path, s97[1].ctas[0].work.critical_path);

  // rms_norm: the fused kernel with rms_norm = true, 27 registers; no beta.
  const auto r = lower(Op(OpKind::kRmsNorm, DType::kBf16, RowShape{16, 4096}), h100());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(contains(r[0].name, "vectorized_layer_norm_kernel<c10::BFloat16, float, true>"));
  EXPECT_EQ(r[0].regs_per_thread, 27);
  EXPECT_DOUBLE_EQ(totals(r).dram_read_bytes, 16.0 * 4096 * 2 + 4096.0 * 2);
}

TEST(RowReductionModelTest, VectorizedNormPathsFollowTheirCombineAndLoop) {
  // One CTA's dependent path, in DRAM round trips: the combine across warps (RMSNorm's sums 1,
  // LayerNorm's Welford states 2.75) plus each 512-element vector's loop (2.2 and 2.7).
  const auto path = [](OpKind kind, std::int64_t C) {
    const auto l = lower(Op(kind, DType::kBf16, RowShape{8, C}), h100());
    return l[0].ctas[0].work.critical_path.seconds() / h100().dram.latency.seconds();
  };
  EXPECT_NEAR(path(OpKind::kRmsNorm, 128), 1.0 + 2.2, 1e-9);
  EXPECT_NEAR(path(OpKind::kLayerNorm, 128), 2.75 + 2.7, 1e-9);
  EXPECT_NEAR(path(OpKind::kRmsNorm, 4096), 1.0 + 8 * 2.2, 1e-9);
  EXPECT_NEAR(path(OpKind::kLayerNorm, 4096), 2.75 + 8 * 2.7, 1e-9);
  // Measured (sets 3-14, H100): a one-vector row of a few CTAs takes 2.0-2.2 us as RMSNorm
  // (6 x 24: 2.05) and 2.8-2.9 us as LayerNorm (6 x 292: 2.91); the simulated launches fall
  // within 10% of both.
  const auto us = [](OpKind kind, std::int64_t C) {
    return simulated_us(lower(Op(kind, DType::kBf16, RowShape{6, C}), h100()));
  };
  EXPECT_NEAR(us(OpKind::kRmsNorm, 24), 2.05, 0.2);
  EXPECT_NEAR(us(OpKind::kLayerNorm, 292), 2.91, 0.29);
}

TEST(RowReductionModelTest, LayerNormCombineTakesTurnsAtTheSchedulers) {
  // LayerNorm's Welford combine issues for 60 cycles a CTA, which the CTAs sharing an SM take in
  // turn; RMSNorm's sums have no such part. Measured (sets 3-33, H100): 13715 x 16 bf16 takes
  // 17.66 us, 104 CTAs an SM at one every 151 ns; without the turns gpusim ran it in 15.1.
  const auto ln = lower(Op(OpKind::kLayerNorm, DType::kBf16, RowShape{13715, 16}), h100());
  ASSERT_EQ(ln.size(), 1u);
  EXPECT_NEAR(ln[0].ctas[0].work.issue_path.seconds() * h100().clocks.sustained_other_hz, 60.0,
              1e-3);
  const auto rms = lower(Op(OpKind::kRmsNorm, DType::kBf16, RowShape{13715, 16}), h100());
  EXPECT_EQ(rms[0].ctas[0].work.issue_path.ps(), 0);
  EXPECT_NEAR(simulated_us(ln), 17.66, 0.05 * 17.66);
  auto no_turns = ln;
  for (auto& c : no_turns[0].ctas) c.work.issue_path = sim::Time();
  EXPECT_LT(simulated_us(no_turns), 0.9 * 17.66);
}

TEST(RowReductionModelTest, VectorizedNormRereadsFromDramWhenResidentRowsOverflowL2) {
  // 2112 resident rows (16 CTAs on 132 SMs) of 29.8 KB overflow the H100's 50 MB L2: the second
  // pass reads the row from DRAM again (15891 x 14888 measured at three row-passes of DRAM).
  const auto reads = [](const hw::HardwareSpec& hw, std::int64_t R, std::int64_t C) {
    return totals(lower(Op(OpKind::kLayerNorm, DType::kBf16, RowShape{R, C}), hw)).dram_read_bytes;
  };
  const double params = 2.0 * 14888 * 2;
  EXPECT_DOUBLE_EQ(reads(h100(), 15891, 14888), 2.0 * 15891 * 14888 * 2 + params);
  // Short rows fit: one read.
  EXPECT_DOUBLE_EQ(reads(h100(), 15891, 1024), 15891.0 * 1024 * 2 + 2.0 * 1024 * 2);
  // What-if: an L2 large enough for the resident rows keeps the re-read there.
  hw::HardwareSpec big = h100();
  big.l2.size = 256LL << 20;
  EXPECT_DOUBLE_EQ(reads(big, 15891, 14888), 15891.0 * 14888 * 2 + params);
}

TEST(RowReductionModelTest, SoftmaxPathsFollowHostSoftmax) {
  struct Case {
    std::int64_t R, C;
    DType d;
    const char* kernel;
    const char* grid;
    const char* block;
    std::int64_t smem;
  };
  const Case cases[] = {
      // ops_h100.csv
      {8192, 1024, DType::kBf16, "softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10,", "2048x1x1", "32x4x1", 0},
      {2048, 4096, DType::kBf16, "cunn_SoftMaxForwardReg<c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, 4>", "2048x1x1", "1024x1x1", 128},
      {512, 50257, DType::kBf16, "cunn_SoftMaxForward<8, c10::BFloat16", "512x1x1", "1024x1x1", 128},
      {20, 50257, DType::kBf16, "cunn_SoftMaxForward<8, c10::BFloat16", "20x1x1", "1024x1x1", 128},
      {24576, 512, DType::kFp32, "softmax_warp_forward<float, float, float, 9,", "6144x1x1", "32x4x1", 0},
      // SoftMax.cu rules, not measured: 10 registers' worth -> the shared-memory variant.
      {100, 10240, DType::kBf16, "cunn_SoftMaxForwardSmem<8, c10::BFloat16", "100x1x1", "1024x1x1", 10240 * 2 + 128},
      // rows of 64 elements: 32-thread warps, 2 rows per warp, 8 rows per CTA.
      {100, 64, DType::kBf16, "softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 6,", "13x1x1", "32x4x1", 0},
  };
  for (const auto& c : cases) {
    const auto ls = lower(Op(OpKind::kSoftmax, c.d, RowShape{c.R, c.C}), h100());
    ASSERT_EQ(ls.size(), 1u);
    EXPECT_TRUE(contains(ls[0].name, c.kernel)) << ls[0].name;
    EXPECT_EQ(testing::dims(ls[0].grid), c.grid) << c.C;
    EXPECT_EQ(testing::dims(ls[0].block), c.block) << c.C;
    EXPECT_EQ(ls[0].smem_per_cta, c.smem) << c.C;
    const double e = hw::bytes_per_element(c.d);
    // The three-pass kernel reads the row from DRAM in every pass when the rows in flight
    // overflow an SM's near L2 partition (264 rows of 100 KB: 26 MB against 25), else once.
    const double passes = contains(ls[0].name, "cunn_SoftMaxForward<") && c.R >= 264 ? 3.0 : 1.0;
    EXPECT_DOUBLE_EQ(totals(ls).dram_read_bytes, passes * static_cast<double>(c.R * c.C) * e);
    EXPECT_DOUBLE_EQ(totals(ls).dram_write_bytes, static_cast<double>(c.R * c.C) * e);
    EXPECT_DOUBLE_EQ(totals(ls).sfu_ops, static_cast<double>(c.R) * (c.C + 1));  // exp + 1/sum
  }
}

// cunn_SoftMaxForwardReg's registers as measured (sets 3-17): above 6 elements a thread its
// 1024-thread CTA needs more than half an SM's registers, so one runs an SM instead of two; its
// chain is a fixed part and about a round trip per element a thread holds.
TEST(RowReductionModelTest, SoftmaxRegisterVariantHoldsOneCtaAnSmAboveSixElements) {
  const auto launch = [](std::int64_t C) {
    return lower(Op(OpKind::kSoftmax, DType::kBf16, RowShape{8588, C}), h100()).front();
  };
  const auto six = launch(6000), seven = launch(6493);
  ASSERT_TRUE(contains(six.name, "cunn_SoftMaxForwardReg")) << six.name;
  ASSERT_TRUE(contains(seven.name, "long, 7>")) << seven.name;
  EXPECT_EQ(six.regs_per_thread, 30);
  EXPECT_EQ(seven.regs_per_thread, 34);
  const auto occupancy = [](const hw::Launch& l) {
    return hw::compute_occupancy(h100().sm, hw::BlockResources{1024, l.regs_per_thread,
                                                               l.smem_per_cta})
        .ctas_per_sm;
  };
  EXPECT_EQ(occupancy(six), 2);
  EXPECT_EQ(occupancy(seven), 1);
  // 3 + 0.85 x 7 round trips against 3 + 0.85 x 6.
  const double rt = h100().dram.latency.seconds();
  EXPECT_NEAR(seven.ctas[0].work.critical_path.seconds() - six.ctas[0].work.critical_path.seconds(),
              0.85 * rt, 1e-12);
}

// The warp kernel's chain follows the elements a lane loads (not the power of two it is compiled
// for), 16-bit rows slower per element than fp32 ones; the multi-pass kernel's time follows the
// element count (issue-bound passes), not the bytes.
TEST(RowReductionModelTest, SoftmaxChainsFollowTheElementsLoaded) {
  const auto chain = [](std::int64_t R, std::int64_t C, DType d) {
    const auto ls = lower(Op(OpKind::kSoftmax, d, RowShape{R, C}), h100());
    return ls[0].ctas[0].work.critical_path.seconds();
  };
  // 520 and 1000 elements share log2 = 10 (32 per lane) but load 17 and 32 per lane.
  EXPECT_LT(chain(1, 520, DType::kBf16) * 1.5, chain(1, 1000, DType::kBf16));
  EXPECT_GT(chain(1, 1000, DType::kBf16), 1.3 * chain(1, 1000, DType::kFp32));
  // Multi-pass: fp32 runs twice the iterations of bf16 yet is not twice as long.
  const double b = chain(1, 40000, DType::kBf16);
  const double f = chain(1, 40000, DType::kFp32);
  EXPECT_GT(f, b);
  EXPECT_LT(f, 1.5 * b);
  // A warp holds two rows up to 128 elements: its lanes load both (4 + 4 at 128, as 8 at 256),
  // and every lane takes all of its padded row's elements through the reductions, so 129
  // elements (5 loads of a 256-wide row) chain less than 128 (sets 3-23: rows of 65-128 had
  // run 5-14% fast, rows of 129-256 10-20% slow).
  EXPECT_NEAR(chain(1, 128, DType::kBf16), chain(1, 256, DType::kBf16), 1e-15);
  EXPECT_LT(chain(1, 129, DType::kBf16), chain(1, 128, DType::kBf16));
}

// The plain multi-pass kernel walks each pass in vectors of 8 bf16 elements a thread, then the
// rest one element a thread, and a row not 16-byte aligned first takes one element a thread over
// its first block's width (SoftMax.cu's ilpReduce): its time follows C modulo 8,192, and rows
// fall into classes by their alignment.
TEST(RowReductionModelTest, MultiPassSoftmaxCountsEachPassesTailAndShift) {
  const auto softmax = [](std::int64_t R, std::int64_t C) {
    return lower(Op(OpKind::kSoftmax, DType::kBf16, RowShape{R, C}), h100()).front();
  };
  const auto chain = [](const hw::Launch& l, std::size_t c) {
    return l.ctas.at(c).work.critical_path.seconds();
  };
  // One row (aligned): 16,254 = 8,192 + 8 x 1,024 - 130 takes one vector iteration and eight
  // tail ones a pass; 17,223 two vector iterations and one tail one.
  const auto long_tail = softmax(1, 16254), short_tail = softmax(1, 17223);
  ASSERT_TRUE(contains(long_tail.name, "cunn_SoftMaxForward<8")) << long_tail.name;
  ASSERT_EQ(long_tail.ctas.size(), 1u);
  const double rt = h100().dram.latency.seconds() + 2.0 * h100().l2.hit_latency.seconds();
  const double per_element = 35.0 / 128.0 / h100().clocks.sustained_other_hz;
  EXPECT_NEAR(chain(long_tail, 0) - chain(short_tail, 0),
              (1.0 + 0.8 * 8.0 - 2.0 - 0.8 * 1.0) * rt + (16254.0 - 17223.0) * per_element, 1e-12);
  EXPECT_GT(chain(long_tail, 0), chain(short_tail, 0));
  // Two rows: the second starts 17,223 % 8 = 7 elements past a boundary and takes the shifted
  // element, one vector iteration and eight tail ones: a class of its own, slower.
  const auto two = softmax(2, 17223);
  ASSERT_EQ(two.ctas.size(), 2u);
  EXPECT_EQ(two.ctas[0].count + two.ctas[1].count, 2);
  EXPECT_NEAR(std::abs(chain(two, 0) - chain(two, 1)), (2.0 + 0.8 * 8.0 - 2.0 - 0.8) * rt, 1e-12);
  // A multiple of 8 is aligned in every row: one class however many rows.
  EXPECT_EQ(softmax(1000, 25456).ctas.size(), 1u);
  // 1,000 rows of an odd length: one in eight starts aligned.
  const auto odd = softmax(1000, 25457);
  std::int64_t rows = 0;
  for (const auto& c : odd.ctas) rows += c.count;
  EXPECT_EQ(rows, 1000);
  EXPECT_EQ(odd.grid.x, 1000);
  EXPECT_EQ(odd.ctas.size(), 2u);
}

TEST(RowReductionModelTest, ManyRowWarpSoftmaxTakesTurnsAtTheSchedulers) {
  // softmax_warp_forward's CTAs issue their reductions and per-element work for 100 cycles plus
  // 30 an element a lane loads; sixteen to an SM take turns. 62164 x 74 bf16 (sets 3-14, H100)
  // ran 14.4 us, where the chain alone gave 9.
  const auto ls = lower(Op(OpKind::kSoftmax, DType::kBf16, RowShape{62164, 74}), h100());
  const double cycles = ls[0].ctas[0].work.issue_path.seconds() * h100().clocks.sustained_other_hz;
  EXPECT_NEAR(cycles, 100.0 + 30.0 * 3, 0.01);  // a warp's 32 lanes load a row of 74 in 3 each
  EXPECT_NEAR(simulated_us(ls), 14.4, 0.15 * 14.4);
}

// ---- flash attention (sdpa) ---------------------------------------------------------------

double attention_flops(std::int64_t B, std::int64_t H, std::int64_t S, std::int64_t D) {
  return 4.0 * static_cast<double>(B * H) * S * S * D;  // QK^T and PV
}

TEST(FlashAttentionModelTest, NonCausalFlopsAndBytesAreExactOnFullTiles) {
  for (const auto* name : {"h100", "a100", "rtx5090"}) {
    const auto hw = preset(name);
    const auto ls = lower(Op(OpKind::kSdpa, DType::kFp16, SdpaShape{16, 8, 512, 64, false}), hw);
    EXPECT_DOUBLE_EQ(totals(ls).tensor_flops, attention_flops(16, 8, 512, 64)) << name;
    const double qkv = 3.0 * 16 * 8 * 512 * 64 * 2;
    EXPECT_DOUBLE_EQ(totals(ls).dram_read_bytes, qkv) << name;
    EXPECT_GE(totals(ls).dram_write_bytes, 16.0 * 8 * 512 * 64 * 2) << name;  // O (+ FA2's LSE)
    EXPECT_DOUBLE_EQ(totals(ls).sfu_ops, 16.0 * 8 * 512 * 512 * (1 + 1.0 / 128)) << name;
  }
}

TEST(FlashAttentionModelTest, CausalStopsAtTheDiagonal) {
  // S = 1024 in 128-query by 128-key tiles (cuDNN) or 128 x 128 (FA2 hdim 64): query tile m
  // covers m + 1 key tiles, 36 of 64 tiles in all.
  for (const auto* name : {"h100", "a100"}) {
    const auto ls = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{8, 16, 1024, 64, true}), preset(name));
    EXPECT_DOUBLE_EQ(totals(ls).tensor_flops, attention_flops(8, 16, 1024, 64) * 36.0 / 64.0) << name;
  }
}

TEST(FlashAttentionModelTest, Fa2GeometryFromTheLaunchTemplate) {
  // ops_h100.csv (forced flash backend): hdim 64 -> traits <64, 128, 128, 4>, grid
  // (S/128, B, H), 128 threads, 255 registers, 48 KiB; hdim 128 -> <128, 128, 64, 4>, 64 KiB.
  const auto a = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{4, 32, 1024, 128, false}), a100());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(contains(a[0].name, "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4"));
  EXPECT_EQ(testing::dims(a[0].grid), "8x4x32");
  EXPECT_EQ(a[0].smem_per_cta, 65536);
  EXPECT_EQ(a[0].regs_per_thread, 255);
  // hdim 256 on the RTX 5090 (99 KiB per block) falls back to 64-row tiles.
  const auto r = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{1, 8, 512, 256, false}), preset("rtx5090"));
  EXPECT_TRUE(contains(r[0].name, "<256, 64, 64, 4"));
}

TEST(FlashAttentionModelTest, CudnnOnHopperIsPersistent) {
  // ops_h100.csv: a memset, then 132 CTAs of 384 threads, 168 registers, 134144 B (D = 64).
  const auto ls = lower(Op(OpKind::kSdpa, DType::kFp16, SdpaShape{16, 8, 512, 64, false}), h100());
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].name, "Memset (Device)");
  EXPECT_EQ(ls[1].name,
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0");
  EXPECT_EQ(ls[1].grid.count(), 132);
  // 4 x 16 x 8 = 512 query tiles over 132 CTAs: 116 CTAs take 4, 16 take 3.
  ASSERT_EQ(ls[1].ctas.size(), 2u);
  EXPECT_EQ(ls[1].ctas[0].count, 116);
  EXPECT_DOUBLE_EQ(ls[1].ctas[0].work.tensor_flops / ls[1].ctas[1].work.tensor_flops, 4.0 / 3.0);
  // Non-causal units add no per-unit cost: the fixed part is the same for 3 and 4 units.
  EXPECT_EQ(ls[1].ctas[0].work.fixed.ps(), ls[1].ctas[1].work.fixed.ps());
}

TEST(FlashAttentionModelTest, CausalUnitsCostRoundTripsAndSteerTheScheduler) {
  // 5 x 12 heads at 297 tokens: 60 (batch, head) pairs of 3, 2 and 1 key tiles over 132 CTAs.
  // The scheduler hands out each pair's tiles in turn, heaviest first, so the first 132 units are
  // 44 whole pairs; the 48 left go to the CTAs that free up first, and a CTA that held a 2-tile
  // unit can then take a 3-tile one: 5 tiles' work where a longest-first schedule of all units
  // gives at most 3 (sets 3-16: such prefills ran 11-14% slower than that balance). A CTA's
  // second causal unit costs it 2.5 DRAM round trips.
  const auto ls = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{5, 12, 297, 128, true}), h100());
  const auto& k = ls.back();
  ASSERT_EQ(k.grid.count(), 132);
  const double tile_flops = 4.0 * 128 * 128 * 128;
  std::set<std::int64_t> fixed;
  double total = 0, most = 0;
  for (const auto& cls : k.ctas) {
    total += static_cast<double>(cls.count) * cls.work.tensor_flops;
    most = std::max(most, cls.work.tensor_flops);
    fixed.insert(cls.work.fixed.ps());
  }
  EXPECT_NEAR(total, 60 * 6 * tile_flops, tile_flops * 1e-6);
  EXPECT_NEAR(most, 5 * tile_flops, tile_flops * 1e-6);
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(*fixed.rbegin() - *fixed.begin(),
            static_cast<std::int64_t>(2.5 * static_cast<double>(h100().dram.latency.ps())));
  // The 64-wide kernel's causal units cost one round trip (its causal rows of sets 3-23).
  const auto narrow =
      lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{5, 12, 297, 64, true}), h100());
  std::set<std::int64_t> narrow_fixed;
  for (const auto& cls : narrow.back().ctas) narrow_fixed.insert(cls.work.fixed.ps());
  ASSERT_EQ(narrow_fixed.size(), 2u);
  EXPECT_EQ(*narrow_fixed.rbegin() - *narrow_fixed.begin(), h100().dram.latency.ps());
}

TEST(FlashAttentionModelTest, CudnnDecodesShortCachesWithSixtyFourRowTiles) {
  const auto decode = [](std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t L,
                         std::int64_t D) {
    return lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{B, Hq, Hkv, L, D}), h100());
  };
  // Sets 3-16 (H100): one 128-key tile or less always ran "knob_3 64x64xD" (36 x 32 heads at 67
  // keys too), two tiles only with at most 128 query heads in the batch (5 x 24 at 148 keys did,
  // 6 x 24 did not), longer caches never (1 x 4 at 257 keys).
  EXPECT_TRUE(contains(decode(36, 32, 32, 67, 96)[0].name, "knob_3_64x64x128_4x1x1"));
  EXPECT_TRUE(contains(decode(5, 24, 8, 148, 128)[0].name, "knob_3_64x64x128"));
  EXPECT_TRUE(contains(decode(6, 24, 8, 148, 128)[0].name, "knob_35_16x128x128_1x4x1"));
  EXPECT_TRUE(contains(decode(1, 4, 1, 257, 256)[0].name, "knob_35_16x128x256"));
  const auto s = decode(1, 32, 8, 236, 64);
  ASSERT_EQ(s.size(), 1u);  // never split
  EXPECT_EQ(testing::dims(s[0].grid), "1x8x1");
  EXPECT_EQ(s[0].regs_per_thread, 142);
  EXPECT_EQ(s[0].smem_per_cta, 24576);
  // 64 query rows a tile, however few heads share the KV head: four times the 16-row kernel's
  // score work per key.
  const auto w = decode(1, 8, 8, 128, 128)[0].ctas[0].work;
  EXPECT_DOUBLE_EQ(w.sfu_ops, 64.0 * 128 + 64 * 2);
  // Each further 64-key tile adds 2.5 round trips to the chain, and 1,500 cycles of issue
  // that CTAs sharing an SM take in turn.
  const auto one = decode(1, 8, 8, 64, 128)[0].ctas[0].work;
  const auto three = decode(1, 8, 8, 192, 128)[0].ctas[0].work;
  EXPECT_EQ(three.critical_path.ps() - one.critical_path.ps(), 5 * h100().dram.latency.ps());
  EXPECT_NEAR(three.issue_path.ps(), 3 * one.issue_path.ps(), 2);
  EXPECT_NEAR(one.issue_path.seconds() * h100().clocks.sustained_other_hz, 1500.0, 1.0);
}

TEST(FlashAttentionModelTest, CudnnDecodeTilesTakeTurnsAtTheSchedulers) {
  // The 16-row decode kernel issues 1,500 cycles of softmax and MMA a 128-key tile of 128-deep
  // rows (half for 64-deep rows), which two CTAs on an SM take in turn. Measured (sets 3-33,
  // H100): 17 x 16 heads (8 KV heads) at 336 keys, 136 CTAs, take 15.0 us; without the turns
  // gpusim ran them in 13.8.
  const auto decode = [](std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t L,
                         std::int64_t D) {
    return lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{B, Hq, Hkv, L, D}), h100());
  };
  const auto l = decode(17, 16, 8, 336, 128);
  ASSERT_EQ(l.size(), 1u);
  ASSERT_TRUE(contains(l[0].name, "16x128x128")) << l[0].name;
  const double cycles = h100().clocks.sustained_other_hz;
  EXPECT_NEAR(l[0].ctas[0].work.issue_path.seconds() * cycles, 3 * 1500.0, 1.0);  // 3 tiles
  const auto d64 = decode(17, 16, 8, 336, 64);
  EXPECT_NEAR(d64[0].ctas[0].work.issue_path.seconds() * cycles, 3 * 750.0, 1.0);
  EXPECT_NEAR(simulated_us(l), 15.01, 0.05 * 15.01);
  auto no_turns = l;
  for (auto& c : no_turns[0].ctas) c.work.issue_path = sim::Time();
  EXPECT_LT(simulated_us(no_turns), 0.95 * 15.01);
}

TEST(FlashAttentionModelTest, CudnnRunsHeadDimsUpTo256WithTheMeasuredGrids) {
  // hf_models3_h100.json.gz: Gemma 2 (B 1, 8 heads, 1,024 tokens, D 256) ran 64 CTAs of the
  // "64x128x256" kernel; Phi-3 (D 96) the "x128" kernel on all 132 SMs (256 units).
  const auto g = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{1, 8, 1024, 256, true}), h100());
  ASSERT_EQ(g.size(), 2u);
  EXPECT_TRUE(contains(g[1].name, "_64x128x256_"));
  EXPECT_EQ(g[1].grid.count(), 64);
  EXPECT_EQ(g[1].smem_per_cta, 232448);
  const auto p = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{1, 32, 1024, 96, true}), h100());
  EXPECT_TRUE(contains(p[1].name, "_64x128x128_"));
  EXPECT_EQ(p[1].grid.count(), 132);
  // D 96 is computed as 128: the same tensor work as D 128.
  const auto q = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{1, 32, 1024, 128, true}), h100());
  EXPECT_DOUBLE_EQ(totals(p).tensor_flops, totals(q).tensor_flops);
  // Decode above D 128: the "16x128x256" kernel with 64-key tiles, two CTAs per split (each
  // half of the output columns): 8 splits at 1,024 keys, grid 16 x 4 x 4 as measured.
  const auto d = lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{4, 8, 4, 1024, 256}), h100());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(contains(d[0].name, "16x128x256"));
  EXPECT_EQ(testing::dims(d[0].grid), "16x4x4");
  // The split rule counts 128-key tiles: 299 keys (3 tiles) stay unsplit (ops5_h100.json).
  const auto short_cache = lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{3, 4, 1, 299, 256}), h100());
  ASSERT_EQ(short_cache.size(), 1u);
  EXPECT_EQ(testing::dims(short_cache[0].grid), "2x1x3");
  // The split rule counts the two halves as one CTA (sets 3-20: 1 x 4 heads at 13,706 keys ran
  // 64 splits, grid 128 x 4 x 1; 40 x 1 heads at 23,702 keys 4 splits, grid 8 x 1 x 40), whole
  // 128-key tiles (935 keys: 4 splits) and at most 64 splits (4 heads at 21,261 keys: 64).
  const auto grid = [](std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t L) {
    return testing::dims(
        lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{B, Hq, Hkv, L, 256}), h100())[0]
            .grid);
  };
  EXPECT_EQ(grid(1, 8, 4, 13706), "128x4x1");
  EXPECT_EQ(grid(40, 4, 1, 23702), "8x1x40");
  EXPECT_EQ(grid(23, 4, 1, 935), "8x1x23");
  EXPECT_EQ(grid(1, 4, 1, 21261), "128x1x1");
  // Its chain keeps growing past the 128-wide kernel's cap (1,536 keys: 12 x 64 KiB of K and V).
  const auto chain = [](std::int64_t D, std::int64_t L) {
    return lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{1, 4, 1, L, D}), h100())[0]
        .ctas[0].work.critical_path.ps();
  };
  // The short-cache kernel's fill: 6 round trips at D 128, 2.25 times that at D 256.
  EXPECT_EQ(4 * chain(256, 40), 9 * chain(128, 40));
  const auto unsplit = [](std::int64_t D, std::int64_t L) {  // 512 CTAs: never split
    const auto l = lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{64, 8, 8, L, D}), h100());
    EXPECT_EQ(l.size(), 1u);
    return l[0].ctas[0].work.critical_path.ps();
  };
  EXPECT_EQ(unsplit(128, 1536), unsplit(128, 3072));
  EXPECT_LT(unsplit(256, 1536), unsplit(256, 3072));
}

TEST(FlashAttentionModelTest, AnExplicitMaskComputesEveryTileAndCostsMore) {
  const hw::HardwareSpec hw = h100();
  SdpaShape masked{1, 32, 2048, 128, false};
  masked.masked = true;
  const auto m = lower(Op(OpKind::kSdpa, DType::kBf16, masked), hw);
  const auto n = lower(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{1, 32, 2048, 128, false}), hw);
  EXPECT_GT(totals(m).tensor_flops, totals(n).tensor_flops);
  EXPECT_GT(totals(m).l2_bytes, totals(n).l2_bytes);  // the mask tiles
  EXPECT_EQ(m[1].name, n[1].name);                    // the same kernel
}

TEST(AtenKernelsTest, CatGridsAndContiguity) {
  const hw::HardwareSpec hw = h100();
  // getCatGridContig: at most 32 CTAs per SM (Phi-3's K cache cat: 4224 x 2 on an H100).
  const std::int64_t big = 4 * 32 * 1025 * 96;
  const auto v = lower_cat({big - 4 * 32 * 96, 4 * 32 * 96}, DType::kBf16, true, {}, {}, hw);
  EXPECT_EQ(testing::dims(v.grid), "4224x2x1");
  // The strided kernel reads a contiguous input with less work per element than a strided one.
  const auto dense = lower_cat({big, 0}, DType::kBf16, false, {}, {}, hw, {true, false});
  const auto strided = lower_cat({big, 0}, DType::kBf16, false, {}, {}, hw);
  EXPECT_LT(dense.ctas[0].work.critical_path, strided.ctas[0].work.critical_path);
}

// ---- decode attention (sdpa_decode) -------------------------------------------------------

TEST(DecodeAttentionModelTest, NumSplitsHeuristicMatchesFlashApi) {
  // flash_api.cpp with 2 x 132 "SMs" (the H100 measurements of the forced flash backend).
  EXPECT_EQ(flash_num_splits(32, 264, 32, 128), 7);   // B=4, Hkv=8, L=4096: grid 1x7x32
  EXPECT_EQ(flash_num_splits(8, 264, 64, 128), 32);   // B=1, Hkv=8, L=8192: 1x32x8
  EXPECT_EQ(flash_num_splits(2, 264, 16, 128), 16);   // B=1, Hkv=2, L=2048: 1x16x2
  EXPECT_EQ(flash_num_splits(128, 264, 32, 128), 2);  // B=4, H=32 (repeated KV): 1x2x128
  EXPECT_EQ(flash_num_splits(512, 264, 4, 128), 1);   // B=64, Hkv=8: no split
}

TEST(DecodeAttentionModelTest, SplitKvAppearsForLongCachesAndNotForBigBatches) {
  for (const auto* name : {"h100", "a100", "rtx5090"}) {
    const auto hw = preset(name);
    const auto split = lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{1, 32, 8, 8192, 128}), hw);
    EXPECT_EQ(split.size(), 2u) << name;  // split kernel + combine / reduction
    EXPECT_GT(split[0].grid.count(), 8) << name;
    const auto whole = lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{64, 32, 8, 512, 128}), hw);
    EXPECT_EQ(whole.size(), 1u) << name;
    // K and V come from DRAM exactly once, whatever the split.
    const double kv = 2.0 * 1 * 8 * 8192 * 128 * 2;
    const double q = 1.0 * 32 * 128 * 2;
    EXPECT_DOUBLE_EQ(totals(split[0]).dram_read_bytes, kv + q) << name;
    EXPECT_DOUBLE_EQ(totals(split).dram_write_bytes - totals(split[0]).dram_write_bytes, q) << name;  // final O
  }
}

TEST(DecodeAttentionModelTest, GqaPacksQueryHeadsIntoOneTile) {
  // FA2 (A100): the 4 query heads of a KV head share a CTA: the grid's last dimension is
  // B * Hkv, and K/V are read once per KV head.
  const auto ls = lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{4, 32, 8, 4096, 128}), a100());
  EXPECT_EQ(ls[0].grid.z, 4 * 8);
  // cuDNN (H100): grid (splits, Hkv, B), 8 splits (ops_h100.csv: 8x8x4).
  const auto c = lower(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{4, 32, 8, 4096, 128}), h100());
  EXPECT_EQ(testing::dims(c[0].grid), "8x8x4");
  EXPECT_EQ(testing::dims(c[1].grid), "1x32x4");
  EXPECT_EQ(c[1].smem_per_cta, 8 * (128 + 2) * 4);
}

// ---- naive attention ----------------------------------------------------------------------

TEST(NaiveAttentionModelTest, ComposesGemmElementwiseAndSoftmax) {
  const auto ls = lower(Op(OpKind::kNaiveAttention, DType::kFp32, NaiveAttentionShape{4, 12, 512, 64, false}), h100());
  ASSERT_EQ(ls.size(), 4u);  // bmm, scale, softmax, bmm (ops_h100.csv)
  EXPECT_EQ(ls[0].family, "gemm");
  EXPECT_EQ(ls[1].family, "elementwise");
  EXPECT_EQ(ls[2].family, "softmax");
  EXPECT_EQ(ls[3].family, "gemm");
  // 64x64 tiles divide S and D: the two bmm are exactly 2 * (2 B H S S D) FP32 FLOPs.
  EXPECT_DOUBLE_EQ(totals(ls[0]).fp32_flops + totals(ls[3]).fp32_flops,
                   attention_flops(4, 12, 512, 64));
  // The S x S matrices are named tensors of B*H*S*S fp32 each.
  const double ss = 4.0 * 12 * 512 * 512 * 4;
  EXPECT_EQ(ls[0].writes[0].tensor, "op0.scores");
  EXPECT_DOUBLE_EQ(static_cast<double>(ls[0].writes[0].bytes), ss);
  EXPECT_EQ(ls[2].reads[0].tensor, "op0.scaled");
  EXPECT_EQ(ls[2].writes[0].tensor, "op0.probs");
  EXPECT_EQ(ls[3].reads[0].tensor, "op0.probs");
  EXPECT_DOUBLE_EQ(static_cast<double>(ls[3].reads[0].bytes), ss);

  const auto causal = lower(Op(OpKind::kNaiveAttention, DType::kFp32, NaiveAttentionShape{8, 16, 1024, 64, true}), h100());
  ASSERT_EQ(causal.size(), 6u);  // + the clone (memcpy) and masked_fill
  EXPECT_EQ(causal[2].name, "Memcpy DtoD (Device -> Device)");
  EXPECT_TRUE(contains(causal[3].name, "elementwise_kernel<128, 2,"));
  EXPECT_EQ(causal[3].grid.x, 8LL * 16 * 1024 * 1024 / 256);
}

TEST(AtenKernelsTest, RowMeanThreadsWaitOneVectorARoundTrip) {
  // y.mean(-1) over rows of 4096 fp32, as HF's RMSNorm: 32 threads a row, 16 rows a CTA, each
  // thread walking its 128 elements one 4-element vector a round trip, then the tree (2).
  const TensorUse in{"y", 16 << 20}, out{"m", 1024 * 4};
  const auto mean = [&](std::int64_t rows) {
    return lower_reduce(rows, 4096, DType::kFp32, DType::kFp32, true,
                                "at::native::MeanOps<float, float, float, float>", in, out, h100());
  };
  const hw::Launch one = mean(16);
  EXPECT_EQ(one.grid.x, 1);
  EXPECT_EQ(one.block.x * one.block.y, 512);
  EXPECT_NEAR(one.ctas[0].work.critical_path.seconds(), (4096 / 32 / 4 + 2) * h100().dram.latency.seconds(), 1e-12);
  // Cold, 16 CTAs of 16 rows take 19.1 us by CUDA events (validation/data/l2_order_h100.json,
  // about 2 us of it the events' own); two elements a round trip had run them in 9.
  const double cold_us = simulated_us({mean(256)});
  EXPECT_GT(cold_us, 13.0);
  EXPECT_LT(cold_us, 19.0);
}

}  // namespace
}  // namespace gpusim::models
