// ATen's elementwise kernels as they split a tensor over CTAs (models/elementwise_model.cpp):
// 128 threads, each a fixed number of consecutive elements, CTA c taking elements
// [c * per_cta, (c + 1) * per_cta). Inputs may be broadcast or strided views: each input maps
// an output element to the element of its tensor it reads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

// Elements per CTA: 128 threads x elements per thread: 8 on the vectorized path (contiguous
// operands; 16 when the operands together are 1 byte), 4 on the unrolled path (a dynamic
// cast: `cast`), and on the legacy path (a strided or broadcast operand) 2 for a 4-byte output
// computed in its input type, else 4.
std::int64_t elementwise_elements_per_cta(int arity, std::int64_t in_bytes, std::int64_t out_bytes,
                                          bool strided, bool cast = false);

struct EwInput {
  const Tensor* tensor = nullptr;
  // Output element -> element of `tensor`; empty: the same index (a dense operand).
  std::function<std::int64_t(std::int64_t)> index;
};

struct EwKernel {
  std::string name;
  std::vector<std::int64_t> out_shape;
  std::vector<EwInput> inputs;
  // The function of the inputs' values (in input order) at one element.
  std::function<float(const float*)> f;
  std::int64_t per_cta = 1024;
  std::int64_t in_bytes = 2, out_bytes = 2;
  std::int64_t flops_per_element = 0;  // arithmetic, special functions (exp, erf, tanh) excluded
};

// One launch. Counts per CTA: every input element loaded (in_bytes; unique per input tensor,
// so a broadcast operand's unique bytes are its own size), every output element stored
// (out_bytes), flops_per_element per element.
OpRun elementwise(const EwKernel& k);

}  // namespace gpusim::functional
