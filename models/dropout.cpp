// nn.Dropout in training mode (aten/src/ATen/native/cuda/Dropout.cu, PyTorch 2.11):
// fused_dropout_kernel_vec draws Philox random numbers (curand_uniform4, four a call), keeps
// each element with probability 1 - p, scales it by 1 / (1 - p) and writes a bool mask for the
// backward. 256 threads a CTA, at most as many CTAs as fit the SMs at full thread occupancy
// (multiProcessorCount * maxThreadsPerMultiProcessor / 256), a grid-stride loop of 8-element
// vectors. Its backward (masked_scale_kernel, grad * mask / (1 - p)) is an elementwise kernel
// (EwFunc::kMaskedScale). cuDNN's attention with dropout first unpacks the Philox seed and
// offset on the GPU (at::cuda::philox::unpack_cudnn, one thread). Checked against the GPT-2
// calibration cases of validation/data/hf_train_h100.json.gz and hf_train2_h100.json.gz.
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "models/common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;

// curand_init's Philox state setup (the subsequence skip-ahead by the thread's index) before the
// first draw, then a DRAM round trip per loop iteration's loads: the setup is about 4 DRAM
// latencies of dependent integer arithmetic (GPT-2: 3.1 M elements in 7.2 us, 1.6 M in 4.6 us).
constexpr double kPhiloxSetupRoundTrips = 4.0;
constexpr int kVec = 8;
constexpr std::int64_t kThreads = 256;
// Philox 4x32-10 for four numbers: ten rounds of two 32-bit multiplies and the xors (~10 integer
// ops an element), the uniform conversion, the compare and the scale.
constexpr double kOpsPerElement = 14.0;

}  // namespace

Launch lower_dropout(std::int64_t n, hw::DType dtype, const TensorUse& in, const TensorUse& out,
                     const TensorUse& mask, const hw::HardwareSpec& hw) {
  if (n <= 0) throw ModelError("dropout: the element count must be positive");
  const double e = detail::elt_bytes(dtype);
  const std::int64_t max_ctas = static_cast<std::int64_t>(hw.sm_count) * (hw.sm.max_threads / kThreads);
  const std::int64_t ctas = std::max<std::int64_t>(1, std::min(max_ctas, ceil_div(n, kThreads)));
  const std::int64_t iterations = ceil_div(n, ctas * kThreads * kVec);
  detail::StreamingKernel k;
  k.name = fmt::format(
      "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<{}, float, unsigned int, 1, {}, bool>",
      detail::aten_type_name(dtype), kVec);
  k.family = "dropout";
  k.ctas = ctas;
  k.threads = kThreads;
  k.regs = 40;
  const double elems = static_cast<double>(n);
  k.read_bytes = elems * e;
  k.write_bytes = elems * (e + 1.0);  // the output and the bool mask
  k.fp32_flops = elems * kOpsPerElement;
  k.inflight_per_cta = static_cast<double>(kThreads * kVec) * e;
  k.round_trips = kPhiloxSetupRoundTrips + static_cast<double>(iterations);
  k.reads = {in};
  k.writes = {out, mask};
  return detail::streaming_launch(k, hw);
}

Launch lower_philox_unpack(const TensorUse& seeds, const hw::HardwareSpec& hw) {
  detail::StreamingKernel k;
  k.name = "at::cuda::philox::unpack_cudnn(at::PhiloxCudaState, long*, long*)";
  k.family = "dropout";
  k.ctas = 1;
  k.threads = 1;
  k.regs = 16;
  k.read_bytes = 16;
  k.write_bytes = 16;
  k.round_trips = 1.0;
  k.reads = {seeds};
  k.writes = {seeds};
  return detail::streaming_launch(k, hw);
}

}  // namespace gpusim::models
