#include "validation/functional/gemm_backward.h"

#include <stdexcept>

#include "validation/functional/gemm.h"

namespace gpusim::functional {

Tensor transpose(const Tensor& a) {
  if (a.shape.size() != 2) throw std::invalid_argument("transpose: 2-D tensor");
  const std::int64_t R = a.dim(0), C = a.dim(1);
  Tensor t({C, R});
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) t[c * R + r] = a[r * C + c];
  return t;
}

OpRun linear_grad_weight(const Tensor& dy, const Tensor& x, const models::GemmTiling& t,
                         std::int64_t elt_bytes) {
  if (dy.shape.size() != 2 || x.shape.size() != 2 || dy.dim(0) != x.dim(0)) {
    throw std::invalid_argument("linear_grad_weight: dY [T, N], x [T, K]");
  }
  return gemm(transpose(dy), x, t, elt_bytes);
}

OpRun linear_grad_input(const Tensor& dy, const Tensor& w, const models::GemmTiling& t,
                        std::int64_t elt_bytes) {
  if (dy.shape.size() != 2 || w.shape.size() != 2 || dy.dim(1) != w.dim(0)) {
    throw std::invalid_argument("linear_grad_input: dY [T, N], W [N, K]");
  }
  return gemm(dy, w, t, elt_bytes);
}

models::GemmProblem grad_weight_problem(std::int64_t T, std::int64_t N, std::int64_t K) {
  models::GemmProblem p;
  p.M = N;
  p.N = K;
  p.K = T;
  return p;
}

models::GemmProblem grad_input_problem(std::int64_t T, std::int64_t N, std::int64_t K) {
  models::GemmProblem p;
  p.M = T;
  p.N = K;
  p.K = N;
  return p;
}

}  // namespace gpusim::functional
