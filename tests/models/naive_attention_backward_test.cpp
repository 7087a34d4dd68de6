// naive_attention's written-out softmax and its backward (`softmax: manual`, `pass: backward`),
// and the kernels of hand-written code's backward they and the cs336 training step use:
// torch.amax's backward, gather / scatter_add, the index_put_ backward of `table[ids]`.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hw/gpu_engine.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "sim/error.h"
#include "tests/models/model_test_support.h"
#include "workloads/op_reader.h"
#include "workloads/workload.h"

namespace gpusim::models {
namespace {

using hw::DType;
using testing::lower;
using testing::preset;
using testing::totals;

const hw::HardwareSpec& a100() {
  static const hw::HardwareSpec spec = preset("a100");
  return spec;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::size_t count(const std::vector<Launch>& ls, const std::string& part) {
  return static_cast<std::size_t>(
      std::count_if(ls.begin(), ls.end(), [&](const Launch& l) { return contains(l.name, part); }));
}

Op attention(std::int64_t S, bool manual, bool backward, bool causal = false) {
  NaiveAttentionShape s{8, 1, S, 64, causal};
  s.manual_softmax = manual;
  s.backward = backward;
  return Op(OpKind::kNaiveAttention, DType::kFp32, s);
}

// Span of launches run back to back on an idle A100 (graph mode, cold L2), in us.
double span_us(const std::vector<Launch>& ls) {
  std::vector<hw::KernelNode> nodes;
  for (const auto& l : ls) nodes.push_back(hw::KernelNode{l, "op", 0, {}, std::nullopt});
  return hw::run_engine(a100(), hw::LaunchMode::kGraph, nodes).end.us();
}

double dram_bytes(const std::vector<Launch>& ls) {
  const auto t = totals(ls);
  return t.dram_read_bytes + t.dram_write_bytes;
}

TEST(NaiveAttentionBackward, TheWrittenOutSoftmaxIsFiveKernels) {
  const auto fused = lower(attention(1024, false, false), a100());
  const auto manual = lower(attention(1024, true, false), a100());
  EXPECT_EQ(count(fused, "softmax"), 1u);
  EXPECT_EQ(count(manual, "softmax"), 0u);
  EXPECT_EQ(count(manual, "MaxNanFunctor"), 1u);  // torch.amax
  EXPECT_EQ(count(manual, "exp_kernel_cuda"), 1u);
  EXPECT_EQ(count(manual, "sum_functor"), 1u);
  EXPECT_EQ(count(manual, "DivFunctor"), 1u);
  // Four more passes over the 8 x 1024 x 1024 fp32 scores than torch.softmax's one.
  const double scores = 8.0 * 1024 * 1024 * 4;
  EXPECT_GT(dram_bytes(manual) - dram_bytes(fused), 4 * scores);
}

TEST(NaiveAttentionBackward, FourMatrixProductsAndTheSoftmaxsBackward) {
  const auto fwd = lower(attention(2048, true, false), a100());
  const auto bwd = lower(attention(2048, true, true), a100());
  std::size_t gemms = 0;
  double fwd_flops = 0, bwd_flops = 0;
  for (const auto& l : fwd) fwd_flops += l.family == "gemm" ? totals(l).fp32_flops : 0;
  for (const auto& l : bwd) {
    gemms += l.family == "gemm" ? 1 : 0;
    bwd_flops += l.family == "gemm" ? totals(l).fp32_flops : 0;
  }
  EXPECT_EQ(gemms, 4u);  // dV, dP, dK, dQ
  EXPECT_NEAR(bwd_flops / fwd_flops, 2.0, 0.1);
  // The written-out softmax's backward: the division's, exp's, the subtraction's and amax's
  // (compare, the int64 count, the spread), with two row sums.
  EXPECT_EQ(count(bwd, "CompareEqFunctor"), 1u);
  EXPECT_EQ(count(bwd, "ReduceOp<long"), 1u);
  EXPECT_EQ(count(bwd, "neg_kernel_cuda"), 2u);
  EXPECT_EQ(count(bwd, "softmax"), 0u);
  // The seed's backward takes 2.6-2.8x its forward at long sequences: several passes over the
  // scores for each of the forward's.
  EXPECT_GT(dram_bytes(bwd), 2.5 * dram_bytes(fwd));
  const double ratio = span_us(bwd) / span_us(fwd);
  EXPECT_GT(ratio, 2.0);
  EXPECT_LT(ratio, 4.0);
  // torch.softmax's backward is one kernel, far cheaper.
  const auto fused = lower(attention(2048, false, true), a100());
  EXPECT_EQ(count(fused, "SoftMaxBackwardEpilogue"), 1u);
  EXPECT_LT(span_us(fused), 0.6 * span_us(bwd));
}

TEST(NaiveAttentionBackward, ACausalMaskIsFilledInTheGradientToo) {
  const auto bwd = lower(attention(512, true, true, true), a100());
  EXPECT_EQ(count(bwd, "masked_fill"), 1u);
  EXPECT_EQ(count(bwd, "Memcpy DtoD"), 1u);  // the out-of-place masked_fill's clone
}

TEST(NaiveAttentionBackward, OpKeys) {
  const hw::YamlDocument doc = hw::YamlDocument::from_string(
      "- {op: naive_attention, B: 8, H: 1, S: 256, D: 16, softmax: manual, pass: backward, dtype: fp32}\n"
      "- {op: naive_attention, B: 8, H: 1, S: 256, D: 16, dtype: fp32}\n"
      "- {op: naive_attention, B: 8, H: 1, S: 256, D: 16, pass: sideways, dtype: fp32}\n"
      "- {op: naive_attention, B: 8, H: 1, S: 256, D: 16, softmax: exact, dtype: fp32}\n",
      "ops.yaml");
  const Op bwd = workloads::read_op(doc, doc.root()[0], "ops[0]", std::nullopt);
  EXPECT_TRUE(bwd.as<NaiveAttentionShape>().backward);
  EXPECT_TRUE(bwd.as<NaiveAttentionShape>().manual_softmax);
  EXPECT_TRUE(contains(describe(bwd), "softmax=manual backward")) << describe(bwd);
  const Op fwd = workloads::read_op(doc, doc.root()[1], "ops[1]", std::nullopt);
  EXPECT_FALSE(fwd.as<NaiveAttentionShape>().backward);
  EXPECT_FALSE(fwd.as<NaiveAttentionShape>().manual_softmax);
  EXPECT_NE(describe(fwd), describe(bwd));  // the lowering cache keys on it
  try {
    workloads::read_op(doc, doc.root()[2], "ops[2]", std::nullopt);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "ops[2].pass");
  }
  try {
    workloads::read_op(doc, doc.root()[3], "ops[3]", std::nullopt);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "ops[3].softmax");
  }
}

TEST(HandWrittenBackwardKernels, AmaxBackwardCountsTheMaximaInInt64) {
  const std::int64_t rows = 4096, cols = 1024;
  const auto ls = lower_amax_backward(rows, cols, DType::kFp32, TensorUse{"x", rows * cols * 4}, TensorUse{"m", rows * 4},
                                      TensorUse{"g", rows * 4}, TensorUse{"gx", rows * cols * 4}, a100());
  ASSERT_EQ(ls.size(), 5u);
  EXPECT_TRUE(contains(ls[0].name, "CompareEqFunctor"));
  EXPECT_TRUE(contains(ls[1].name, "unrolled_elementwise_kernel"));  // bool -> int64
  EXPECT_TRUE(contains(ls[2].name, "ReduceOp<long"));
  EXPECT_TRUE(contains(ls[4].name, "elementwise_kernel<128, 4"));  // the spread, casting the mask
  // Bytes an element: the compare 9 (both operands charged at 4 B, as the elementwise model
  // charges a broadcast one, and the 1-byte mask), the cast 9 (the mask in, int64 out), the count
  // 8 (the int64s), the spread 6 (mask and quotient at the mask's byte each, the gradient out).
  const double per_element = dram_bytes(ls) / static_cast<double>(rows * cols);
  EXPECT_NEAR(per_element, 9 + 9 + 8 + 6, 0.1);
}

TEST(HandWrittenBackwardKernels, GatherScatterAddAndIndexPut) {
  const auto g = lower_scatter_gather(ScatterGather::kGather, 2048, DType::kFp32, TensorUse{"i", 2048 * 8},
                                      TensorUse{"x", 2048 * 10000 * 4}, TensorUse{"y", 2048 * 4}, a100());
  EXPECT_TRUE(contains(g.name, "_cuda_scatter_gather_internal_kernel<false"));
  EXPECT_EQ(g.grid.x, 2);  // 1024 elements a CTA
  const auto s = lower_scatter_gather(ScatterGather::kScatterAdd, 2048, DType::kFp32, TensorUse{"i", 2048 * 8},
                                      TensorUse{"y", 2048 * 4}, TensorUse{"x", 2048 * 10000 * 4}, a100());
  EXPECT_TRUE(contains(s.name, "ReduceAdd"));
  // index_put_ with accumulate: the zeroed table, the linearized indices, their sort, the sums.
  const auto ip = lower_index_put_accumulate(2048, 10000, 768, DType::kFp32, TensorUse{"ids", 2048 * 8},
                                             TensorUse{"dy", 2048 * 768 * 4}, TensorUse{"dw", 10000 * 768 * 4}, a100());
  ASSERT_GE(ip.size(), 6u);
  EXPECT_TRUE(contains(ip.front().name, "FillFunctor"));
  EXPECT_EQ(count(ip, "DeviceRadixSortSingleTileKernel"), 1u);  // 2,048 keys: one tile
  EXPECT_TRUE(contains(ip.back().name, "indexing_backward_kernel"));
  EXPECT_EQ(ip.back().grid.x, 512);  // 4 indices a CTA
  EXPECT_EQ(ip.back().grid.y, 6);    // 128 features a CTA row
  // Past a tile, cub's onesweep: two 8-bit passes for 10,000 rows' 14 bits.
  const auto big = lower_index_put_accumulate(16384, 10000, 768, DType::kFp32, TensorUse{"ids", 16384 * 8},
                                              TensorUse{"dy", 16384 * 768 * 4}, TensorUse{"dw", 10000 * 768 * 4}, a100());
  EXPECT_EQ(count(big, "DeviceRadixSortOnesweepKernel"), 2u);
  EXPECT_THROW(lower_index_put_accumulate(0, 10, 10, DType::kFp32, TensorUse{}, TensorUse{}, TensorUse{}, a100()),
               ModelError);
}

}  // namespace
}  // namespace gpusim::models
