// The backward of softmax and log_softmax over the last dimension of R x C, as ATen's
// host_softmax_backward splits it (models/loss_kernels.cpp, lower_log_softmax_backward): for
// C <= 1024 and C * elt_bytes <= 4096, softmax_warp_backward packs several rows into a
// 128-thread CTA; longer rows take one CTA each (cunn_SoftMaxBackward[Smem]). Per row, from the
// forward's output y and its gradient dy:
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

// Rows per CTA: for C <= 1024 and C * elt_bytes <= 4096 a warp of min(32, next_pow2(C)) lanes
// per row, 2 rows per warp when next_pow2(C) <= 128, 128 threads per CTA; otherwise 1.
std::int64_t softmax_backward_rows_per_cta(std::int64_t C, std::int64_t elt_bytes);

// y, dy [R, C] -> dx [R, C]; CTA c takes rows [c * rows_per_cta, ...). Counts per CTA: each
// element of dy and y loaded once, dx stored once (elt_bytes); math_flops = useful_flops = 4
// per element (the sum's add, the product or exp's argument, the multiply, the subtraction;
// exp itself is a special-function op, not counted).
OpRun softmax_backward(const Tensor& y, const Tensor& dy, bool log, std::int64_t rows_per_cta,
                       std::int64_t elt_bytes);

}  // namespace gpusim::functional
