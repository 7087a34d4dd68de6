#include "validation/functional/rope_backward.h"

#include <stdexcept>

namespace gpusim::functional {

OpRun rope_backward(const Tensor& dy, const Tensor& cos, const Tensor& sin,
                    std::int64_t elt_bytes) {
  if (dy.shape.size() != 4 || dy.dim(3) % 2 != 0)
    throw std::invalid_argument("rope_backward: dy [B, H, S, D], D even");
  const std::int64_t S = dy.dim(2), D = dy.dim(3), half = D / 2, rows = dy.numel() / D;
  if (cos.numel() != S * D || sin.numel() != S * D)
    throw std::invalid_argument("rope_backward: cos, sin [S, D]");
  OpRun run;
  run.out = Tensor(dy.shape);
  Footprint fdy(dy.numel(), elt_bytes), fc(S * D, elt_bytes), fs(S * D, elt_bytes);
  run.kernels.push_back(run_ctas("rope_backward", rows, [&](std::int64_t r, CtaCount& c) {
    const std::int64_t s = r % S;
    count_load(c, fdy, r * D, D);
    count_load(c, fc, s * D, D);
    count_load(c, fs, s * D, D);
    const float* g = &dy.data[static_cast<std::size_t>(r * D)];
    const float* cr = &cos.data[static_cast<std::size_t>(s * D)];
    const float* sr = &sin.data[static_cast<std::size_t>(s * D)];
    float* out = &run.out.data[static_cast<std::size_t>(r * D)];
    for (std::int64_t j = 0; j < half; ++j) {
      out[j] = g[j] * cr[j] + g[j + half] * sr[j + half];
      out[j + half] = g[j + half] * cr[j + half] - g[j] * sr[j];
    }
    c.math_flops = c.useful_flops = 3 * D;
    c.bytes_written = D * elt_bytes;
  }));
  return run;
}

}  // namespace gpusim::functional
