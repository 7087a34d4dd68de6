// LayerNorm's backward (aten/src/ATen/native/cuda/layer_norm_kernel.cu, PyTorch 2.11), checked
// against the GPT-2 calibration cases of validation/data/hf_train_h100.json.gz and hf_train2_h100.json.gz:
//  * layer_norm_grad_input_kernel_vectorized<T, float, false> (C divisible by the vector width):
//    one CTA of 128 threads per row loads dY, X and gamma, reduces two sums over the row across
//    the block (warp shuffles, shared memory, barriers), then writes dX;
//  * GammaBetaBackwardCUDAKernelTemplate<T, float, 32, 32, 256, false, true, false>: one CTA of
//    32 x 32 threads per 32 columns walks every row (each thread row takes rows 32 apart, eight
//    loads of dY and X unrolled per 256-row block), accumulating dY * (X - mean) * rstd and dY,
//    then reduces over threadIdx.y in shared memory and writes dgamma and dbeta.
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <string>

#include "models/common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;

// grad_input: the row's loads, the two block-wide reductions (each a shuffle tree, a barrier,
// a shared-memory pass and a second barrier) and the dependent compute-and-store pass: about 10
// dependent DRAM-latency steps a CTA. Fitted on GPT-2's 768-wide rows (4096 rows: 10.3 us, 2048:
// 5.1-5.5 us; the rows of a wave of resident CTAs each take that long).
constexpr double kGradInputRoundTrips = 10.0;
constexpr double kGradInputRoundTripsPerVector = 1.0;  // a further 128 x 4 elements of the row
// gamma/beta: each 256-row block of a CTA is eight dependent-free loads a thread then their
// FMAs, about 2.1 DRAM round trips; the final shared-memory reduction and the store about 6.
// Fitted on the same cases (4096 rows: 13.9 us, 2048: 7.9-8.1 us, 24 CTAs).
constexpr double kGammaBetaRoundTripsPerBlock = 2.1;
constexpr double kGammaBetaReduceRoundTrips = 6.0;

}  // namespace

std::vector<Launch> lower_layer_norm_backward(std::int64_t R, std::int64_t C, hw::DType dtype, const TensorUse& x,
                                              const TensorUse& weight, const TensorUse& grad_y,
                                              const TensorUse& grad_x, const TensorUse& grad_weight,
                                              const TensorUse& grad_bias, const hw::HardwareSpec& hw) {
  if (R <= 0 || C <= 0) throw ModelError("layer_norm backward: rows and columns must be positive");
  const double e = detail::elt_bytes(dtype);
  const std::string t = detail::aten_type_name(dtype);
  const double r = static_cast<double>(R), c = static_cast<double>(C);
  std::vector<Launch> out;

  detail::StreamingKernel gi;
  gi.name = fmt::format("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<{}, float, false>", t);
  gi.family = "layer_norm_backward";
  gi.ctas = R;
  gi.threads = 128;
  gi.regs = 32;
  gi.smem = 64;
  // dY and X, the row's mean and rstd; gamma comes from L2 (read by every CTA).
  gi.read_bytes = r * c * 2.0 * e + r * 8.0;
  gi.write_bytes = r * c * e;
  // xhat, dY * gamma, the two sums, then dX = rstd * (g - mean(g) - xhat * mean(g * xhat)).
  gi.fp32_flops = r * c * 10.0;
  gi.inflight_per_cta = 128.0 * 4.0 * 2.0 * e;  // a 4-element vector of dY and X per thread
  gi.round_trips = kGradInputRoundTrips + kGradInputRoundTripsPerVector * static_cast<double>(ceil_div(C, 128 * 4) - 1);
  gi.reads = {grad_y, x, weight};
  gi.writes = {grad_x};
  out.push_back(detail::streaming_launch(gi, hw));

  detail::StreamingKernel gb;
  gb.name = fmt::format(
      "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<{}, float, 32u, 32u, 256u, false, true, false>",
      t);
  gb.family = "layer_norm_backward";
  gb.ctas = ceil_div(C, 32);
  gb.threads = 1024;
  gb.regs = 40;
  gb.smem = 2 * 32 * 33 * 4;
  gb.read_bytes = r * c * 2.0 * e + r * 8.0 * static_cast<double>(gb.ctas);
  gb.write_bytes = 2.0 * c * e;
  gb.fp32_flops = r * c * 4.0;
  gb.inflight_per_cta = 1024.0 * 8.0 * 2.0 * e;
  gb.round_trips = kGammaBetaReduceRoundTrips + kGammaBetaRoundTripsPerBlock * static_cast<double>(ceil_div(R, 256));
  gb.reads = {grad_y, x};
  gb.writes = {grad_weight, grad_bias};
  hw::Launch l = detail::streaming_launch(gb, hw);
  l.block = {32, 32, 1};
  out.push_back(l);
  return out;
}

}  // namespace gpusim::models
