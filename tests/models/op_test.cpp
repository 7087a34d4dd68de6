#include "models/op.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpusim::models {
namespace {

using hw::DType;

TEST(ModelOpTest, DescribesEachFamilyOnOneLine) {
  EXPECT_EQ(describe(Op(OpKind::kMatmul, DType::kBf16, MatmulShape{2048, 2048, 2048})),
            "matmul M=2048 N=2048 K=2048 bf16");
  EXPECT_EQ(describe(Op(OpKind::kLinear, DType::kFp16, LinearShape{1, 11008, 4096, true})),
            "linear M=1 N=11008 K=4096 bias fp16");
  EXPECT_EQ(describe(Op(OpKind::kSdpa, DType::kBf16, SdpaShape{8, 16, 1024, 64, true})),
            "sdpa B=8 H=16 S=1024 D=64 causal bf16");
  EXPECT_EQ(describe(Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{4, 32, 8, 4096, 128})),
            "sdpa_decode B=4 Hq=32 Hkv=8 L=4096 D=128 bf16");
  EXPECT_EQ(
      describe(Op(OpKind::kNaiveAttention, DType::kFp32, NaiveAttentionShape{4, 12, 512, 64})),
      "naive_attention B=4 H=12 S=512 D=64 fp32");
  EXPECT_EQ(describe(Op(OpKind::kGelu, DType::kBf16, ElementwiseShape{1048576})),
            "gelu n=1048576 bf16");
  EXPECT_EQ(
      describe(Op(OpKind::kCast, DType::kBf16, CastShape{1048576, DType::kFp32, DType::kBf16})),
      "cast n=1048576 fp32->bf16");
  EXPECT_EQ(describe(Op(OpKind::kRmsNorm, DType::kBf16, RowShape{4096, 4096})),
            "rms_norm R=4096 C=4096 bf16");
}

TEST(ModelOpTest, NamesRoundTrip) {
  for (const auto name : op_names()) {
    const auto kind = parse_op_kind(name);
    ASSERT_TRUE(kind.has_value()) << name;
    EXPECT_EQ(op_name(*kind), name);
  }
  EXPECT_EQ(op_names().size(), 20u);
  EXPECT_FALSE(parse_op_kind("conv2d").has_value());
}

TEST(ModelOpTest, ShapeMustBeTheFamilyOfTheKind) {
  EXPECT_THROW(Op(OpKind::kAdd, DType::kBf16, MatmulShape{1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(Op(OpKind::kCast, DType::kFp16, CastShape{8, DType::kFp32, DType::kBf16}),
               std::invalid_argument);
  const Op op(OpKind::kSoftmax, DType::kFp32, RowShape{3, 5});
  EXPECT_EQ(op.as<RowShape>().C, 5);
  EXPECT_THROW((void)op.as<MatmulShape>(), std::bad_variant_access);
}

}  // namespace
}  // namespace gpusim::models
