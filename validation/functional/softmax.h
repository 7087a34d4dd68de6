// Softmax over the last dimension of R x C, as ATen's kernels split it over CTAs
// (models/row_reduction_model.cpp): softmax_warp_forward packs several short rows into a
// 128-thread CTA; longer rows take one CTA each. Each row: max, exp(x - max), sum, scale.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

// Rows per CTA of ATen's host_softmax for rows of C elements of elt_bytes: for C <= 2048 and
// C * elt_bytes <= 8192 (softmax_warp_forward), a warp of min(32, next_pow2(C)) lanes per row,
// 2 rows per warp when next_pow2(C) <= 128, 128 threads per CTA; otherwise 1.
std::int64_t softmax_rows_per_cta(std::int64_t C, std::int64_t elt_bytes);

// x [R, C] -> softmax rows; CTA c takes rows [c * rows_per_cta, ...). Counts per CTA: each
// element loaded and stored once (elt_bytes); math_flops = useful_flops = 4 per element (the
// max compare, the subtraction, the sum, the final scale; exp is a special-function op and
// not counted). One launch (ATen splits only past 2^30 / C rows, far beyond test sizes).
OpRun softmax(const Tensor& x, std::int64_t rows_per_cta, std::int64_t elt_bytes);

}  // namespace gpusim::functional
