// The loss of a causal LM and its backward: log_softmax over the vocabulary (SoftMax.cu's
// kernels with the log epilogue) and nll_loss (Loss.cu), checked against
// validation/data/hf_train_h100.json.gz; softmax's backward shares log_softmax's kernels.
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using detail::dram_round_trips;
using detail::StreamingKernel;

// nll_loss: each iteration of a thread loads a target, then (forward) the log-probability it
// indexes, a row of a table far beyond the TLB's reach, so the gather also pays a page walk;
// the backward stores -1/R there without waiting. Fitted on the 10 calibration cases (R = 2048
// and 4096, 16 iterations a thread both): 17.5-18.9 us forward, 9.2-10.3 us backward.
constexpr double kNllForwardRoundTripsPerIteration = 3.0;
constexpr double kNllBackwardRoundTripsPerIteration = 1.5;

int log2_ceil(std::int64_t x) {
  int l = 0;
  while ((std::int64_t{1} << l) < x) ++l;
  return l;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

}  // namespace

// ---- log_softmax and its backward ----------------------------------------------------------

std::vector<Launch> lower_log_softmax(std::int64_t R, std::int64_t C, hw::DType dtype, const TensorUse& in,
                                      const TensorUse& out, const hw::HardwareSpec& hw) {
  // host_softmax dispatches log_softmax to the softmax kernels with the log epilogue (the
  // warp kernel's is_log_softmax flag): the same passes over the row, the same loads.
  std::vector<Launch> ls = lower_softmax(R, C, dtype, in.tensor, out.tensor, hw, "");
  for (Launch& l : ls) {
    replace_all(l.name, "SoftMaxForwardEpilogue", "LogSoftMaxForwardEpilogue");
    if (l.name.find("softmax_warp_forward") != std::string::npos) {
      replace_all(l.name, ", false, false>", ", true, false>");
    }
    l.family = "log_softmax";
    l.reads = {in};
    l.writes = {out};
  }
  return ls;
}

namespace {

// SoftMax.cu's backward kernels from the output and its gradient: log_softmax's
// (gI = gO - exp(out) * sum(gO)) or softmax's (gI = out * (gO - sum(gO * out))), the same passes
// over the rows with another epilogue (softmax's sum pass reads both rows).
std::vector<Launch> softmax_backward(std::int64_t R, std::int64_t C, hw::DType dtype, const TensorUse& grad_out,
                                     const TensorUse& out, const TensorUse& grad_in, bool log,
                                     const hw::HardwareSpec& hw) {
  if (R <= 0 || C <= 0) throw ModelError("softmax backward: R and C must be positive");
  if (dtype == hw::DType::kTf32) dtype = hw::DType::kFp32;
  const double e = detail::elt_bytes(dtype);
  const double row = static_cast<double>(C) * e;
  const double c = static_cast<double>(C);
  const std::string t = detail::aten_type_name(dtype);
  const char* epilogue = log ? "LogSoftMaxBackwardEpilogue" : "SoftMaxBackwardEpilogue";
  // A sum pass over gO (softmax: gO * out), then a pass reading gO and out.
  struct Plan {
    std::string name;
    hw::Dim3 block;
    std::int64_t rows_per_cta = 1, smem = 0;
    double dram_row_reads = 0;  // row-lengths read from DRAM per row
    double round_trips = 0;     // dependent DRAM round trips per CTA
    double inflight = 0;
  } p;
  if (C <= 1024 && row <= 4096) {
    // softmax_warp_backward: a warp (narrower below 32 elements) per row, two rows per warp up
    // to 128 elements, 128 threads; each lane holds its elements of gO and out in registers.
    const int log2 = log2_ceil(C);
    const std::int64_t pow2 = std::int64_t{1} << log2;
    const std::int64_t warp = std::min<std::int64_t>(pow2, 32);
    const std::int64_t rows_per_warp = pow2 <= 128 ? 2 : 1;
    p.name = fmt::format("void (anonymous namespace)::softmax_warp_backward<{0}, {0}, float, {1}, {2}, false>", t, log2,
                         log);
    p.block = {warp, 128 / warp, 1};
    p.rows_per_cta = (128 / warp) * rows_per_warp;
    p.dram_row_reads = 2.0;
    // Loads of both rows, the warp's sum, the stores.
    p.round_trips = 2.0;
    p.inflight = 128.0 * 2.0 * e * static_cast<double>(ceil_div(C, warp) * rows_per_warp);
  } else {
    // SoftMax_getBlockSize(ILP, C): the power of two at least half of min(C / ILP, 1024).
    const std::int64_t ilp = 16 / static_cast<std::int64_t>(e);
    std::int64_t max_block = std::min<std::int64_t>(C / ilp, 1024);
    if (ilp > 1) max_block /= 2;
    std::int64_t threads = 1;
    while (threads < max_block) threads *= 2;
    threads = std::max<std::int64_t>(threads, 32);
    const std::int64_t smem_reduce = threads / 32 * 4;
    constexpr std::int64_t kSmemPerBlock = 48 * 1024;  // the default, not the opt-in maximum
    const bool smem_ok = C < (kSmemPerBlock - smem_reduce) / static_cast<std::int64_t>(e) && C % ilp == 0;
    p.block = {threads, 1, 1};
    const double iterations = static_cast<double>(ceil_div(C, threads * ilp));
    if (smem_ok) {
      // gO is staged in shared memory by the sum pass; the write pass reads out from DRAM.
      p.name = fmt::format(
          "void at::native::(anonymous namespace)::cunn_SoftMaxBackwardSmem<{1}, {0}, float, {0}, "
          "at::native::(anonymous namespace)::{2}>",
          t, ilp, epilogue);
      p.smem = static_cast<std::int64_t>(row) + smem_reduce;
      p.dram_row_reads = log ? 2.0 : 3.0;
    } else {
      // Both passes read gO from DRAM (rows of a large vocabulary do not survive in L2 between
      // the passes, as the forward's three passes do not: lower_softmax).
      p.name = fmt::format(
          "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<{1}, {0}, float, {0}, "
          "at::native::(anonymous namespace)::{2}>",
          t, ilp, epilogue);
      p.smem = smem_reduce;
      p.dram_row_reads = log ? 3.0 : 4.0;
    }
    // A load per iteration of each pass, the block-wide sum between them (a few barriers).
    p.round_trips = 2.0 * iterations + 2.0;
    p.inflight = static_cast<double>(threads) * 16.0;  // one 16-byte vector per thread
  }
  Launch l;
  l.name = p.name;
  l.family = log ? "log_softmax" : "softmax";
  l.grid = {ceil_div(R, p.rows_per_cta), 1, 1};
  l.block = p.block;
  l.regs_per_thread = 32;
  l.smem_per_cta = p.smem;
  const auto work = [&](std::int64_t rows) {
    hw::CtaWork w;
    const double r = static_cast<double>(rows);
    w.fp32_flops = r * 4.0 * c;      // sum, exp's argument (softmax: the product), multiply, subtract
    w.sfu_ops = log ? r * c : 0.0;  // exp(out)
    w.dram_read_bytes = r * p.dram_row_reads * row;
    w.dram_write_bytes = r * row;
    w.l2_bytes = w.dram_read_bytes + w.dram_write_bytes;
    w.max_inflight_bytes = p.inflight;
    w.critical_path = dram_round_trips(p.round_trips, hw);
    return w;
  };
  detail::add_class(l, R / p.rows_per_cta, work(p.rows_per_cta));
  if (R % p.rows_per_cta != 0) detail::add_class(l, 1, work(R % p.rows_per_cta));
  l.reads = {grad_out, out};
  l.writes = {grad_in};
  return {l};
}

}  // namespace

std::vector<Launch> lower_log_softmax_backward(std::int64_t R, std::int64_t C, hw::DType dtype,
                                               const TensorUse& grad_out, const TensorUse& out,
                                               const TensorUse& grad_in, const hw::HardwareSpec& hw) {
  return softmax_backward(R, C, dtype, grad_out, out, grad_in, true, hw);
}

std::vector<Launch> lower_softmax_backward(std::int64_t R, std::int64_t C, hw::DType dtype,
                                           const TensorUse& grad_out, const TensorUse& out,
                                           const TensorUse& grad_in, const hw::HardwareSpec& hw) {
  return softmax_backward(R, C, dtype, grad_out, out, grad_in, false, hw);
}

// ---- nll_loss ------------------------------------------------------------------------------

namespace {
// nll_loss_threads: the power of two nearest R / 16, 32 to 1024 threads in the one CTA.
std::int64_t nll_loss_threads(std::int64_t R) {
  const double l = std::round(std::log2(static_cast<double>(std::max<std::int64_t>(R / 16, 1))));
  return std::clamp<std::int64_t>(std::int64_t{1} << static_cast<int>(l), 32, 1024);
}
}  // namespace

Launch lower_nll_loss_forward(std::int64_t R, std::int64_t C, const TensorUse& logp, const TensorUse& target,
                              const TensorUse& loss, const hw::HardwareSpec& hw) {
  if (R <= 0 || C <= 0) throw ModelError("nll_loss: R and C must be positive");
  StreamingKernel k;
  k.name = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>";
  k.family = "nll_loss";
  k.threads = nll_loss_threads(R);
  k.smem = k.threads * 4 * 2;
  // The targets, and one 32-byte sector of log-probabilities per row.
  k.read_bytes = static_cast<double>(R) * (8.0 + 32.0);
  k.write_bytes = 8;
  k.fp32_flops = 2.0 * static_cast<double>(R);
  const double iterations = static_cast<double>(ceil_div(R, k.threads));
  // Then the shared-memory tree over the threads (log2 barriers) and the mean.
  k.round_trips = kNllForwardRoundTripsPerIteration * iterations + 1.0;
  k.reads = {logp, target};
  k.writes = {loss};
  return detail::streaming_launch(k, hw);
}

Launch lower_nll_loss_backward(std::int64_t R, std::int64_t C, const TensorUse& target, const TensorUse& grad_in,
                               const hw::HardwareSpec& hw) {
  if (R <= 0 || C <= 0) throw ModelError("nll_loss backward: R and C must be positive");
  StreamingKernel k;
  k.name = "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>";
  k.family = "nll_loss";
  k.threads = nll_loss_threads(R);
  k.read_bytes = static_cast<double>(R) * 8.0 + 8.0;
  k.write_bytes = static_cast<double>(R) * 32.0;  // a sector per scattered store
  // grad_output / total_weight first, then a target load per iteration.
  k.round_trips = 1.0 + kNllBackwardRoundTripsPerIteration * static_cast<double>(ceil_div(R, k.threads));
  k.reads = {target};
  k.writes = {grad_in};
  return detail::streaming_launch(k, hw);
}

}  // namespace gpusim::models
