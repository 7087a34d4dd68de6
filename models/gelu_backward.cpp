// GELU's backward with the tanh approximation (F.gelu(x, approximate="tanh")'s derivative:
// ATen's GeluBackwardCUDAKernelImpl, one elementwise launch), as Gemma's GeGLU
// (gelu_pytorch_tanh on the gate) runs it in a training step (validation/data/hf_train3_h100.json.gz,
// gemma3-1b-6l_b8_s256: vectorized_elementwise_kernel<8, GeluBackward...>). It is a two-input
// elementwise kernel: the elementwise model's launch for one (TensorIterator's vectorized,
// unrolled or legacy path, its grid, bytes and memory-level parallelism), with the derivative's
// arithmetic per element: in fp32, x^2 and x^3 terms and the inner scale (5 FMAs), tanh (one
// SFU op and a few FP32 ops of the fast approximation), and the product rule
// 0.5 * (1 + t) + 0.5 * x * (1 - t^2) * inner' times dY (8 more).
#include <string>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
constexpr double kGeluTanhBackwardFp32PerElement = 16;
constexpr double kGeluTanhBackwardSfuPerElement = 1;
}  // namespace

std::vector<Launch> lower_gelu_tanh_backward(std::int64_t n, hw::DType dtype, bool strided, const TensorUse& dy,
                                             const TensorUse& x, const TensorUse& dx, const hw::HardwareSpec& hw) {
  if (n <= 0) throw ModelError("gelu backward: the element count must be positive");
  ElementwiseProblem p;
  p.func = EwFunc::kMul;  // two tensor inputs, one output: the same iteration and bytes
  p.n = n;
  p.in = p.out = dtype;
  p.inputs = {dy.tensor, x.tensor};
  p.output = dx.tensor;
  p.strided = strided;
  std::vector<Launch> out = lower_elementwise(p, hw, "");
  const std::string t = dtype == hw::DType::kFp32 ? "float" : dtype == hw::DType::kFp16 ? "c10::Half" : "c10::BFloat16";
  const std::string mul = "at::native::BinaryFunctor<" + t + ", " + t + ", " + t +
                          ", at::native::binary_internal::MulFunctor<float> >";
  const std::string functor =
      "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#1}::"
      "operator()() const::{lambda()#4}::operator()() const::{lambda(" + t + ", " + t + ")#1}";
  for (Launch& l : out) {
    const auto at = l.name.find(mul);
    if (at != std::string::npos) l.name.replace(at, mul.size(), functor);
    for (auto& c : l.ctas) {
      // The product's model charges one FP32 op per element: that many elements in this CTA.
      const double elements = c.work.fp32_flops;
      c.work.fp32_flops = elements * kGeluTanhBackwardFp32PerElement;
      c.work.sfu_ops = elements * kGeluTanhBackwardSfuPerElement;
    }
  }
  return out;
}

}  // namespace gpusim::models
