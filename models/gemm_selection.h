// cuBLAS's GEMM kernel choice (gemm_selection.cpp) as the lowering (gemm_model.cpp) uses it: what
// runs a product, with its tile and K split. Internal to the GEMM model.
#pragma once

#include <cstdint>
#include <utility>

#include "hw/hardware_spec.h"
#include "models/gemm_config.h"

namespace gpusim::models::gemm_detail {

enum class GemmPath { kGemmsn, kGemv, kDot, kTiled };

// What cuBLAS runs for a product: gemmSN, the GEMV, or a tiled kernel (SIMT, mma.sync or nvjet)
// with its tile and split. One place for the lowering and gemm_tiling.
struct GemmPlan {
  GemmPath path = GemmPath::kTiled;
  Choice choice;
};

GemmPlan plan_gemm(const hw::HardwareSpec& hw, const Problem& p, bool bias, bool linear);

// gemmSN's launch shape (the kernels and their measurements at the definition).
struct GemmsnShape {
  std::int64_t cols = 0;        // output columns per CTA (grid x)
  std::int64_t row_groups = 1;  // CTAs sharing a column block, each with its share of the rows
  std::int64_t threads = 0;
  std::int64_t k_groups = 1;    // threads walking K side by side for one output column
  std::int64_t rows = 0;        // TN: the template instance's rows per CTA (M or more, padded)
  bool vector_loads = false;    // 16-bit NN rows of 2- or 4-element loads (not single elements)
};
GemmsnShape gemmsn_shape(const Problem& p, bool linear);

// One output row or column on sm_90 off the TMA path: a few long dot products run cuBLAS's
// dot_kernel (128 threads, 32 chunks of K per product, fp32 partials) and reduce_1Block_kernel
// (one CTA per product adds its partials), the rest the GEMV kernel (random sets 3-5,
// ops{3,4,5}_h100.json: dot for 3x1x8410, 1x58x16240, 1x97x6586, 40x1x13849 tf32; gemvx for
// 1x8283x1943 fp32, 43x1x91, 6844x1x239, 2917x1x2600 tf32, 1x1557x8).
constexpr std::int64_t kDotMaxProducts = 128;
constexpr std::int64_t kDotMinK = 2048;
constexpr std::int64_t kDotChunks = 32;
// A single 16-bit dot product (1x1xK) runs dot_kernel on 496 CTAs whatever K, and the reduce over
// their 496 partials (sets 3-40, both chips: 1x1x1, 1x1x3 fp16, 1x1x644, 1x1x1950; gpusim had run
// the GEMV, 20-45% fast).
constexpr std::int64_t kSingleDotCtas = 496;
bool single_dot(const Problem& p);
std::int64_t dot_chunks(const Problem& p);

}  // namespace gpusim::models::gemm_detail
