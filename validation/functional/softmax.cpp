#include "validation/functional/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gpusim::functional {

std::int64_t softmax_rows_per_cta(std::int64_t C, std::int64_t elt_bytes) {
  if (C > 2048 || C * elt_bytes > 8192) return 1;
  std::int64_t pow2 = 1;
  while (pow2 < C) pow2 *= 2;
  const std::int64_t warp = std::min<std::int64_t>(pow2, 32);
  return (128 / warp) * (pow2 <= 128 ? 2 : 1);
}

OpRun softmax(const Tensor& x, std::int64_t rows_per_cta, std::int64_t elt_bytes) {
  if (x.shape.size() != 2 || rows_per_cta <= 0) throw std::invalid_argument("softmax: x [R, C]");
  const std::int64_t R = x.dim(0), C = x.dim(1);
  OpRun run;
  run.out = Tensor({R, C});
  Footprint fx(x.numel(), elt_bytes);
  const std::int64_t ctas = (R + rows_per_cta - 1) / rows_per_cta;
  run.kernels.push_back(run_ctas("softmax", ctas, [&](std::int64_t cta, CtaCount& c) {
    const std::int64_t r0 = cta * rows_per_cta, rows = std::min(rows_per_cta, R - r0);
    for (std::int64_t r = r0; r < r0 + rows; ++r) {
      const float* in = &x.data[static_cast<std::size_t>(r * C)];
      float* out = &run.out.data[static_cast<std::size_t>(r * C)];
      float mx = -std::numeric_limits<float>::infinity();
      count_load(c, fx, r * C, C);
      for (std::int64_t j = 0; j < C; ++j) mx = std::max(mx, in[j]);
      float sum = 0.f;
      for (std::int64_t j = 0; j < C; ++j) {
        out[j] = std::exp(in[j] - mx);
        sum += out[j];
      }
      const float inv = 1.f / sum;
      for (std::int64_t j = 0; j < C; ++j) out[j] *= inv;
    }
    c.math_flops = c.useful_flops = 4 * rows * C;
    c.bytes_written = rows * C * elt_bytes;
  }));
  return run;
}

}  // namespace gpusim::functional
