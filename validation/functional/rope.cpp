#include "validation/functional/rope.h"

#include <algorithm>
#include <stdexcept>

#include "validation/functional/elementwise.h"

namespace gpusim::functional {

OpRun rope(const Tensor& x, const Tensor& cos, const Tensor& sin, const RopeLaunch& launch,
           std::int64_t elt_bytes) {
  if (x.shape.size() != 4 || x.dim(3) % 2 != 0) throw std::invalid_argument("rope: x [B, H, S, D], D even");
  const std::int64_t B = x.dim(0), H = x.dim(1), S = x.dim(2), D = x.dim(3), half = D / 2;
  if (cos.numel() != S * D || sin.numel() != S * D) throw std::invalid_argument("rope: cos, sin [S, D]");
  const std::int64_t strided_per_cta = elementwise_elements_per_cta(2, elt_bytes, elt_bytes, true);
  const auto table = [S, D](std::int64_t e) { return e % (S * D); };  // [B, H, S, D] -> [S, D]
  OpRun run;

  EwKernel mul_cos;
  mul_cos.name = "rope.mul_cos";
  mul_cos.out_shape = x.shape;
  mul_cos.inputs = {EwInput{&x, {}}, EwInput{&cos, table}};
  mul_cos.f = [](const float* v) { return v[0] * v[1]; };
  mul_cos.per_cta = strided_per_cta;
  mul_cos.in_bytes = mul_cos.out_bytes = elt_bytes;
  mul_cos.flops_per_element = 1;
  OpRun xc = elementwise(mul_cos);

  // neg over the second half of every head row: element e of [B, H, S, D/2] is x2's.
  EwKernel neg;
  neg.name = "rope.neg";
  neg.out_shape = {B, H, S, half};
  neg.inputs = {EwInput{&x, [half](std::int64_t e) { return (e / half) * 2 * half + half + e % half; }}};
  neg.f = [](const float* v) { return -v[0]; };
  neg.per_cta = elementwise_elements_per_cta(1, elt_bytes, elt_bytes, true);
  neg.in_bytes = neg.out_bytes = elt_bytes;
  neg.flops_per_element = 1;
  OpRun ng = elementwise(neg);

  // cat(-x2, x1) along the last dimension: input 0 is ng (dense), input 1 the x1 view.
  Tensor rot({B, H, S, D});
  {
    const std::int64_t n_in = B * H * S * half, gx = launch.cat_ctas_per_input;
    constexpr std::int64_t kThreads = 512;
    Footprint f_ng(n_in, elt_bytes), f_x(x.numel(), elt_bytes);
    run.kernels.push_back(run_ctas("rope.cat", 2 * gx, [&](std::int64_t cta, CtaCount& c) {
      const std::int64_t input = cta / gx, bx = cta % gx;
      for (std::int64_t base = bx * kThreads; base < n_in; base += gx * kThreads) {
        for (std::int64_t e = base; e < std::min(base + kThreads, n_in); ++e) {
          const std::int64_t row = e / half, col = e % half;
          float val;
          if (input == 0) {
            count_load(c, f_ng, e);
            val = ng.out[e];
          } else {
            count_load(c, f_x, row * D + col);
            val = x[row * D + col];
          }
          rot[row * D + input * half + col] = val;
          c.bytes_written += elt_bytes;
        }
      }
    }));
  }

  EwKernel mul_sin = mul_cos;
  mul_sin.name = "rope.mul_sin";
  mul_sin.inputs = {EwInput{&rot, {}}, EwInput{&sin, table}};
  OpRun rs = elementwise(mul_sin);

  EwKernel add;
  add.name = "rope.add";
  add.out_shape = x.shape;
  add.inputs = {EwInput{&xc.out, {}}, EwInput{&rs.out, {}}};
  add.f = [](const float* v) { return v[0] + v[1]; };
  add.per_cta = elementwise_elements_per_cta(2, elt_bytes, elt_bytes, !launch.add_dense);
  add.in_bytes = add.out_bytes = elt_bytes;
  add.flops_per_element = 1;
  OpRun sum = elementwise(add);

  run.out = std::move(sum.out);
  // Launch order: mul_cos, neg, cat, mul_sin, add.
  std::vector<KernelCounts> ordered{std::move(xc.kernels[0]), std::move(ng.kernels[0]),
                                    std::move(run.kernels[0]), std::move(rs.kernels[0]),
                                    std::move(sum.kernels[0])};
  run.kernels = std::move(ordered);
  return run;
}

}  // namespace gpusim::functional
