#include "validation/functional/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "validation/functional/elementwise.h"
#include "validation/functional/softmax.h"
#include "validation/functional/softmax_backward.h"

namespace gpusim::functional {
namespace {

void check_targets(const std::vector<std::int64_t>& target, std::int64_t R, std::int64_t C) {
  if (static_cast<std::int64_t>(target.size()) != R)
    throw std::invalid_argument("nll_loss: one target per row");
  for (const auto t : target) {
    if (t != kIgnoreIndex && (t < 0 || t >= C))
      throw std::invalid_argument("nll_loss: target out of range");
  }
}

}  // namespace

OpRun log_softmax(const Tensor& x, std::int64_t rows_per_cta, std::int64_t elt_bytes) {
  if (x.shape.size() != 2 || rows_per_cta <= 0)
    throw std::invalid_argument("log_softmax: x [R, C]");
  const std::int64_t R = x.dim(0), C = x.dim(1);
  OpRun run;
  run.out = Tensor({R, C});
  Footprint fx(x.numel(), elt_bytes);
  const std::int64_t ctas = (R + rows_per_cta - 1) / rows_per_cta;
  run.kernels.push_back(run_ctas("log_softmax", ctas, [&](std::int64_t cta, CtaCount& c) {
    const std::int64_t r0 = cta * rows_per_cta, rows = std::min(rows_per_cta, R - r0);
    for (std::int64_t r = r0; r < r0 + rows; ++r) {
      const float* in = &x.data[static_cast<std::size_t>(r * C)];
      float* out = &run.out.data[static_cast<std::size_t>(r * C)];
      count_load(c, fx, r * C, C);
      float mx = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < C; ++j) mx = std::max(mx, in[j]);
      float sum = 0.f;
      for (std::int64_t j = 0; j < C; ++j) sum += std::exp(in[j] - mx);
      const float shift = mx + std::log(sum);
      for (std::int64_t j = 0; j < C; ++j) out[j] = in[j] - shift;
    }
    c.math_flops = c.useful_flops = 4 * rows * C;
    c.bytes_written = rows * C * elt_bytes;
  }));
  return run;
}

NllLoss nll_loss(const Tensor& logp, const std::vector<std::int64_t>& target,
                 std::int64_t logp_bytes) {
  if (logp.shape.size() != 2) throw std::invalid_argument("nll_loss: logp [R, C]");
  const std::int64_t R = logp.dim(0), C = logp.dim(1);
  check_targets(target, R, C);
  NllLoss out;
  Footprint ft(R, 8), fl(logp.numel(), logp_bytes);
  out.kernel = run_ctas("nll_loss", 1, [&](std::int64_t, CtaCount& c) {
    // Summed in row order (the kernel's threads stride over the rows, then a tree: the order
    // differs, the sum does not beyond rounding).
    float sum = 0.f, weight = 0.f;
    for (std::int64_t r = 0; r < R; ++r) {
      count_load(c, ft, r);
      const std::int64_t t = target[static_cast<std::size_t>(r)];
      if (t == kIgnoreIndex) continue;
      count_load(c, fl, r * C + t);
      sum -= logp[r * C + t];
      weight += 1.f;
      c.math_flops += 2;
    }
    out.loss = sum / weight;
    out.total_weight = weight;
    c.useful_flops = c.math_flops;
    c.bytes_written = 8;
  });
  return out;
}

OpRun nll_loss_backward(const std::vector<std::int64_t>& target, std::int64_t C, float total_weight,
                        float grad_loss, std::int64_t grad_bytes) {
  const auto R = static_cast<std::int64_t>(target.size());
  check_targets(target, R, C);
  EwKernel fill;
  fill.name = "nll_loss_backward.zero";
  fill.out_shape = {R, C};
  fill.f = [](const float*) { return 0.f; };
  fill.per_cta = elementwise_elements_per_cta(0, grad_bytes, grad_bytes, false);
  fill.in_bytes = fill.out_bytes = grad_bytes;
  OpRun run = elementwise(fill);
  Footprint ft(R, 8), fs(2, 4);
  run.kernels.push_back(run_ctas("nll_loss_backward", 1, [&](std::int64_t, CtaCount& c) {
    count_load(c, fs, 0, 2);  // grad_loss and total_weight
    const float g = -grad_loss / total_weight;
    for (std::int64_t r = 0; r < R; ++r) {
      count_load(c, ft, r);
      const std::int64_t t = target[static_cast<std::size_t>(r)];
      if (t == kIgnoreIndex) continue;
      run.out[r * C + t] = g;
      c.bytes_written += grad_bytes;
    }
  }));
  return run;
}

CrossEntropy cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& target) {
  if (logits.shape.size() != 2) throw std::invalid_argument("cross_entropy: logits [R, C]");
  const std::int64_t C = logits.dim(1);
  constexpr std::int64_t kF32 = 4;
  CrossEntropy ce;
  OpRun logp = log_softmax(logits, softmax_rows_per_cta(C, kF32), kF32);
  NllLoss nll = nll_loss(logp.out, target);
  OpRun dlogp = nll_loss_backward(target, C, nll.total_weight);
  OpRun dx = softmax_backward(logp.out, dlogp.out, /*log=*/true,
                              softmax_backward_rows_per_cta(C, kF32), kF32);
  ce.loss = nll.loss;
  ce.dlogits = std::move(dx.out);
  ce.kernels.push_back(std::move(logp.kernels[0]));
  ce.kernels.push_back(std::move(nll.kernel));
  for (auto& k : dlogp.kernels) ce.kernels.push_back(std::move(k));
  ce.kernels.push_back(std::move(dx.kernels[0]));
  return ce;
}

}  // namespace gpusim::functional
