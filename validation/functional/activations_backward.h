// The backward of SiLU as autograd runs it (ATen's silu_backward_kernel, one elementwise
// launch; the hf-train lowering's ".mlp.grad_act", EwFunc::kSiluBackward):
// dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x), in fp32.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

// dy and x of the same shape. Counts as functional::elementwise (contiguous, vectorized path):
// both inputs loaded and the output stored once (elt_bytes), 6 FLOPs per element (exp and the
// reciprocal are special-function ops).
OpRun silu_backward(const Tensor& dy, const Tensor& x, std::int64_t elt_bytes);

}  // namespace gpusim::functional
