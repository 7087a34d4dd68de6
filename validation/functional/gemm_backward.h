// The backward of F.linear, y[T, N] = x[T, K] W[N, K]^T, as autograd runs it
// (workloads/hf_train_lowering.cpp, linear_backward): two cuBLAS GEMMs with transposed
// operands, the weight's gradient first. Each is the forward's decomposition (gemm.h) on the
// problem the lowering's mm() hands to models/gemm_model.cpp:
//   dW[N, K] = dY^T X: GemmProblem{M = N, N = K, K = T}, A = dY read transposed;
//   dX[T, K] = dY W:   GemmProblem{M = T, N = K, K = N}, B = W read as [K, N] (row-major).
// cuBLAS reads a transposed operand in place (the layout flags); here dY^T is copied before
// the GEMM, uncounted: a tile loads the same elements whichever way they are laid out, so the
// loads and the unique footprint count the same.
#pragma once

#include <cstdint>

#include "models/families.h"
#include "validation/functional/op_run.h"

namespace gpusim::functional {

// [R, C] -> [C, R].
Tensor transpose(const Tensor& a);

// dY [T, N], x [T, K] -> dW [N, K]; kernels as gemm().
OpRun linear_grad_weight(const Tensor& dy, const Tensor& x, const models::GemmTiling& t,
                         std::int64_t elt_bytes);
// dY [T, N], W [N, K] -> dX [T, K]; kernels as gemm().
OpRun linear_grad_input(const Tensor& dy, const Tensor& w, const models::GemmTiling& t,
                        std::int64_t elt_bytes);

// The problems the lowering emits for them (M, N, K in GEMM terms).
models::GemmProblem grad_weight_problem(std::int64_t T, std::int64_t N, std::int64_t K);
models::GemmProblem grad_input_problem(std::int64_t T, std::int64_t N, std::int64_t K);

}  // namespace gpusim::functional
