// Rotary position embedding as Hugging Face's eager apply_rotary_pos_emb runs it
// (workloads/hf_eager_lowering.cpp, rope()): x * cos + rotate_half(x) * sin with
// rotate_half(x) = cat(-x2, x1) (x1, x2 the halves of the head dimension). Five kernels:
// mul (x, cos), neg (x2), cat (-x2, x1), mul (rotated, sin), add. cos and sin are [S, D],
// broadcast over batch and heads.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

struct RopeLaunch {
  // CTAs per input of the strided cat kernel (CatArrayBatchedCopy: 2 per SM, each grid-striding
  // over its input with 512 threads).
  std::int64_t cat_ctas_per_input = 264;
  // q and k are transposed views ([B, S, H, D] memory): every kernel takes the strided path,
  // except the final add when it is dense (one new token).
  bool add_dense = false;
};

// x [B, H, S, D] (D even), cos and sin [S, D]. kernels: mul_cos, neg, cat, mul_sin, add.
// The elementwise kernels count as functional::elementwise; the cat's CTA (bx, input) copies
// elements bx * 512 + t + i * cat_ctas_per_input * 512 of its input (t < 512, i >= 0), CTA
// index input * cat_ctas_per_input + bx.
OpRun rope(const Tensor& x, const Tensor& cos, const Tensor& sin, const RopeLaunch& launch,
           std::int64_t elt_bytes);

}  // namespace gpusim::functional
