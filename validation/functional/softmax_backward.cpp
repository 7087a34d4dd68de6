#include "validation/functional/softmax_backward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpusim::functional {

std::int64_t softmax_backward_rows_per_cta(std::int64_t C, std::int64_t elt_bytes) {
  if (C > 1024 || C * elt_bytes > 4096) return 1;
  std::int64_t pow2 = 1;
  while (pow2 < C) pow2 *= 2;
  const std::int64_t warp = std::min<std::int64_t>(pow2, 32);
  return (128 / warp) * (pow2 <= 128 ? 2 : 1);
}

OpRun softmax_backward(const Tensor& y, const Tensor& dy, bool log, std::int64_t rows_per_cta,
                       std::int64_t elt_bytes) {
  if (y.shape.size() != 2 || dy.shape != y.shape || rows_per_cta <= 0) {
    throw std::invalid_argument("softmax_backward: y and dy [R, C]");
  }
  const std::int64_t R = y.dim(0), C = y.dim(1);
  OpRun run;
  run.out = Tensor({R, C});
  Footprint fy(y.numel(), elt_bytes), fdy(dy.numel(), elt_bytes);
  const std::int64_t ctas = (R + rows_per_cta - 1) / rows_per_cta;
  run.kernels.push_back(run_ctas(
      log ? "log_softmax_backward" : "softmax_backward", ctas, [&](std::int64_t cta, CtaCount& c) {
        const std::int64_t r0 = cta * rows_per_cta, rows = std::min(rows_per_cta, R - r0);
        for (std::int64_t r = r0; r < r0 + rows; ++r) {
          const float* yr = &y.data[static_cast<std::size_t>(r * C)];
          const float* g = &dy.data[static_cast<std::size_t>(r * C)];
          float* out = &run.out.data[static_cast<std::size_t>(r * C)];
          count_load(c, fdy, r * C, C);
          count_load(c, fy, r * C, C);
          // The row's sum first (a warp or block reduction on the GPU; in order here).
          float sum = 0.f;
          for (std::int64_t j = 0; j < C; ++j) sum += log ? g[j] : g[j] * yr[j];
          for (std::int64_t j = 0; j < C; ++j)
            out[j] = log ? g[j] - std::exp(yr[j]) * sum : yr[j] * (g[j] - sum);
        }
        c.math_flops = c.useful_flops = 4 * rows * C;
        c.bytes_written = rows * C * elt_bytes;
      }));
  return run;
}

}  // namespace gpusim::functional
