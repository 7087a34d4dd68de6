#include "validation/functional/activations.h"

#include <cmath>

#include "validation/functional/elementwise.h"

namespace gpusim::functional {
namespace {

OpRun unary(const char* name, const Tensor& x, std::int64_t elt_bytes, std::int64_t flops,
            std::function<float(float)> f) {
  EwKernel k;
  k.name = name;
  k.out_shape = x.shape;
  k.inputs = {EwInput{&x, {}}};
  k.f = [f = std::move(f)](const float* v) { return f(v[0]); };
  k.per_cta = elementwise_elements_per_cta(1, elt_bytes, elt_bytes, false);
  k.in_bytes = k.out_bytes = elt_bytes;
  k.flops_per_element = flops;
  return elementwise(k);
}

}  // namespace

OpRun silu(const Tensor& x, std::int64_t elt_bytes) {
  // negate, add 1, divide
  return unary("silu", x, elt_bytes, 3, [](float v) { return v / (1.f + std::exp(-v)); });
}

OpRun gelu_erf(const Tensor& x, std::int64_t elt_bytes) {
  // scale by 1/sqrt 2, add 1, multiply by x, by 0.5
  return unary("gelu", x, elt_bytes, 4, [](float v) {
    return 0.5f * v * (1.f + std::erf(v * 0.70710678118654752f));
  });
}

OpRun gelu_tanh(const Tensor& x, std::int64_t elt_bytes) {
  // x^3 (2), 0.044715 x^3 + x (FMA, 2), scale, add 1, two multiplies
  return unary("gelu_tanh", x, elt_bytes, 8, [](float v) {
    const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.f + std::tanh(inner));
  });
}

}  // namespace gpusim::functional
