#include "validation/functional/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "validation/functional/elementwise.h"
#include "validation/functional/gemm.h"
#include "validation/functional/softmax.h"

namespace gpusim::functional {

MoeRun moe(const Tensor& x, const MoeWeights& w, const MoeConfig& cfg) {
  const std::int64_t T = x.dim(0), d = x.dim(1), E = w.router.dim(0), F = w.down.dim(2);
  const std::int64_t k = cfg.top_k, S = T * k, eb = cfg.elt_bytes;
  if (k <= 0 || k > E || w.gate_up.dim(1) != 2 * F || w.down.dim(1) != d) {
    throw std::invalid_argument("moe: inconsistent shapes");
  }
  MoeRun out;
  auto& kernels = out.run.kernels;
  const auto append = [&](OpRun&& r) {
    for (auto& kc : r.kernels) kernels.push_back(std::move(kc));
    return std::move(r.out);
  };

  // Router: logits [T, E] = x @ router^T, then probabilities in fp32.
  const Tensor logits = append(gemm(x, w.router, cfg.router_tiling, eb, /*b_nk=*/true));
  const Tensor probs = append(softmax(logits, softmax_rows_per_cta(E, 4), 4));

  // Top-k per token (one CTA per token).
  out.experts.assign(static_cast<std::size_t>(S), 0);
  out.weights.assign(static_cast<std::size_t>(S), 0.f);
  kernels.push_back(run_ctas("moe.topk", T, [&](std::int64_t t, CtaCount& c) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    const float* p = &probs.data[static_cast<std::size_t>(t * E)];
    std::stable_sort(order.begin(), order.end(), [p](std::int64_t a, std::int64_t b) { return p[a] > p[b]; });
    float sum = 0.f;
    for (std::int64_t s = 0; s < k; ++s) sum += p[order[static_cast<std::size_t>(s)]];
    for (std::int64_t s = 0; s < k; ++s) {
      const std::int64_t e = order[static_cast<std::size_t>(s)];
      out.experts[static_cast<std::size_t>(t * k + s)] = e;
      out.weights[static_cast<std::size_t>(t * k + s)] = cfg.renormalize ? p[e] / sum : p[e];
    }
    c.bytes_loaded = c.bytes_unique = E * 4;
    c.bytes_written = k * 12;  // fp32 weight and int64 index per slot
  }));

  // Dispatch: pairs sorted by expert (stable), rows per expert, the tokens' rows gathered.
  std::vector<std::int64_t> pairs(static_cast<std::size_t>(S));
  std::iota(pairs.begin(), pairs.end(), 0);
  std::stable_sort(pairs.begin(), pairs.end(), [&](std::int64_t a, std::int64_t b) {
    return out.experts[static_cast<std::size_t>(a)] < out.experts[static_cast<std::size_t>(b)];
  });
  out.rows_per_expert.assign(static_cast<std::size_t>(E), 0);
  for (const auto e : out.experts) ++out.rows_per_expert[static_cast<std::size_t>(e)];
  EwKernel gather;
  gather.name = "moe.gather";
  gather.out_shape = {S, d};
  gather.inputs = {EwInput{&x, [&](std::int64_t i) { return pairs[static_cast<std::size_t>(i / d)] / k * d + i % d; }}};
  gather.f = [](const float* v) { return v[0]; };
  gather.per_cta = d;  // one row per CTA
  gather.in_bytes = gather.out_bytes = eb;
  const Tensor xs = append(elementwise(gather));

  const Tensor gu = append(grouped_gemm(xs, out.rows_per_expert, w.gate_up,
                                        grouped_gemm_tiling(S, E, w.gate_up.dim(1), cfg.hopper), eb));

  // SiLU(gate) * up over [S, F].
  EwKernel act;
  act.name = "moe.act";
  act.out_shape = {S, F};
  act.inputs = {EwInput{&gu, [F](std::int64_t i) { return (i / F) * 2 * F + i % F; }},
                EwInput{&gu, [F](std::int64_t i) { return (i / F) * 2 * F + F + i % F; }}};
  act.f = [](const float* v) { return v[0] / (1.f + std::exp(-v[0])) * v[1]; };
  act.per_cta = elementwise_elements_per_cta(2, eb, eb, true);
  act.in_bytes = act.out_bytes = eb;
  act.flops_per_element = 4;
  const Tensor h = append(elementwise(act));

  const Tensor y = append(grouped_gemm(h, out.rows_per_expert, w.down,
                                       grouped_gemm_tiling(S, E, w.down.dim(1), cfg.hopper), eb));

  // Combine: each token sums its k rows of y, weighted (one CTA per token, slot order).
  std::vector<std::int64_t> where(static_cast<std::size_t>(S));  // pair -> row of y
  for (std::int64_t r = 0; r < S; ++r) where[static_cast<std::size_t>(pairs[static_cast<std::size_t>(r)])] = r;
  out.run.out = Tensor({T, d});
  Footprint fy(y.numel(), eb), fw(S, 4);
  kernels.push_back(run_ctas("moe.combine", T, [&](std::int64_t t, CtaCount& c) {
    for (std::int64_t j = 0; j < d; ++j) {
      float acc = 0.f;
      for (std::int64_t s = 0; s < k; ++s) {
        const std::int64_t row = where[static_cast<std::size_t>(t * k + s)];
        count_load(c, fy, row * d + j);
        acc += out.weights[static_cast<std::size_t>(t * k + s)] * y[row * d + j];
      }
      out.run.out[t * d + j] = acc;
    }
    for (std::int64_t s = 0; s < k; ++s) count_load(c, fw, t * k + s);
    c.math_flops = c.useful_flops = 2 * k * d;
    c.bytes_written = d * eb;
  }));
  return out;
}

}  // namespace gpusim::functional
