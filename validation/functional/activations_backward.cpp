#include "validation/functional/activations_backward.h"

#include <cmath>
#include <stdexcept>

#include "validation/functional/elementwise.h"

namespace gpusim::functional {

OpRun silu_backward(const Tensor& dy, const Tensor& x, std::int64_t elt_bytes) {
  if (dy.shape != x.shape) throw std::invalid_argument("silu_backward: dy and x shapes differ");
  EwKernel k;
  k.name = "silu_backward";
  k.out_shape = x.shape;
  k.inputs = {EwInput{&dy, {}}, EwInput{&x, {}}};
  k.f = [](const float* v) {
    const float s = 1.f / (1.f + std::exp(-v[1]));
    return v[0] * s * (1.f + v[1] * (1.f - s));
  };
  k.per_cta = elementwise_elements_per_cta(2, elt_bytes, elt_bytes, false);
  k.in_bytes = k.out_bytes = elt_bytes;
  k.flops_per_element = 6;
  return elementwise(k);
}

}  // namespace gpusim::functional
