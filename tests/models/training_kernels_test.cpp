// The training step's kernels (models/training_kernels.h): launch geometry and names as measured
// in validation/data/hf_train_h100.json.gz (llama3.2-1b-4l_b4_s512 and other calibration cases),
// reduce_kernel's row-split rule, multi_tensor_apply's chunking and launch limits, and the work
// each launch is charged.
#include "models/training_kernels.h"

#include <gtest/gtest.h>

#include <string>

#include "hw/gpu_engine.h"
#include "models/flash_common.h"
#include "sim/error.h"
#include "tests/models/model_test_support.h"

namespace gpusim::models {
namespace {

using hw::DType;
using testing::dims;
using testing::preset;
using testing::totals;

const hw::HardwareSpec& h100() {
  static const hw::HardwareSpec spec = preset("h100");
  return spec;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TensorUse use(const std::string& name, double bytes) { return TensorUse{name, static_cast<std::int64_t>(bytes)}; }

// Durations (us) of launches run back to back on an idle H100 with a cold L2.
std::vector<double> simulate(const std::vector<Launch>& ls) {
  std::vector<hw::KernelNode> nodes;
  for (const auto& l : ls) nodes.push_back(hw::KernelNode{l, "op", 0, {}, std::nullopt});
  const auto r = hw::run_engine(h100(), hw::LaunchMode::kGraph, nodes);
  std::vector<double> out;
  for (const auto& k : r.kernels) out.push_back(k.duration().us());
  return out;
}

// ---- loss -----------------------------------------------------------------------------------

// Llama 3.2 1B, 4 x 512 tokens: log_softmax over the 128256-word vocabulary in fp32.
constexpr std::int64_t kTokens = 2048, kVocab = 128256;

TEST(TrainingKernelsLoss, LogSoftmaxForwardIsTheThreePassKernelWithTheLogEpilogue) {
  const double bytes = 4.0 * kTokens * kVocab;
  const auto ls = lower_log_softmax(kTokens, kVocab, DType::kFp32, use("logits", bytes), use("logp", bytes), h100());
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0].name,
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
            "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>");
  EXPECT_EQ(dims(ls[0].grid), "2048x1x1");
  EXPECT_EQ(dims(ls[0].block), "1024x1x1");
  EXPECT_EQ(ls[0].reads[0].tensor, "logits");
  EXPECT_EQ(ls[0].writes[0].tensor, "logp");
  // Three passes over the row from DRAM, one write.
  EXPECT_NEAR(totals(ls).dram_read_bytes, 3 * bytes, 0.01 * bytes);
  EXPECT_NEAR(totals(ls).dram_write_bytes, bytes, 0.01 * bytes);
  // Short rows take the warp kernel, with its is_log_softmax flag set.
  const auto small = lower_log_softmax(64, 1000, DType::kFp32, use("x", 256000), use("y", 256000), h100());
  EXPECT_TRUE(contains(small[0].name, "softmax_warp_forward<float, float, float, 10, true, false>")) << small[0].name;
}

TEST(TrainingKernelsLoss, LogSoftmaxBackwardVariantsAndTraffic) {
  const double bytes = 4.0 * kTokens * kVocab;
  const auto ls = lower_log_softmax_backward(kTokens, kVocab, DType::kFp32, use("dlogp", bytes), use("logp", bytes),
                                             use("dlogits", bytes), h100());
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0].name,
            "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
            "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>");
  EXPECT_EQ(dims(ls[0].grid), "2048x1x1");
  EXPECT_EQ(dims(ls[0].block), "512x1x1");  // SoftMax_getBlockSize: half of min(C / ILP, 1024)
  // gO twice (the sum pass, then the write pass beside the output), the output once; gI out.
  EXPECT_NEAR(totals(ls).dram_read_bytes, 3 * bytes, 0.01 * bytes);
  EXPECT_NEAR(totals(ls).dram_write_bytes, bytes, 0.01 * bytes);
  // A row that fits the default 48 KiB of shared memory keeps gO there: one read fewer.
  const auto smem = lower_log_softmax_backward(512, 8192, DType::kFp32, use("a", 1), use("b", 1), use("c", 1), h100());
  EXPECT_TRUE(contains(smem[0].name, "cunn_SoftMaxBackwardSmem<4, float, float, float,")) << smem[0].name;
  EXPECT_NEAR(totals(smem).dram_read_bytes, 2.0 * 512 * 8192 * 4, 1.0);
  const auto warp = lower_log_softmax_backward(100, 1000, DType::kBf16, use("a", 1), use("b", 1), use("c", 1), h100());
  EXPECT_TRUE(contains(warp[0].name, "softmax_warp_backward<c10::BFloat16, c10::BFloat16, float, 10, true, false>"))
      << warp[0].name;
  EXPECT_EQ(dims(warp[0].grid), "25x1x1");  // 4 warps of one row each per CTA
}

TEST(TrainingKernelsLoss, NllLossIsOneCtaOfThreadsForEvery16Rows) {
  const auto f = lower_nll_loss_forward(kTokens, kVocab, use("logp", 1), use("t", 8 * kTokens), use("loss", 4), h100());
  EXPECT_EQ(f.name, "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>");
  EXPECT_EQ(dims(f.grid), "1x1x1");
  EXPECT_EQ(dims(f.block), "128x1x1");
  const auto b = lower_nll_loss_backward(2 * kTokens, kVocab, use("t", 1), use("dlogp", 1), h100());
  EXPECT_EQ(b.name, "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>");
  EXPECT_EQ(dims(b.block), "256x1x1");
  EXPECT_EQ(dims(lower_nll_loss_backward(100, 10, use("t", 1), use("d", 1), h100()).block), "32x1x1");
  // Latency-bound: 16 rows a thread either way, so R = 2048 and 4096 take about as long
  // (18.3 and 18.7 us measured).
  const auto t = simulate({f, lower_nll_loss_forward(2 * kTokens, kVocab, use("a", 1), use("b", 1), use("c", 4), h100())});
  EXPECT_NEAR(t[0], t[1], 0.1 * t[0]);
  EXPECT_GT(t[0], 10.0);
  EXPECT_LT(t[0], 30.0);
}

// ---- column sums ------------------------------------------------------------------------------

TEST(TrainingKernelsColumnSum, MeasuredGridAndNameForTheNormWeightGradient) {
  // RMSNorm weight gradient of Llama 3.2 1B: 2048 token rows x 2048 features, bf16.
  const auto ls = lower_column_sum(2048, 2048, DType::kBf16, DType::kBf16, use("x", 2048.0 * 2048 * 2),
                                   use("w.grad", 4096), h100());
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].name, "Memset (Device)");  // the global reduction's semaphores
  EXPECT_EQ(ls[1].name,
            "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, "
            "at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, "
            "c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
            "c10::BFloat16, 4, 8> >");
  EXPECT_EQ(dims(ls[1].grid), "16x32x1");
  EXPECT_EQ(dims(ls[1].block), "32x4x1");
  EXPECT_NEAR(totals(ls[1]).dram_read_bytes, 2048.0 * 2048 * 2, 1.0);
  EXPECT_NEAR(totals(ls[1]).fp32_flops, 2048.0 * 2048, 1.0);
  const auto fp32 = lower_column_sum(4096, 2048, DType::kFp32, DType::kFp32, use("x", 1), use("y", 1), h100());
  EXPECT_TRUE(contains(fp32.back().name, "unsigned int, float, 4, 4> >")) << fp32.back().name;
  EXPECT_EQ(dims(fp32.back().grid), "16x64x1");
}

TEST(TrainingKernelsColumnSum, RowsSplitOverCtasOnlyWhenOutputsAreFew) {
  const auto grid = [](std::int64_t rows, std::int64_t cols) {
    return dims(lower_column_sum(rows, cols, DType::kBf16, DType::kBf16, use("x", 1), use("y", 1), h100()).back().grid);
  };
  // Few outputs, many rows: the rows go to ctas_per_output CTAs (GPT-2's biases; Qwen3's
  // per-head q/k-norm weights, where 65536 rows of 128 split 1024 ways).
  EXPECT_EQ(grid(4096, 768), "6x64x1");
  EXPECT_EQ(grid(4096, 2304), "18x64x1");
  EXPECT_EQ(grid(4096, 3072), "24x64x1");
  EXPECT_EQ(grid(65536, 128), "1x1024x1");
  EXPECT_EQ(grid(32768, 128), "1x512x1");
  // Threads would sum fewer than 256 rows each (512 rows over 4 warps): no split either.
  EXPECT_EQ(grid(512, 2048), "16x1x1");
  EXPECT_EQ(lower_column_sum(512, 2048, DType::kBf16, DType::kBf16, use("x", 1), use("y", 1), h100()).size(), 1u);
  // Many outputs, few rows (GPT-2's position embedding summed over the batch): no split, no memset.
  const auto wpe = lower_column_sum(8, 512 * 768, DType::kBf16, DType::kBf16, use("x", 1), use("y", 1), h100());
  ASSERT_EQ(wpe.size(), 1u);
  EXPECT_EQ(dims(wpe[0].grid), "768x1x1");
  EXPECT_EQ(dims(wpe[0].block), "32x4x1");
  // A row length only 1 divides: scalar outputs, 512 threads' worth of block.
  const auto odd = lower_column_sum(4096, 1001, DType::kFp32, DType::kFp32, use("x", 1), use("y", 1), h100());
  EXPECT_TRUE(contains(odd.back().name, "reduce_kernel<512, 1,")) << odd.back().name;
  EXPECT_NEAR(totals(odd.back()).dram_read_bytes, 4096.0 * 1001 * 4, 1.0);
}

TEST(TrainingKernelsColumnSum, TheLastCtaWalkOfPartialsGrowsWithTheSplit) {
  // Qwen3's q-norm weight (1024 partials a column) takes 65 us, its k-norm (512) 37.6 us.
  const auto t1024 = simulate(lower_column_sum(65536, 128, DType::kBf16, DType::kBf16, use("a", 65536.0 * 256),
                                               use("b", 256), h100()));
  const auto t512 = simulate(lower_column_sum(32768, 128, DType::kBf16, DType::kBf16, use("c", 32768.0 * 256),
                                              use("d", 256), h100()));
  EXPECT_GT(t1024.back(), 1.5 * t512.back());
  EXPECT_GT(t1024.back(), 45.0);
  EXPECT_LT(t1024.back(), 90.0);
}

// ---- embedding backward ---------------------------------------------------------------------

TEST(TrainingKernelsEmbedding, FewIndicesZeroTheTableThenAccumulatePerFeature) {
  const double table = 128256.0 * 2048 * 2;
  const auto ls = lower_embedding_backward(2048, 128256, 2048, DType::kBf16, use("ids", 2048 * 8),
                                           use("dx", 2048.0 * 2048 * 2), use("dW", table), h100());
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_TRUE(contains(ls[0].name, "FillFunctor<c10::BFloat16>")) << ls[0].name;
  EXPECT_EQ(dims(ls[0].grid), "256512x1x1");  // 262.7 M elements, 1024 a CTA
  EXPECT_NEAR(totals(ls[0]).dram_write_bytes, table, 0.01 * table);
  EXPECT_EQ(ls[1].name,
            "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, long>");
  EXPECT_EQ(dims(ls[1].grid), "64x1x1");
  EXPECT_EQ(dims(ls[1].block), "32x32x1");
  // GPT-2's position table (fp32 weights under autocast): 768 features.
  const auto wpe = lower_embedding_backward(512, 1024, 768, DType::kFp32, use("p", 1), use("g", 1), use("t", 1), h100());
  EXPECT_TRUE(contains(wpe[1].name, "embedding_backward_feature_kernel<float, float, long>"));
  EXPECT_EQ(dims(wpe[1].grid), "24x1x1");
}

TEST(TrainingKernelsEmbedding, ManyIndicesSortThenSumSegments) {
  // Qwen2 0.5B, 8 x 512 tokens into 151936 rows of 896.
  const auto ls = lower_embedding_backward(4096, 151936, 896, DType::kBf16, use("ids", 4096 * 8),
                                           use("dx", 4096.0 * 896 * 2), use("dW", 151936.0 * 896 * 2), h100());
  int memsets = 0, onesweeps = 0;
  for (const auto& l : ls) {
    memsets += l.name == "Memset (Device)";
    if (contains(l.name, "DeviceRadixSortOnesweepKernel")) {
      ++onesweeps;
      EXPECT_EQ(dims(l.grid), "1x1x1");
      EXPECT_EQ(dims(l.block), "384x1x1");
    }
    if (contains(l.name, "DeviceRadixSortHistogramKernel")) {
      EXPECT_EQ(dims(l.grid), "924x1x1");
    }
    if (contains(l.name, "krn_partials_per_segment")) {
      EXPECT_EQ(dims(l.grid), "128x1x1");
    }
    if (contains(l.name, "scan::DeviceScanKernel")) {
      EXPECT_EQ(dims(l.grid), "5x1x1");
    }
  }
  EXPECT_EQ(onesweeps, 8);
  EXPECT_EQ(memsets, 10);
  EXPECT_TRUE(contains(ls.front().name, "arange"));
  ASSERT_GE(ls.size(), 2u);
  const Launch& grad = ls[ls.size() - 2];
  const Launch& scatter = ls.back();
  EXPECT_EQ(grad.name, "void at::native::(anonymous namespace)::compute_grad_weight<c10::BFloat16, long>");
  EXPECT_EQ(dims(grad.grid), "4505x1x1");  // T / 10 + T partial segments
  EXPECT_EQ(dims(grad.block), "896x1x1");
  EXPECT_EQ(scatter.name, "void at::native::(anonymous namespace)::sum_and_scatter<c10::BFloat16, long>");
  EXPECT_EQ(dims(scatter.grid), "4096x1x1");
  // The gradient rows in, fp32 partial sums out; the table's rows written.
  EXPECT_NEAR(totals(grad).dram_read_bytes, 4096.0 * 896 * 2, 1.0);
  EXPECT_NEAR(totals(scatter).dram_write_bytes, 4096.0 * 896 * 2, 1.0);
  // Rows wider than 1024 features: two CTAs a segment.
  const auto wide = lower_embedding_backward(4096, 128256, 2048, DType::kFp32, use("a", 1), use("b", 1), use("c", 1), h100());
  EXPECT_EQ(dims(wide[wide.size() - 2].grid), "9010x1x1");
  EXPECT_EQ(dims(wide[wide.size() - 2].block), "1024x1x1");
  EXPECT_EQ(dims(wide.back().grid), "8192x1x1");
}

// ---- cuDNN attention backward ---------------------------------------------------------------

std::vector<Launch> sdpa_bwd(std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t S, std::int64_t D,
                             bool causal) {
  const double q = 2.0 * B * Hq * S * D, kv = 2.0 * B * Hkv * S * D;
  return lower_sdpa_backward(B, Hq, Hkv, S, D, causal, DType::kBf16, use("q", q), use("k", kv), use("v", kv),
                             use("o", q), use("do", q), use("dq", q), use("dk", kv), use("dv", kv), h100());
}

TEST(TrainingKernelsSdpaBackward, MeasuredLaunchSequenceForGroupedQueryAttention) {
  // Llama 3.2 1B: B = 4, 32 query heads over 8 KV heads, 512 tokens, head dimension 64.
  const auto ls = sdpa_bwd(4, 32, 8, 512, 64, true);
  ASSERT_EQ(ls.size(), 6u);
  EXPECT_EQ(ls[0].name, "Memset (Device)");
  EXPECT_EQ(ls[1].name, "void cudnn::fusion::compute_dot_do_o_specialized<true, 64>");
  EXPECT_EQ(dims(ls[1].grid), "32x4x32");
  EXPECT_EQ(dims(ls[1].block), "128x1x1");
  EXPECT_EQ(ls[2].name,
            "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_cga1x1x1_kernel0_0");
  EXPECT_EQ(dims(ls[2].grid), "132x1x1");  // persistent: one CTA per SM
  EXPECT_EQ(dims(ls[2].block), "384x1x1");
  EXPECT_EQ(ls[3].name, "void cudnn::fusion::convert_dq_to_16bits<true>");
  EXPECT_EQ(dims(ls[3].grid), "16x4x32");
  for (int i : {4, 5}) {
    EXPECT_EQ(ls[i].name, "void cudnn::fusion::fmha_reduce_head<true>");
    EXPECT_EQ(dims(ls[i].grid), "32x4x8");
  }
  // Head dimension 128 (Llama 3 8B, 2 x 1024 tokens): 8 rows a CTA in dot(dO, O), 16 in the
  // conversion, the 64x64x128 flash kernel.
  const auto d128 = sdpa_bwd(2, 32, 8, 1024, 128, true);
  EXPECT_EQ(dims(d128[1].grid), "128x2x32");
  EXPECT_TRUE(contains(d128[2].name, "_64x64x128_"));
  EXPECT_EQ(dims(d128[3].grid), "64x2x32");
  EXPECT_EQ(dims(d128[4].grid), "128x2x8");
  // Without grouping there is nothing to reduce (GPT-2: 12 heads of 64).
  EXPECT_EQ(sdpa_bwd(8, 12, 12, 512, 64, true).size(), 4u);
  EXPECT_THROW(sdpa_bwd(1, 6, 4, 128, 64, true), ModelError);
}

double cudnn_forward_tensor_flops(std::int64_t B, std::int64_t H, std::int64_t S, std::int64_t D, bool causal) {
  FlashFwdProblem p;
  p.B = B;
  p.H = p.Hk = H;
  p.Sq = p.Sk = S;
  p.D = D;
  p.causal = causal;
  p.tag = "fwd";
  return totals(lower_cudnn_sdpa(p, h100())).tensor_flops;
}

TEST(TrainingKernelsSdpaBackward, FiveMatmulsOfTheTileWhereTheForwardDoesTwo) {
  const auto flash_flops = [](const std::vector<Launch>& ls) { return totals(ls[2]).tensor_flops; };
  // Whole tiles: exactly 5 / 2 of the forward's.
  EXPECT_NEAR(flash_flops(sdpa_bwd(2, 8, 8, 1024, 64, false)) / cudnn_forward_tensor_flops(2, 8, 1024, 64, false), 2.5,
              1e-9);
  // Causal: the backward's 64-key tiles pad the diagonal less than the forward's 128-row ones,
  // so the ratio approaches 2.5 from below as the sequence grows.
  const double r512 = flash_flops(sdpa_bwd(4, 32, 32, 512, 64, true)) / cudnn_forward_tensor_flops(4, 32, 512, 64, true);
  const double r4k = flash_flops(sdpa_bwd(1, 8, 8, 4096, 128, true)) / cudnn_forward_tensor_flops(1, 8, 4096, 128, true);
  EXPECT_GT(r512, 2.1);
  EXPECT_LT(r512, r4k);
  EXPECT_NEAR(r4k, 2.5, 0.06);
  // Every (batch, head, key block, query tile at or after it) pair is charged once.
  const double pairs = 4.0 * 32 * (8 * 9 / 2);
  EXPECT_NEAR(flash_flops(sdpa_bwd(4, 32, 8, 512, 64, true)), pairs * 10 * 64 * 64 * 64, 1.0);
}

TEST(TrainingKernelsSdpaBackward, TheFlashKernelTakesAboutTwoAndAHalfForwards) {
  FlashFwdProblem p;
  p.B = 4;
  p.H = 32;
  p.Hk = 8;
  p.Sq = p.Sk = 512;
  p.D = 64;
  p.causal = true;
  p.tag = "fwd";
  const double fwd = simulate(lower_cudnn_sdpa(p, h100())).back();
  const double bwd = simulate(sdpa_bwd(4, 32, 8, 512, 64, true))[2];
  // Measured: 22.4 us forward, 58 us backward.
  EXPECT_GT(bwd / fwd, 1.8);
  EXPECT_LT(bwd / fwd, 3.5);
}

// ---- multi_tensor_apply ---------------------------------------------------------------------

std::vector<std::vector<TensorUse>> lists(int depth, const std::vector<std::int64_t>& elems, double elt = 2,
                                          const std::string& prefix = "list") {
  std::vector<std::vector<TensorUse>> out(static_cast<std::size_t>(depth));
  for (int l = 0; l < depth; ++l) {
    for (std::size_t t = 0; t < elems.size(); ++t) {
      out[static_cast<std::size_t>(l)].push_back(
          use(prefix + std::to_string(l) + ".t" + std::to_string(t), elt * static_cast<double>(elems[t])));
    }
  }
  return out;
}

std::vector<std::int64_t> grids(const std::vector<Launch>& ls) {
  std::vector<std::int64_t> g;
  for (const auto& l : ls) g.push_back(l.grid.x);
  return g;
}

constexpr const char* kMul = "BinaryOpScalarFunctor<c10::BFloat16, 1, 1, 0>, std::multiplies<float>, float";

TEST(TrainingKernelsMultiTensorApply, LaunchesWhenTheChunksFillUp) {
  // One tensor of 500 chunks of 65536: 320 CTAs, then the other 180.
  const std::vector<std::int64_t> big{500 * 65536};
  const auto ls = lower_multi_tensor_apply(big, DType::kBf16, lists(1, big), 1, kMul, 1.0, h100());
  EXPECT_EQ(grids(ls), (std::vector<std::int64_t>{320, 180}));
  EXPECT_EQ(dims(ls[0].block), "512x1x1");
  EXPECT_EQ(ls[0].name,
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
            "namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<c10::BFloat16, "
            "1, 1, 0>, std::multiplies<float>, float>");
  // A tensor cut by a launch carries over: 200 + 120 chunks, then 80, with a short last chunk.
  const std::vector<std::int64_t> two{200 * 65536, 200 * 65536 - 5};
  EXPECT_EQ(grids(lower_multi_tensor_apply(two, DType::kBf16, lists(1, two), 1, kMul, 1.0, h100())),
            (std::vector<std::int64_t>{320, 80}));
  // Llama 3.2 1B's 505,956,352 parameters in 38 tensors: 25 launches a foreach op, as measured.
  std::vector<std::int64_t> llama{128256LL * 2048};
  for (int layer = 0; layer < 4; ++layer) {
    for (std::int64_t n : {2048LL * 2048, 512LL * 2048, 512LL * 2048, 2048LL * 2048, 8192LL * 2048, 8192LL * 2048,
                           2048LL * 8192, 2048LL, 2048LL}) {
      llama.push_back(n);
    }
  }
  llama.push_back(2048);
  const auto step = lower_multi_tensor_apply(llama, DType::kBf16, lists(1, llama), 1, kMul, 1.0, h100());
  EXPECT_EQ(step.size(), 25u);
  EXPECT_EQ(step.back().grid.x, 49);
}

TEST(TrainingKernelsMultiTensorApply, LaunchesWhenTheTensorSlotsFillUp) {
  // 40 small tensors: 36 fit TensorListMetadata<4>, 110 fit <1>, 96 the scalar-list variant.
  const std::vector<std::int64_t> small(40, 1000);
  EXPECT_EQ(grids(lower_multi_tensor_apply(small, DType::kBf16, lists(4, small), 1,
                                           "PointwiseOpScalarFunctor<c10::BFloat16, 4, 4, 0>", 3.0, h100())),
            (std::vector<std::int64_t>{36, 4}));
  const std::vector<std::int64_t> many(120, 1000);
  EXPECT_EQ(grids(lower_multi_tensor_apply(many, DType::kBf16, lists(1, many), 1, kMul, 1.0, h100())),
            (std::vector<std::int64_t>{110, 10}));
  const auto div = lower_multi_tensor_apply(many, DType::kBf16, lists(1, many), 1,
                                            "BinaryOpScalarListFunctor<c10::BFloat16, 1, 1, 0>, std::divides<float>",
                                            2.0, h100());
  EXPECT_EQ(grids(div), (std::vector<std::int64_t>{96, 24}));
  EXPECT_TRUE(contains(div[0].name, "TensorListScalarListMetadata<float, 1>"));
  EXPECT_TRUE(contains(div[0].name, "std::divides<float> >")) << div[0].name;  // as demangled
  // The fused AdamW kernel's 4 lists: 36 tensors a launch.
  EXPECT_EQ(grids(lower_fused_adamw(small, DType::kBf16, DType::kBf16, lists(4, small), h100())),
            (std::vector<std::int64_t>{36, 4}));
  EXPECT_THROW(lower_multi_tensor_apply(small, DType::kBf16, lists(6, small), 1, kMul, 1.0, h100()), ModelError);
}

TEST(TrainingKernelsMultiTensorApply, BytesFollowTheListsLoadedAndStored) {
  const std::vector<std::int64_t> n{1 << 20};
  const double bytes = 2.0 * (1 << 20);
  // In place on one list: read and written.
  const auto mul = totals(lower_multi_tensor_apply(n, DType::kBf16, lists(1, n), 1, kMul, 1.0, h100()));
  EXPECT_NEAR(mul.dram_read_bytes, bytes, 1.0);
  EXPECT_NEAR(mul.dram_write_bytes, bytes, 1.0);
  EXPECT_NEAR(mul.fp32_flops, 1 << 20, 1.0);
  // sqrt into a new list (listed first): UnaryOpFunctor<T, 2, 1, 1> loads one list.
  const auto sqrt = totals(lower_multi_tensor_apply(n, DType::kBf16, lists(2, n), 1,
                                                    "UnaryOpFunctor<c10::BFloat16, 2, 1, 1>, at::native::Sqrt<float>",
                                                    2.0, h100()));
  EXPECT_NEAR(sqrt.dram_read_bytes, bytes, 1.0);
  EXPECT_NEAR(sqrt.dram_write_bytes, bytes, 1.0);
  // addcmul_(v, g, g): the gradient list twice, loaded from DRAM once.
  auto l3 = lists(2, n);
  l3.push_back(l3[1]);
  const auto addcmul = totals(lower_multi_tensor_apply(
      n, DType::kBf16, l3, 1, "PointwiseOpScalarFunctor<c10::BFloat16, 3, 3, 0>, std::multiplies<float>, float", 3.0,
      h100()));
  EXPECT_NEAR(addcmul.dram_read_bytes, 2 * bytes, 1.0);
  EXPECT_NEAR(addcmul.l2_bytes, 4 * bytes, 1.0);
  // Fused AdamW with fp32 moments: params and grads (bf16) and both moments in; params and
  // moments out.
  const auto fused = totals(lower_fused_adamw(n, DType::kBf16, DType::kFp32,
                                              {lists(1, n, 2, "p")[0], lists(1, n, 2, "g")[0], lists(1, n, 4, "m")[0],
                                               lists(1, n, 4, "v")[0]},
                                              h100()));
  EXPECT_NEAR(fused.dram_read_bytes, (2 + 2 + 4 + 4) * double(1 << 20), 1.0);
  EXPECT_NEAR(fused.dram_write_bytes, (2 + 4 + 4) * double(1 << 20), 1.0);
}

TEST(TrainingKernelsMultiTensorApply, ShortLaunchesAreLatencyBoundFullOnesStream) {
  // A full launch of bf16 mul_ (84 MB) and the 49-CTA tail: 34.8 and 17.7 us measured.
  const std::vector<std::int64_t> n{369 * 65536};
  const auto t = simulate(lower_multi_tensor_apply(n, DType::kBf16, lists(1, n), 1, kMul, 1.0, h100()));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_GT(t[0], 25.0);
  EXPECT_LT(t[0], 45.0);
  EXPECT_GT(t[1], 12.0);
  EXPECT_LT(t[1], 30.0);
}

}  // namespace
}  // namespace gpusim::models
