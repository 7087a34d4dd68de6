// The backward of LayerNorm and RMSNorm over the rows of R x C as ATen's fused kernels run it
// (layer_norm_backward_cuda; F.rms_norm's backward is the same pair without the mean): one CTA
// per row computes dx from dy, x, gamma and the row's saved statistics
// (layer_norm_grad_input_kernel), and a column kernel sums gamma's (and beta's) gradient over
// the rows, one CTA per block of 32 columns walking the rows in order (GammaBetaBackward).
//   LayerNorm: xhat = (x - mean) rstd, g = dy gamma,
//              dx = rstd (g - mean(g) - xhat mean(g xhat)), dgamma = sum_r dy xhat, dbeta = sum_r
//              dy
//   RMSNorm:   xhat = x rstd, dx = rstd (g - xhat mean(g xhat)), dgamma = sum_r dy xhat
// No cost model covers these fused kernels: the hf-train lowering runs HF's RMSNorm backward
// through its eager fp32 ops (elementwise kernels and a column sum, column_sum.h), which compute
// the same function. Counts are kept as everywhere (every input loaded once per CTA that needs
// it), checked against the algorithm's own totals only.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

// What the forward saves per row (fp32): mean (LayerNorm only) and rstd. The forward kernels of
// norms.h compute and store them but return only y; this recomputes them the same way (fp32,
// in row order).
struct NormStats {
  Tensor mean, rstd;  // [R]; mean is empty for RMSNorm
};
NormStats norm_statistics(const Tensor& x, float eps, bool rms);

struct NormGrads {
  Tensor dx, dgamma, dbeta;           // dbeta empty for RMSNorm
  std::vector<KernelCounts> kernels;  // norm_bwd_input, norm_bwd_gamma_beta
};

// x and dy [R, C], gamma [C]. Counts: the input kernel loads the row of x and dy, gamma and the
// row's statistics and stores dx (elt_bytes; statistics 4 B); the column kernel loads its
// columns of x and dy for every row and every row's statistics, and stores its columns of
// dgamma (and dbeta).
NormGrads layer_norm_backward(const Tensor& x, const Tensor& gamma, const NormStats& stats,
                              const Tensor& dy, std::int64_t elt_bytes);
NormGrads rms_norm_backward(const Tensor& x, const Tensor& gamma, const NormStats& stats,
                            const Tensor& dy, std::int64_t elt_bytes);

constexpr std::int64_t kGammaBetaColumns = 32;  // columns per CTA of the column kernel

}  // namespace gpusim::functional
