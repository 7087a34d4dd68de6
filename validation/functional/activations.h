// The activations of transformer MLPs as one elementwise kernel each (ATen's silu_kernel and
// GeluCUDAKernelImpl, contiguous: the vectorized path), computed in fp32.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

OpRun silu(const Tensor& x, std::int64_t elt_bytes);       // x / (1 + exp(-x))
OpRun gelu_erf(const Tensor& x, std::int64_t elt_bytes);   // 0.5 x (1 + erf(x / sqrt 2))
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): F.gelu(approximate="tanh"), one kernel
// (GPT-2's NewGELUActivation spells the same function as eight eager kernels).
OpRun gelu_tanh(const Tensor& x, std::int64_t elt_bytes);

}  // namespace gpusim::functional
