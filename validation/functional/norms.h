// LayerNorm and RMSNorm over the rows of R x C, as ATen's layer_norm_kernel.cu decomposes them
// (models/row_reduction_model.cpp): when C % 4 == 0, one fused kernel
// (vectorized_layer_norm_kernel), one CTA per row, writing y and the row's statistics;
// otherwise RowwiseMomentsCUDAKernel (statistics) then LayerNormForwardCUDAKernel (y), one CTA
// per row each, the second re-reading x and the statistics.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

// y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + eps) (biased variance). Writes
// mean and rstd (fp32, 8 B per row) besides y. x [R, C], gamma and beta [C].
OpRun layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                 std::int64_t elt_bytes);

// y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps). Writes rstd only (fp32, 4 B per
// row): RMSNorm has no mean to save.
OpRun rms_norm(const Tensor& x, const Tensor& gamma, float eps, std::int64_t elt_bytes);

// FLOPs counted per element: LayerNorm 8 (sum for the mean; subtract and square-accumulate
// FMA for the variance; subtract, scale and FMA with gamma and beta), RMSNorm 4 (square-
// accumulate FMA; scale and multiply by gamma). Both passes over the row run in the same CTA.

}  // namespace gpusim::functional
