#include "validation/functional/norms.h"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace gpusim::functional {
namespace {

// One implementation for both norms: rms drops the mean and beta.
OpRun norm(const Tensor& x, const Tensor& gamma, const Tensor* beta, float eps,
           std::int64_t elt_bytes, bool rms) {
  if (x.shape.size() != 2 || gamma.numel() != x.dim(1) || (beta && beta->numel() != x.dim(1))) {
    throw std::invalid_argument("norm: x [R, C], gamma and beta [C]");
  }
  const std::int64_t R = x.dim(0), C = x.dim(1);
  const std::int64_t stat_floats = rms ? 1 : 2;  // [rstd] or [mean, rstd] per row
  OpRun run;
  run.out = Tensor({R, C});
  std::vector<float> stats(static_cast<std::size_t>(R * stat_floats));
  const float inv_c = 1.f / static_cast<float>(C);

  // The statistics of row r from x (counting the row's loads into c).
  const auto moments = [&](std::int64_t r, CtaCount& c, Footprint& fx) {
    const float* in = &x.data[static_cast<std::size_t>(r * C)];
    count_load(c, fx, r * C, C);
    float mean = 0.f;
    if (!rms) {
      for (std::int64_t j = 0; j < C; ++j) mean += in[j];
      mean *= inv_c;
    }
    float sq = 0.f;
    for (std::int64_t j = 0; j < C; ++j) {
      const float d = in[j] - mean;
      sq += d * d;
    }
    const float rstd = 1.f / std::sqrt(sq * inv_c + eps);
    if (!rms) stats[static_cast<std::size_t>(r * 2)] = mean;
    stats[static_cast<std::size_t>(r * stat_floats + stat_floats - 1)] = rstd;
    c.math_flops += rms ? 2 * C : 4 * C;
  };
  // y of row r from x and the statistics (x loads counted by the caller's choice of `fx`).
  const auto normalize = [&](std::int64_t r, CtaCount& c, Footprint* fx, Footprint& fg,
                             Footprint* fb) {
    const float* in = &x.data[static_cast<std::size_t>(r * C)];
    float* out = &run.out.data[static_cast<std::size_t>(r * C)];
    const float mean = rms ? 0.f : stats[static_cast<std::size_t>(r * 2)];
    const float rstd = stats[static_cast<std::size_t>(r * stat_floats + stat_floats - 1)];
    if (fx) count_load(c, *fx, r * C, C);
    count_load(c, fg, 0, C);
    if (beta) count_load(c, *fb, 0, C);
    for (std::int64_t j = 0; j < C; ++j) {
      out[j] = (in[j] - mean) * rstd * gamma[j] + (beta ? (*beta)[j] : 0.f);
    }
    c.math_flops += rms ? 2 * C : 4 * C;
    c.bytes_written += C * elt_bytes;
  };

  Footprint fg(C, elt_bytes), fb(C, elt_bytes);
  if (C % 4 == 0) {
    // Fused: the CTA keeps its row on chip between the passes (x loaded once).
    Footprint fx(x.numel(), elt_bytes);
    run.kernels.push_back(run_ctas(rms ? "rms_norm" : "layer_norm", R, [&](std::int64_t r, CtaCount& c) {
      moments(r, c, fx);
      normalize(r, c, nullptr, fg, beta ? &fb : nullptr);
      c.bytes_written += stat_floats * 4;
      c.useful_flops = c.math_flops;
    }));
    return run;
  }
  Footprint fx1(x.numel(), elt_bytes);
  run.kernels.push_back(run_ctas(rms ? "rms_norm_moments" : "layer_norm_moments", R,
                                 [&](std::int64_t r, CtaCount& c) {
                                   moments(r, c, fx1);
                                   c.bytes_written = stat_floats * 4;
                                   c.useful_flops = c.math_flops;
                                 }));
  // The second kernel loads x again and the statistics the first one stored.
  Footprint fx2(x.numel(), elt_bytes), fs(R * stat_floats, 4);
  run.kernels.push_back(run_ctas(rms ? "rms_norm_forward" : "layer_norm_forward", R,
                                 [&](std::int64_t r, CtaCount& c) {
                                   count_load(c, fs, r * stat_floats, stat_floats);
                                   normalize(r, c, &fx2, fg, beta ? &fb : nullptr);
                                   c.useful_flops = c.math_flops;
                                 }));
  return run;
}

}  // namespace

OpRun layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                 std::int64_t elt_bytes) {
  return norm(x, gamma, &beta, eps, elt_bytes, false);
}

OpRun rms_norm(const Tensor& x, const Tensor& gamma, float eps, std::int64_t elt_bytes) {
  return norm(x, gamma, nullptr, eps, elt_bytes, true);
}

}  // namespace gpusim::functional
