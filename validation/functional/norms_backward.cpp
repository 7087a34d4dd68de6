#include "validation/functional/norms_backward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace gpusim::functional {
namespace {

NormGrads norm_backward(const Tensor& x, const Tensor& gamma, const NormStats& stats,
                        const Tensor& dy, std::int64_t elt_bytes, bool rms) {
  if (x.shape.size() != 2 || dy.shape != x.shape || gamma.numel() != x.dim(1)) {
    throw std::invalid_argument("norm backward: x and dy [R, C], gamma [C]");
  }
  const std::int64_t R = x.dim(0), C = x.dim(1);
  if (stats.rstd.numel() != R || (!rms && stats.mean.numel() != R)) {
    throw std::invalid_argument("norm backward: statistics [R]");
  }
  const auto mean_of = [&](std::int64_t r) { return rms ? 0.f : stats.mean[r]; };
  const std::int64_t stat_floats = rms ? 1 : 2;
  NormGrads g;
  g.dx = Tensor({R, C});
  g.dgamma = Tensor({C});
  if (!rms) g.dbeta = Tensor({C});

  Footprint fx(x.numel(), elt_bytes), fdy(dy.numel(), elt_bytes), fg(C, elt_bytes),
      fs(R * stat_floats, 4);
  const float inv_c = 1.f / static_cast<float>(C);
  g.kernels.push_back(run_ctas("norm_bwd_input", R, [&](std::int64_t r, CtaCount& c) {
    const float* xr = &x.data[static_cast<std::size_t>(r * C)];
    const float* gr = &dy.data[static_cast<std::size_t>(r * C)];
    float* out = &g.dx.data[static_cast<std::size_t>(r * C)];
    count_load(c, fx, r * C, C);
    count_load(c, fdy, r * C, C);
    count_load(c, fg, 0, C);
    count_load(c, fs, r * stat_floats, stat_floats);
    const float mean = mean_of(r), rstd = stats.rstd[r];
    // The row's two sums: of g = dy * gamma and of g * xhat.
    float sum_g = 0.f, sum_gx = 0.f;
    for (std::int64_t j = 0; j < C; ++j) {
      const float gj = gr[j] * gamma[j], xhat = (xr[j] - mean) * rstd;
      sum_g += gj;
      sum_gx += gj * xhat;
    }
    const float mean_g = rms ? 0.f : sum_g * inv_c, mean_gx = sum_gx * inv_c;
    for (std::int64_t j = 0; j < C; ++j) {
      const float gj = gr[j] * gamma[j], xhat = (xr[j] - mean) * rstd;
      out[j] = rstd * (gj - mean_g - xhat * mean_gx);
    }
    // Per element: g and xhat (3), the sums (3, one FMA), then g, xhat again and dx (6).
    c.math_flops = c.useful_flops = 12 * C;
    c.bytes_written = C * elt_bytes;
  }));

  const std::int64_t blocks = (C + kGammaBetaColumns - 1) / kGammaBetaColumns;
  Footprint fx2(x.numel(), elt_bytes), fdy2(dy.numel(), elt_bytes), fs2(R * stat_floats, 4);
  g.kernels.push_back(run_ctas("norm_bwd_gamma_beta", blocks, [&](std::int64_t b, CtaCount& c) {
    const std::int64_t j0 = b * kGammaBetaColumns, cols = std::min(kGammaBetaColumns, C - j0);
    std::vector<float> dg(static_cast<std::size_t>(cols), 0.f),
        db(static_cast<std::size_t>(cols), 0.f);
    for (std::int64_t r = 0; r < R; ++r) {
      count_load(c, fx2, r * C + j0, cols);
      count_load(c, fdy2, r * C + j0, cols);
      count_load(c, fs2, r * stat_floats, stat_floats);
      const float mean = mean_of(r), rstd = stats.rstd[r];
      for (std::int64_t j = 0; j < cols; ++j) {
        const float d = dy[r * C + j0 + j];
        dg[static_cast<std::size_t>(j)] += d * (x[r * C + j0 + j] - mean) * rstd;
        db[static_cast<std::size_t>(j)] += d;
      }
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      g.dgamma[j0 + j] = dg[static_cast<std::size_t>(j)];
      if (!rms) g.dbeta[j0 + j] = db[static_cast<std::size_t>(j)];
    }
    // Per element: xhat (2) and the FMA into dgamma (2), the add into dbeta (LayerNorm).
    c.math_flops = c.useful_flops = R * cols * (rms ? 4 : 5);
    c.bytes_written = cols * elt_bytes * (rms ? 1 : 2);
  }));
  return g;
}

}  // namespace

NormStats norm_statistics(const Tensor& x, float eps, bool rms) {
  if (x.shape.size() != 2) throw std::invalid_argument("norm_statistics: x [R, C]");
  const std::int64_t R = x.dim(0), C = x.dim(1);
  const float inv_c = 1.f / static_cast<float>(C);
  NormStats s;
  s.rstd = Tensor({R});
  if (!rms) s.mean = Tensor({R});
  for (std::int64_t r = 0; r < R; ++r) {
    const float* in = &x.data[static_cast<std::size_t>(r * C)];
    float mean = 0.f;
    if (!rms) {
      for (std::int64_t j = 0; j < C; ++j) mean += in[j];
      mean *= inv_c;
      s.mean[r] = mean;
    }
    float sq = 0.f;
    for (std::int64_t j = 0; j < C; ++j) sq += (in[j] - mean) * (in[j] - mean);
    s.rstd[r] = 1.f / std::sqrt(sq * inv_c + eps);
  }
  return s;
}

NormGrads layer_norm_backward(const Tensor& x, const Tensor& gamma, const NormStats& stats,
                              const Tensor& dy, std::int64_t elt_bytes) {
  return norm_backward(x, gamma, stats, dy, elt_bytes, false);
}

NormGrads rms_norm_backward(const Tensor& x, const Tensor& gamma, const NormStats& stats,
                            const Tensor& dy, std::int64_t elt_bytes) {
  return norm_backward(x, gamma, stats, dy, elt_bytes, true);
}

}  // namespace gpusim::functional
