// Kernel classes: the measured kernel names of the random sets and gpusim's names of the same
// kernels fall into one class; different kernels do not.
#include "validation/kernel_class.h"

#include <gtest/gtest.h>

#include "tests/support/temp_files.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {
namespace {

TEST(KernelClass, TilesAndTemplateArgumentsAside) {
  // cuBLAS's names as the profiler records them, gpusim's as it writes them.
  EXPECT_EQ(kernel_class("nvjet_sm90_tst_64x8_64x16_1x2_h_bz_NNT"), "nvjet_sm90");
  EXPECT_EQ(kernel_class("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopA_NNT"), "nvjet_sm90");
  EXPECT_EQ(kernel_class("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nn_align1>("
                         "cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nn_align1::Params)"),
            kernel_class("cutlass_75_tensorop_s1688gemm_bf16_128x128_tn_align1"));
  EXPECT_NE(kernel_class("cutlass_75_tensorop_s1688gemm_bf16_64x64_nn_align1"),
            kernel_class("cutlass_80_tensorop_s16816gemm_bf16_64x64_32x6_nn_align2"));
  EXPECT_EQ(kernel_class("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_"
                         "align2>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align2::Params)"),
            "cutlass_80_wmma_tensorop");
  EXPECT_EQ(kernel_class("void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4, true, ...>(...)"), "gemmSN_TN_kernel");
  EXPECT_NE(kernel_class("void gemmSN_TN_kernel<float, 128, ...>"), kernel_class("void gemmSN_NN_kernel<float, 256, ...>"));
  // Other kernels: the function's own name.
  EXPECT_EQ(kernel_class("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, "
                         "false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)"),
            "softmax_warp_forward");
  EXPECT_EQ(kernel_class("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, "
                         "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(...)"),
            "cunn_SoftMaxForward");
  EXPECT_EQ(kernel_class("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::"
                         "BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
                         "std::array<char*, 3ul>)"),
            "vectorized_elementwise_kernel");
  EXPECT_EQ(kernel_class("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_"
                         "cga1x1x1_kernel0_0"),
            "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35");
}

TEST(KernelClass, TheTileALibraryGemmNames) {
  // cuBLAS's names and gpusim's give the same tile, in cuBLAS's order (N first).
  EXPECT_EQ(kernel_tile("nvjet_sm90_tst_64x8_64x16_1x2_h_bz_NNT"), "64x8");
  EXPECT_EQ(kernel_tile("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopA_NNT"), "192x128");
  EXPECT_EQ(kernel_tile("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nn_align1>("
                        "cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nn_align1::Params)"),
            "64x64");
  EXPECT_EQ(kernel_tile("cutlass_80_tensorop_s1688gemm_128x256_32x3_nn_align1"),
            kernel_tile("cutlass_80_tensorop_s1688gemm_tf32_128x256_32x3_nn_align1"));
  EXPECT_EQ(kernel_tile("cutlass_80_simt_sgemm_128x32_8x5_nn_align1"), "128x32");
  EXPECT_EQ(kernel_tile("cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align2"), "32x32");
  EXPECT_EQ(kernel_tile("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x32x8_stage3_warpsize2x1x1_ffma"),
            "64x32");
  EXPECT_NE(kernel_tile("nvjet_sm90_tst_64x8_64x16_1x2_h_bz_NNT"), kernel_tile("nvjet_sm90_tst_64x16_64x16_2x1_v_bz_NNT"));
  // Kernels that name no tile.
  EXPECT_EQ(kernel_tile("void gemmSN_NN_kernel<float, 256, 4, 2, 8, 4, 4, false, ...>(...)"), "");
  EXPECT_EQ(kernel_tile("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>>"),
            "");
}

TEST(KernelClass, HelpersAreTheReduceAndTheMemset) {
  EXPECT_TRUE(is_helper_kernel("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>(...)"));
  EXPECT_TRUE(is_helper_kernel("Memset (Device)"));
  EXPECT_FALSE(is_helper_kernel("nvjet_sm90_tst_64x16_64x16_1x1_h_bz_splitK_NNT"));
}

TEST(KernelClass, AnOpsPrimaryKernelIsItsLongestNonHelper) {
  gpusim::testing::TempDir dir;
  const auto csv = dir.write(
      "ops.csv",
      "op,family,dtype,shape,params_json,held_out,kernel_name,duration_us_median,op_kernel_time_us_median\n"
      "matmul,matmul,bf16,M=16 N=16 K=3568,\"{\"\"M\"\":16,\"\"N\"\":16,\"\"K\"\":3568}\",1,"
      "nvjet_sm90_tst_64x16_64x16_1x1_h_bz_splitK_NNT,1.5,3.1\n"
      "matmul,matmul,bf16,M=16 N=16 K=3568,\"{\"\"M\"\":16,\"\"N\"\":16,\"\"K\"\":3568}\",1,"
      "\"void cublasLt::splitKreduce_kernel<32, 16, int, float>(x)\",1.6,3.1\n");
  const auto ops = read_measured_ops(csv);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].primary_kernel, "nvjet_sm90_tst_64x16_64x16_1x1_h_bz_splitK_NNT");
}

}  // namespace
}  // namespace gpusim::validation
