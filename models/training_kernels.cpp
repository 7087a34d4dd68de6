// The kernels of a training step beyond the forward's (training_kernels.h): the loss and its
// backward, weight-gradient column sums, the embedding's backward, cuDNN's attention backward
// and the optimizers' multi_tensor_apply kernels. Launch shapes follow the sources (PyTorch 2.11:
// Reduce.cuh, SoftMax.cu, Loss.cu, Embedding.cu, EmbeddingBackwardKernel.cu,
// MultiTensorApply.cuh; cuDNN 9.19 by its measured grids) and match the kernel lists of
// validation/data/hf_train_h100.json. Most of these kernels stream bytes; the latency-bound ones
// state the dependent memory round trips on their critical path, calibrated on the calibration
// cases of that file (the constants below say on which rows).
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <queue>
#include <string>

#include "hw/occupancy.h"
#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using detail::StreamingKernel;

// ---- calibrated constants (hf_train_h100.json, calibration cases only) ----------------------

// reduce_kernel (column sums): a thread's loads of its rows are a dependent chain of about 1.3
// DRAM round trips each (the unrolled groups of vt0 = 4 loads do not overlap in practice: 16
// loads a thread take 10-12 us, 8 loads 5-7 us); then the block's reduction over threadIdx.y
// through shared memory and the store. With the rows split over CTAs: the partials' store, the
// fence and the semaphore atomic, then the last CTA's walk over the partials (ctas_per_output /
// block.y dependent L2 loads a thread, each with its add), which every CTA may turn out to be.
// Fitted on the bias and norm-weight sums of the calibration cases with their input just
// written (in L2), as in a step: split grids 6x64, 7x64, 18x64, 24x64 (GPT-2, Qwen2), 16x32,
// 32x32, 16x64 (Llama; 12-20 us), the unsplit 768x1 of GPT-2's position embedding (4.9 us bf16,
// 7.1 fp32) and Qwen3's q/k-norm weights (1x1024 and 1x512 grids: 65 and 37.6 us, 0.22 us per
// partial walked). MAPE 13% (15% with the inputs in DRAM instead).
constexpr double kColumnSumRoundTripsPerLoad = 1.3;
constexpr double kColumnSumReduceRoundTrips = 2.0;
constexpr double kColumnSumGlobalReduceRoundTrips = 2.0;
constexpr double kColumnSumPartialWalkL2Trips = 1.5;
// nll_loss: each iteration of a thread loads a target, then (forward) the log-probability it
// indexes, a row of a table far beyond the TLB's reach, so the gather also pays a page walk;
// the backward stores -1/R there without waiting. Fitted on the 10 calibration cases (R = 2048
// and 4096, 16 iterations a thread both): 17.5-18.9 us forward, 9.2-10.3 us backward.
constexpr double kNllForwardRoundTripsPerIteration = 3.0;
constexpr double kNllBackwardRoundTripsPerIteration = 1.5;
// embedding_backward_feature_kernel: per chunk of 32 indices a warp loads its gradient row's 32
// features, the block synchronizes twice, and the warp leading each distinct row adds the
// chunk's sum into grad_weight (a load, then a store). When the table is larger than L2 those
// read-modify-writes go to DRAM through a page walk (random rows of a 0.3-1 GB table).
// Calibration: Llama's 128256-row tables (T = 2048: 103 us at d = 2048, 113-115 us at 4096) and
// GPT-2's 1024-row position table (T = 512: 14.8 us).
constexpr double kFeatureChunkRoundTrips = 2.3;
constexpr double kFeatureScatteredTableRoundTrips = 2.2;
// The sort path's bookkeeping kernels (cub's radix sort of the indices, unique_by_key, the
// segment scans), one CTA or a few each: dependent round trips per kernel, fitted on the five
// sort-path calibration cases (T = 4096): the onesweep pass (6.0-6.9 us) ranks a tile in shared
// memory with several block-wide scans and a decoupled look-back.
constexpr double kSortHistogramRoundTrips = 7.0;
constexpr double kSortOnesweepRoundTrips = 14.0;
constexpr double kUniqueSweepRoundTrips = 10.0;
constexpr double kSegmentScanRoundTrips = 4.0;
// cuDNN's flash backward (KV-stationary persistent kernel): each work unit (64 keys of one
// batch and head) loads its K and V tiles and the first Q and dO tiles before its first MMA and
// writes dK and dV at its end, a pipeline fill and drain the warp-specialized loop does not hide:
// about 4.2 us a unit beyond its tile pairs' tensor and SIMT time. Fitted on the 8 calibration
// rows without dropout (llama 1B s512/s1024, llama 8B, qwen2, qwen3, mistral: 50-154 us).
constexpr double kBpropUnitRoundTrips = 12.0;
// cuDNN's small kernels around it (dot(dO, O), the dQ conversion, the per-head dK/dV
// reductions): their measured times grow in steps of about 4 CTAs per SM (convert_dq: 7.6-7.9 us
// at 11.6 CTAs an SM, 9.4-10.3 at 13.6-15.5, 20.3-21.2 at 31), as kernels of 128 registers a
// thread would (registers not recorded), each CTA a chain of dependent loads: its rows of O and
// dO, of the accumulator, or its slice of each head of the group in turn. Fitted on the same
// rows (GPT-2's agree).
constexpr int kCudnnRowKernelRegs = 128;
constexpr double kDotRoundTrips = 2.0;
constexpr double kConvertDqRoundTrips = 4.5;
constexpr double kReduceHeadRoundTripsPerHead = 1.0;
// multi_tensor_apply: a thread's loop iteration loads kILP elements of every list it reads,
// computes and stores them, and the next iteration's loads do not start before: a dependent
// memory round trip and a half per iteration (the loaded latency of the load, the math, the
// store's issue). Fitted on the AdamW and SGD foreach ops of the calibration cases: the last,
// short launches (49-151 CTAs) take 17-25 us bf16 and 20-36 us fp32 whatever their bytes, and
// the full 320-chunk launches stream at 2.4-2.8 TB/s.
constexpr double kForeachRoundTripsPerIteration = 1.6;
// torch._fused_adamw_ does its update in double precision (lr, the betas, eps and the weight
// decay are doubles in FusedAdamMathFunctor, so the moments' updates, the step and the final
// division promote): about this many FP64 instructions per element, each taking the FP32 pipe's
// time of two FMAs on sm_80/sm_90 (half-rate FP64; the hardware description has no FP64 rate).
// Fitted on the fused AdamW case (full launches 127 us, the 49-CTA tail 40.5 us).
constexpr double kFusedAdamFp64OpsPerElem = 30.0;
constexpr double kFp64FlopsEquivalent = 4.0;  // FP32 FLOPs (FMA = 2) of pipe time per FP64 op

// ---- names --------------------------------------------------------------------------------


int log2_ceil(std::int64_t x) {
  int l = 0;
  while ((std::int64_t{1} << l) < x) ++l;
  return l;
}

sim::Time round_trips(double n, const hw::HardwareSpec& hw) {
  return sim::Time::from_seconds(n * hw.dram.latency.seconds());
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

}  // namespace

// ---- column sums: reduce_kernel over the outer dimension ---------------------------------

namespace {

// ReduceConfig as setReduceConfig builds it for a [rows, cols] input reduced over dim 0 (the
// reduced dimension is not the fastest-moving one: block.x maps to outputs).
struct ColumnSumConfig {
  std::int64_t vec = 1;             // outputs a thread owns (get_output_vec_size)
  std::int64_t bx = 1, by = 1;      // block
  bool split_block_y = false;       // threadIdx.y splits the rows (else more outputs)
  std::int64_t grid_x = 1;          // output column blocks
  std::int64_t ctas_per_output = 1; // grid.y: the rows split over CTAs
  std::int64_t values_per_thread = 0;
};

ColumnSumConfig column_sum_config(std::int64_t rows, std::int64_t cols, const hw::HardwareSpec& hw) {
  ColumnSumConfig c;
  // Vectorize along the outputs: 4, 2 or 1, whichever divides the row length (and stride).
  c.vec = 4;
  while (cols % c.vec != 0) c.vec /= 2;
  const std::int64_t max_threads = 512 / c.vec;  // reduce_kernel<512 / vec, vec>
  const std::int64_t dim0 = cols / c.vec, dim1 = rows;
  const std::int64_t dim0_pow2 = dim0 < max_threads ? detail::last_pow2(dim0) : max_threads;
  const std::int64_t dim1_pow2 = dim1 < max_threads ? detail::last_pow2(dim1) : max_threads;
  c.bx = std::min<std::int64_t>(dim0_pow2, 32);
  c.by = std::min<std::int64_t>(dim1_pow2, max_threads / c.bx);
  c.bx = std::min<std::int64_t>(dim0_pow2, max_threads / c.by);
  std::int64_t step_output = c.bx, step_input = 1;
  // Split the rows across warps when each thread would still sum at least 16 (up to 256).
  const std::int64_t warp_split_threshold = std::min<std::int64_t>(c.by * 16, 256);
  if (rows >= warp_split_threshold) {
    c.split_block_y = true;
    step_input = c.by;
  } else {
    step_output *= c.by;
  }
  c.grid_x = ceil_div(cols / c.vec, step_output);
  // Split the rows over CTAs (a global reduction) when threads would sum 256 values or more
  // and the outputs alone do not fill the GPU.
  const std::int64_t blocks_per_sm = hw.sm.max_threads / (c.bx * c.by);
  const std::int64_t target = static_cast<std::int64_t>(hw.sm_count) * blocks_per_sm;
  const std::int64_t vpt = ceil_div(rows, step_input);
  if (c.split_block_y && vpt >= 256 && c.grid_x <= target) {
    c.ctas_per_output = std::max(std::min(ceil_div(target, c.grid_x), ceil_div(vpt, 16)), ceil_div(vpt, 256));
  }
  c.values_per_thread = ceil_div(rows, step_input * c.ctas_per_output);
  return c;
}

}  // namespace

std::vector<Launch> lower_column_sum(std::int64_t rows, std::int64_t cols, hw::DType in, hw::DType out,
                                     const TensorUse& input, const TensorUse& output,
                                     const hw::HardwareSpec& hw) {
  if (rows <= 0 || cols <= 0) throw ModelError("column sum: rows and cols must be positive");
  const ColumnSumConfig c = column_sum_config(rows, cols, hw);
  const double ei = detail::elt_bytes(in), eo = detail::elt_bytes(out);
  const std::string ti = detail::aten_type_name(in), to = detail::aten_type_name(out);
  Launch l;
  // ReduceOp<scalar_t, ops, index_t, out_scalar_t, vt0 = 4, input_vec_size>: sum_functor
  // reads 16-bit inputs 8 at a time.
  l.name = fmt::format(
      "void at::native::reduce_kernel<{0}, {1}, at::native::ReduceOp<{2}, at::native::func_wrapper_t<{3}, "
      "at::native::sum_functor<{2}, float, {3}>::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>, "
      "unsigned int, {3}, 4, {4}> >",
      512 / c.vec, c.vec, ti, to, ei == 2 ? 8 : 4);
  l.family = "reduce";
  l.grid = {c.grid_x, c.ctas_per_output, 1};
  l.block = {c.bx, c.by, 1};
  l.regs_per_thread = 32;
  l.smem_per_cta = c.by > 1 ? static_cast<std::int64_t>(c.bx * c.by * c.vec * 4) : 0;
  const bool global = c.ctas_per_output > 1;
  // Outputs per CTA column block (the last may be short) and rows per CTA of a column.
  const std::int64_t outs_full = c.bx * c.vec * (c.split_block_y ? 1 : c.by);
  const std::int64_t outs_last = cols - (c.grid_x - 1) * outs_full;
  const auto row_shares = detail::split_evenly(rows, c.ctas_per_output);
  const double threads = static_cast<double>(c.bx * c.by);
  for (std::int64_t x = 0; x < c.grid_x; ++x) {
    const double outs = static_cast<double>(x + 1 < c.grid_x ? outs_full : outs_last);
    for (const auto& share : row_shares) {
      hw::CtaWork w;
      const double read = static_cast<double>(share.items) * outs * ei;
      w.fp32_flops = static_cast<double>(share.items) * outs;
      // Partials (fp32) go out and the last CTA of each column reads them all back: L2 traffic;
      // the outputs' share of DRAM writes.
      const double partials = global ? 2.0 * outs * 4.0 : 0.0;
      const double written = outs * eo / static_cast<double>(c.ctas_per_output);
      w.l2_bytes = read + partials + written;
      w.dram_read_bytes = read;
      w.dram_write_bytes = written;
      w.max_inflight_bytes = threads * 4.0 * static_cast<double>(c.vec) * ei;  // vt0 = 4 vectors a thread
      const double loads = static_cast<double>(c.values_per_thread) * kColumnSumRoundTripsPerLoad;
      w.critical_path = round_trips(loads + kColumnSumReduceRoundTrips, hw);
      if (global) {
        const double partial_walk = static_cast<double>(ceil_div(c.ctas_per_output, c.by));
        w.critical_path += round_trips(kColumnSumGlobalReduceRoundTrips, hw) +
                           sim::Time::from_seconds(partial_walk * kColumnSumPartialWalkL2Trips * hw.l2.hit_latency.seconds());
      }
      detail::add_class(l, share.ctas, w);
    }
  }
  // The CTAs are listed column block by column block; blockIdx order is x fastest, which only
  // changes which SM takes which row share, not the work.
  l.reads = {input};
  l.writes = {output};
  if (!global) return {l};
  // The semaphores the last CTA of each column counts on, zeroed before the launch.
  return {detail::memset_launch(output.tensor, "reduce_semaphores", 4 * c.grid_x), l};
}

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

std::vector<Launch> lower_log_softmax_backward(std::int64_t R, std::int64_t C, hw::DType dtype,
                                               const TensorUse& grad_out, const TensorUse& out,
                                               const TensorUse& grad_in, const hw::HardwareSpec& hw) {
  if (R <= 0 || C <= 0) throw ModelError("log_softmax backward: R and C must be positive");
  if (dtype == hw::DType::kTf32) dtype = hw::DType::kFp32;
  const double e = detail::elt_bytes(dtype);
  const double row = static_cast<double>(C) * e;
  const double c = static_cast<double>(C);
  const std::string t = detail::aten_type_name(dtype);
  // gI = gO - exp(out) * sum(gO): a sum pass over gO, then a pass reading gO and out.
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
    p.name = fmt::format("void (anonymous namespace)::softmax_warp_backward<{0}, {0}, float, {1}, true, false>", t, log2);
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
          "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>",
          t, ilp);
      p.smem = static_cast<std::int64_t>(row) + smem_reduce;
      p.dram_row_reads = 2.0;
    } else {
      // Both passes read gO from DRAM (rows of a large vocabulary do not survive in L2 between
      // the passes, as the forward's three passes do not: lower_softmax).
      p.name = fmt::format(
          "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<{1}, {0}, float, {0}, "
          "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>",
          t, ilp);
      p.smem = smem_reduce;
      p.dram_row_reads = 3.0;
    }
    // A load per iteration of each pass, the block-wide sum between them (a few barriers).
    p.round_trips = 2.0 * iterations + 2.0;
    p.inflight = static_cast<double>(threads) * 16.0;  // one 16-byte vector per thread
  }
  Launch l;
  l.name = p.name;
  l.family = "log_softmax";
  l.grid = {ceil_div(R, p.rows_per_cta), 1, 1};
  l.block = p.block;
  l.regs_per_thread = 32;
  l.smem_per_cta = p.smem;
  const auto work = [&](std::int64_t rows) {
    hw::CtaWork w;
    const double r = static_cast<double>(rows);
    w.fp32_flops = r * 4.0 * c;  // sum, exp's argument, multiply, subtract
    w.sfu_ops = r * c;           // exp(out)
    w.dram_read_bytes = r * p.dram_row_reads * row;
    w.dram_write_bytes = r * row;
    w.l2_bytes = w.dram_read_bytes + w.dram_write_bytes;
    w.max_inflight_bytes = p.inflight;
    w.critical_path = round_trips(p.round_trips, hw);
    return w;
  };
  detail::add_class(l, R / p.rows_per_cta, work(p.rows_per_cta));
  if (R % p.rows_per_cta != 0) detail::add_class(l, 1, work(R % p.rows_per_cta));
  l.reads = {grad_out, out};
  l.writes = {grad_in};
  return {l};
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

// ---- embedding backward --------------------------------------------------------------------

namespace {

// The zero fill of the gradient table (at::zeros: FillFunctor, 8 elements a thread), by the
// elementwise model; tables past 2^31 bytes split into several launches as TensorIterator does.
std::vector<Launch> zero_fill(std::int64_t elems, hw::DType dtype, const TensorUse& table, const hw::HardwareSpec& hw) {
  ElementwiseProblem z;
  z.func = EwFunc::kFill;
  z.n = elems;
  z.in = z.out = dtype;
  z.output = table.tensor;
  std::vector<Launch> ls = lower_elementwise(z, hw, "");
  if (ls.size() == 1) ls[0].writes = {table};  // the caller's bytes (pieces keep their shares)
  return ls;
}

// A small bookkeeping kernel of the sort path: `ctas` CTAs that move `bytes` with `trips`
// dependent round trips.
Launch bookkeeping(std::string name, std::int64_t ctas, std::int64_t threads, double bytes, double trips,
                   const TensorUse& use, const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.name = std::move(name);
  k.family = "embedding_backward";
  k.ctas = ctas;
  k.threads = threads;
  k.read_bytes = k.write_bytes = bytes / 2.0;
  k.round_trips = trips;
  k.reads = {use};
  k.writes = {use};
  return detail::streaming_launch(k, hw);
}

}  // namespace

std::vector<Launch> lower_embedding_backward(std::int64_t T, std::int64_t V, std::int64_t d, hw::DType dtype,
                                             const TensorUse& ids, const TensorUse& grad_out,
                                             const TensorUse& grad_table, const hw::HardwareSpec& hw) {
  if (T <= 0 || V <= 0 || d <= 0) throw ModelError("embedding backward: T, V and d must be positive");
  const double e = detail::elt_bytes(dtype);
  const std::string t = detail::aten_type_name(dtype);
  const double table_bytes = static_cast<double>(V * d) * e;
  std::vector<Launch> out;
  if (T <= 3072) {
    // Few indices: zeros, then one CTA of 32 x 32 threads per 32 features walks every index in
    // chunks of 32 (a warp per index), the warp leading each distinct row accumulating the chunk.
    out = zero_fill(V * d, dtype, grad_table, hw);
    const std::int64_t chunks = ceil_div(T, 32);
    const std::int64_t ctas = ceil_div(d, 32);
    Launch l;
    l.name = fmt::format("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<{}, float, long>", t);
    l.family = "embedding_backward";
    l.grid = {ctas, 1, 1};
    l.block = {32, 32, 1};
    l.regs_per_thread = 32;
    l.smem_per_cta = 32 * 32 * 4 + 32 * 32 * 4;  // the chunk's rows (float) and its indices
    hw::CtaWork w;
    const double cols = static_cast<double>(std::min<std::int64_t>(32, d));
    const double rows = static_cast<double>(T);
    // Its 32 features of every gradient row in, the same of every touched table row read and
    // written (a 64-byte segment each).
    w.fp32_flops = rows * cols;
    w.dram_read_bytes = rows * cols * e + rows * cols * e + rows * 8.0 / static_cast<double>(ctas);
    w.dram_write_bytes = rows * cols * e;
    w.l2_bytes = w.dram_read_bytes + w.dram_write_bytes;
    const bool scattered = table_bytes > static_cast<double>(hw.l2.size);
    w.critical_path = round_trips(
        static_cast<double>(chunks) * (kFeatureChunkRoundTrips + (scattered ? kFeatureScatteredTableRoundTrips : 0.0)),
        hw);
    detail::add_class(l, ctas, w);
    l.reads = {ids, grad_out, grad_table};
    l.writes = {grad_table};
    out.push_back(l);
    return out;
  }
  // Many indices: sort the indices (cub onesweep radix sort of 64-bit keys with their positions),
  // zero the table, find the segments of equal indices, split them into partial segments of at
  // most 10 rows, sum each partial segment, then sum the partials into the table rows.
  const TensorUse sorted{ids.tensor + ".sorted", T * 16};
  const double n = static_cast<double>(T);
  out.push_back(lower_arange(T, sorted, hw));  // the positions sorted along with the indices
  // Onesweep: the histogram of all 8 digit passes over every key, their exclusive sums, then
  // per pass a zeroed look-back array and the scatter of tiles of keys. A tile holds 384
  // threads' keys, one CTA for 4,096 keys (measured) and two for 6,144 (Moonlight's MoE sort,
  // hf_models_h100.json): 12 keys a thread is taken.
  constexpr std::int64_t kTile = 384 * 12;
  const std::int64_t tiles = ceil_div(T, kTile);
  out.push_back(detail::memset_launch(sorted.tensor, "radix_sort_temp", 8 * 256 * 8));
  out.push_back(detail::memset_launch(sorted.tensor, "radix_sort_histogram", 8 * 256 * 8));
  out.push_back(bookkeeping("void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortHistogramKernel",
                            7 * static_cast<std::int64_t>(hw.sm_count), 128, n * 8, kSortHistogramRoundTrips, sorted, hw));
  out.push_back(bookkeeping("void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortExclusiveSumKernel", 8,
                            256, 8.0 * 256 * 4, 1.0, sorted, hw));
  for (int pass = 0; pass < 8; ++pass) {
    out.push_back(detail::memset_launch(sorted.tensor, "radix_sort_lookback", 4 * tiles * 256));
    out.push_back(bookkeeping("void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel", tiles,
                              384, n * 32, kSortOnesweepRoundTrips, sorted, hw));
  }
  for (Launch& l : zero_fill(V * d, dtype, grad_table, hw)) out.push_back(std::move(l));
  // unique_by_key over the sorted indices (segment starts), then the partial segments.
  out.push_back(bookkeeping("void at_cuda_detail::cub::detail::scan::DeviceCompactInitKernel", 1, 128, 0.0, 0.0,
                            sorted, hw));
  out.push_back(bookkeeping("void at_cuda_detail::cub::detail::unique_by_key::DeviceUniqueByKeySweepKernel",
                            ceil_div(T, 640 * 15), 640, n * 16, kUniqueSweepRoundTrips, sorted, hw));
  const std::int64_t max_segments = std::min(T, V);
  out.push_back(bookkeeping("void at::native::(anonymous namespace)::krn_partials_per_segment<long>",
                            ceil_div(max_segments, 32), 32, n * 16, 1.5, sorted, hw));
  out.push_back(bookkeeping("void at_cuda_detail::cub::detail::scan::DeviceScanInitKernel", 1, 128, 0.0, 0.0, sorted,
                            hw));
  // exclusive_sum of 64-bit counts: 128 threads x 7 items a tile (5 CTAs for 4,096).
  out.push_back(bookkeeping("void at_cuda_detail::cub::detail::scan::DeviceScanKernel",
                            ceil_div(max_segments, 128 * 7), 128, n * 16, kSegmentScanRoundTrips, sorted, hw));
  out.push_back(bookkeeping("void at::native::(anonymous namespace)::compute_num_of_partial_segments<long>", 1, 1,
                            32, 0.5, sorted, hw));
  out.push_back(bookkeeping("void at::native::(anonymous namespace)::krn_partial_segment_offset<long>",
                            ceil_div(max_segments, 32), 32, n * 16, 1.5, sorted, hw));
  // compute_grad_weight: a thread per (partial segment, feature), the rows padded to whole
  // warps; block = min(padded row, 1024). Indices drawn over a large vocabulary repeat rarely,
  // so the segments are about T single rows; the launch covers T / 10 + segments of them and
  // the CTAs past the real ones exit after reading the count.
  constexpr std::int64_t kRowsPerPartial = 10;  // NROWS_PER_THREAD
  const std::int64_t stride_warped = detail::round_up(d, 32);
  const std::int64_t block = std::min<std::int64_t>(stride_warped, 1024);
  const std::int64_t max_partial = T / kRowsPerPartial + max_segments;
  const double acc = 4.0;  // partial sums in the accumulate type (float)
  const TensorUse partial{grad_table.tensor + ".partial_sums", static_cast<std::int64_t>(max_segments * d * 4)};
  const auto segment_kernel = [&](std::string name, std::int64_t segments, double read, double write,
                                  double trips, const TensorUse& from, const TensorUse& to) {
    Launch l;
    l.name = std::move(name);
    l.family = "embedding_backward";
    const std::int64_t ctas = ceil_div(segments * stride_warped, block);
    l.grid = {ctas, 1, 1};
    l.block = {block, 1, 1};
    l.regs_per_thread = 32;
    const std::int64_t live = std::min(ctas, ceil_div(max_segments * stride_warped, block));
    hw::CtaWork w;
    w.dram_read_bytes = read / static_cast<double>(live);
    w.dram_write_bytes = write / static_cast<double>(live);
    w.l2_bytes = w.dram_read_bytes + w.dram_write_bytes;
    w.fp32_flops = static_cast<double>(block);
    w.critical_path = round_trips(trips, hw);
    detail::add_class(l, live, w);
    hw::CtaWork idle;  // reads the segment count and exits
    idle.critical_path = round_trips(1.0, hw);
    detail::add_class(l, ctas - live, idle);
    l.reads = {sorted, from};
    l.writes = {to};
    return l;
  };
  const double rows = static_cast<double>(max_segments);
  // Dependent loads before a thread's store: compute_grad_weight reads the segment count, the
  // segment's offsets, the row index, then the gradient; sum_and_scatter the count, the
  // partials' offsets, then the partial sums (the table row's index in parallel).
  out.push_back(segment_kernel(
      fmt::format("void at::native::(anonymous namespace)::compute_grad_weight<{}, long>", t), max_partial,
      n * static_cast<double>(d) * e, rows * static_cast<double>(d) * acc, 4.0, grad_out, partial));
  out.push_back(segment_kernel(
      fmt::format("void at::native::(anonymous namespace)::sum_and_scatter<{}, long>", t), max_segments,
      rows * static_cast<double>(d) * acc, rows * static_cast<double>(d) * e, 3.0, partial, grad_table));
  return out;
}

// ---- cuDNN's attention backward (sm_90) ----------------------------------------------------

namespace {
constexpr std::int64_t kBpropTile = 64;  // "64x64xD": 64 queries x 64 keys per step

// The head dimension the backward kernels are built for (D padded up).
std::int64_t bprop_d_tile(std::int64_t D) { return D <= 64 ? 64 : (D <= 128 ? 128 : 256); }

// cuDNN's small row kernels (128 threads): dot(dO, O) and the per-head reductions take
// 1024 / D rows a CTA (16 at D = 64, 8 at 128); the dQ conversion 2048 / D.
Launch cudnn_row_kernel(std::string name, std::int64_t rows_per_cta, std::int64_t S, std::int64_t B, std::int64_t H,
                        double read, double write, double trips, int regs, std::vector<TensorUse> reads,
                        std::vector<TensorUse> writes, const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.name = std::move(name);
  k.family = "cudnn_sdpa_bwd";
  const std::int64_t gx = ceil_div(S, rows_per_cta);
  k.ctas = gx * B * H;
  k.threads = 128;
  k.regs = regs;
  k.read_bytes = read;
  k.write_bytes = write;
  k.inflight_per_cta = 128.0 * 16.0 * 2.0;  // a 16-byte vector of each input per thread
  k.round_trips = trips;
  k.reads = std::move(reads);
  k.writes = std::move(writes);
  Launch l = detail::streaming_launch(k, hw);
  l.grid = {gx, B, H};
  return l;
}
}  // namespace

std::vector<Launch> lower_sdpa_backward(std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t S,
                                        std::int64_t D, bool causal, hw::DType dtype, const TensorUse& q,
                                        const TensorUse& k, const TensorUse& v, const TensorUse& o,
                                        const TensorUse& grad_o, const TensorUse& grad_q, const TensorUse& grad_k,
                                        const TensorUse& grad_v, const hw::HardwareSpec& hw) {
  if (B <= 0 || Hq <= 0 || Hkv <= 0 || S <= 0 || D <= 0) throw ModelError("sdpa backward: sizes must be positive");
  if (Hq % Hkv != 0) throw ModelError("sdpa backward: query heads must be a multiple of KV heads");
  if (D % 8 != 0 || D > 256) throw ModelError("sdpa backward: cuDNN needs a head dimension multiple of 8, at most 256");
  const double e = detail::elt_bytes(dtype);
  const std::int64_t dt = bprop_d_tile(D);
  const bool gqa = Hq > Hkv;
  const double q_elems = static_cast<double>(B * Hq * S * D);   // Q, O, dO, dQ
  const double kv_elems = static_cast<double>(B * Hkv * S * D);  // K, V, dK, dV
  const double rows = static_cast<double>(B * Hq * S);
  const TensorUse dq_acc{grad_q.tensor + ".accum", static_cast<std::int64_t>(q_elems * 4)};
  const TensorUse stats{grad_q.tensor + ".softmax_d", static_cast<std::int64_t>(rows * 4)};
  const TensorUse lse{o.tensor + ".stats", static_cast<std::int64_t>(rows * 4)};
  // With grouped heads the flash kernel writes dK and dV per query head, reduced afterwards.
  const TensorUse dk_part{grad_k.tensor + ".per_q_head", static_cast<std::int64_t>(q_elems * e)};
  const TensorUse dv_part{grad_v.tensor + ".per_q_head", static_cast<std::int64_t>(q_elems * e)};

  std::vector<Launch> out;
  // The dynamic tile scheduler's counter (size not recorded; 4 bytes per CTA assumed).
  out.push_back(detail::memset_launch(grad_q.tensor, "cudnn_bwd_workspace", 4 * hw.sm_count));
  // D = rowsum(dO * O) per query row; the same kernel zeroes dQ's fp32 accumulator (no memset
  // of it is launched, and the kernel's 8-27 us fit reading O and dO and writing both).
  out.push_back(cudnn_row_kernel(fmt::format("void cudnn::fusion::compute_dot_do_o_specialized<true, {}>", dt),
                                 std::max<std::int64_t>(1, 1024 / dt), S, B, Hq, 2.0 * q_elems * e,
                                 rows * 4 + q_elems * 4, kDotRoundTrips, kCudnnRowKernelRegs, {o, grad_o},
                                 {stats, dq_acc}, hw));

  // The flash backward: persistent (a CTA per SM), KV-stationary work units of 64 keys of one
  // (batch, query head); each walks the query tiles at or after its keys (causal) and per tile
  // computes S = QK^T, dP = dO V^T, dV += P^T dO, dK += dS^T Q and dQ += dS K (atomics into the
  // fp32 accumulator): 5 matmuls of 64 x 64 x D, where the forward does 2.
  Launch l;
  l.name = fmt::format(
      "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x{}_1x4x1_cga1x1x1_kernel0_0", dt);
  l.family = "cudnn_sdpa_bwd";
  l.block = {384, 1, 1};  // a producer and two consumer warpgroups, one CTA per SM
  l.regs_per_thread = 168;
  // Not measured: K and V tiles, two stages of Q and dO tiles, P and dS (16-bit), 1 KiB of
  // barriers and statistics.
  l.smem_per_cta = 6 * kBpropTile * dt * 2 + 2 * kBpropTile * kBpropTile * 2 + 1024;
  const std::int64_t mb = ceil_div(S, kBpropTile), nb = ceil_div(S, kBpropTile);
  const std::int64_t units = B * Hq * nb;
  const std::int64_t ctas = std::min<std::int64_t>(units, hw.sm_count);
  l.grid = {ctas, 1, 1};
  const double pair_flops = 10.0 * kBpropTile * kBpropTile * static_cast<double>(dt);
  const double pair_seconds = pair_flops / (hw.tensor_flops_per_cycle(dtype) * hw.clocks.sustained_tensor_hz);
  const double unit_seconds = kBpropUnitRoundTrips * hw.dram.latency.seconds();
  // Heaviest units first (the longest causal key blocks), each to the CTA free first: the
  // dynamic scheduler the memset resets.
  struct Load {
    double cost;
    std::int64_t cta;
    bool operator>(const Load& x) const { return cost != x.cost ? cost > x.cost : cta > x.cta; }
  };
  std::priority_queue<Load, std::vector<Load>, std::greater<>> free_at;
  for (std::int64_t c = 0; c < ctas; ++c) free_at.push({0.0, c});
  std::vector<double> cta_units(static_cast<std::size_t>(ctas)), cta_pairs(static_cast<std::size_t>(ctas));
  for (std::int64_t n = 0; n < nb; ++n) {  // n ascending: most query tiles first
    const std::int64_t pairs = causal ? mb - n : mb;
    for (std::int64_t bh = 0; bh < B * Hq; ++bh) {
      Load slot = free_at.top();
      free_at.pop();
      cta_units[static_cast<std::size_t>(slot.cta)] += 1;
      cta_pairs[static_cast<std::size_t>(slot.cta)] += static_cast<double>(pairs);
      slot.cost += unit_seconds + static_cast<double>(pairs) * pair_seconds;
      free_at.push(slot);
    }
  }
  const double tile = static_cast<double>(kBpropTile * D) * e;  // one 64-row tile of Q, K, V or dO
  const double unique_in = 2.0 * q_elems * e + 2.0 * kv_elems * e + 2.0 * rows * 4;  // Q, dO, K, V, LSE, D
  const double outputs = q_elems * 4 + 2.0 * (gqa ? q_elems : kv_elems) * e;        // dQ acc, dK, dV
  for (std::int64_t c = 0; c < ctas; ++c) {
    const double u = cta_units[static_cast<std::size_t>(c)], p = cta_pairs[static_cast<std::size_t>(c)];
    hw::CtaWork w;
    w.tensor_dtype = dtype;
    w.tensor_flops = p * pair_flops;
    // Per score: P = exp2(S - LSE), dS = P (dP - D), both rounded to 16 bits for their matmuls.
    const double scores = p * kBpropTile * kBpropTile;
    w.fp32_flops = 6.0 * scores;
    w.sfu_ops = scores;
    // K and V in and dK and dV out per unit; per tile pair Q and dO in, their LSE and D rows,
    // and dQ's 64 x D fp32 atomic adds.
    w.l2_bytes = u * 4.0 * tile + p * (2.0 * tile + 2.0 * kBpropTile * 4 + kBpropTile * D * 4.0);
    w.dram_read_bytes = unique_in / static_cast<double>(ctas);
    w.dram_write_bytes = outputs / static_cast<double>(ctas);
    w.max_inflight_bytes = 2.0 * 2.0 * tile;  // two stages of Q and dO by TMA
    w.bulk_copies = true;
    w.pipe_overlap = 0;  // matmul -> softmax -> matmul depend on each other, as in the forward
    w.fixed = round_trips(u * kBpropUnitRoundTrips, hw);
    detail::add_class(l, 1, w);
  }
  l.reads = {q, k, v, grad_o, lse, stats, dq_acc};
  l.writes = {dq_acc};
  if (gqa) {
    l.writes.push_back(dk_part);
    l.writes.push_back(dv_part);
  } else {
    l.writes.push_back(grad_k);
    l.writes.push_back(grad_v);
  }
  out.push_back(l);

  // dQ from its fp32 accumulator to the 16-bit gradient.
  out.push_back(cudnn_row_kernel("void cudnn::fusion::convert_dq_to_16bits<true>", std::max<std::int64_t>(1, 2048 / dt),
                                 S, B, Hq, q_elems * 4, q_elems * e, kConvertDqRoundTrips, kCudnnRowKernelRegs,
                                 {dq_acc}, {grad_q}, hw));
  if (gqa) {
    // dK and dV summed over each group's query heads, a head's slice after another.
    const double group = static_cast<double>(Hq / Hkv);
    for (const auto& [part, grad] : {std::pair{dk_part, grad_k}, std::pair{dv_part, grad_v}}) {
      out.push_back(cudnn_row_kernel("void cudnn::fusion::fmha_reduce_head<true>", std::max<std::int64_t>(1, 1024 / dt),
                                     S, B, Hkv, q_elems * e, kv_elems * e, kReduceHeadRoundTripsPerHead * group,
                                     kCudnnRowKernelRegs, {part}, {grad}, hw));
    }
  }
  return out;
}

// ---- multi_tensor_apply (foreach ops and fused optimizers) ---------------------------------

namespace {
constexpr std::int64_t kChunk = 65536;      // elements per CTA (kChunkSize)
constexpr std::int64_t kMaxBlocks = 320;    // CTAs per launch (depth_to_max_blocks)
constexpr std::int64_t kMtaThreads = 512;   // kBlockSize
constexpr std::int64_t kIlp = 4;            // elements a thread loads per list and iteration

// The chunks (elements each) and tensors of one launch.
struct MtaLaunch {
  std::vector<std::int64_t> chunks;
  std::vector<std::pair<std::size_t, double>> tensors;  // tensor index, share of it in this launch
};

// multi_tensor_apply's loop: a launch whenever the CTAs or the tensor slots fill up (a tensor
// counts as placed once its last chunk is), the tensor in progress carried to the next launch.
std::vector<MtaLaunch> mta_schedule(const std::vector<std::int64_t>& elems, std::int64_t max_tensors) {
  std::vector<MtaLaunch> out;
  MtaLaunch cur;
  std::int64_t loc_tensors = 0;
  for (std::size_t t = 0; t < elems.size(); ++t) {
    const std::int64_t n = elems[t];
    if (n <= 0) continue;
    ++loc_tensors;
    const std::int64_t chunks = ceil_div(n, kChunk);
    std::int64_t first = 0;  // first chunk of t in the current launch
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
      cur.chunks.push_back(std::min(kChunk, n - ch * kChunk));
      const bool tensors_full = loc_tensors == max_tensors && ch == chunks - 1;
      const bool blocks_full = static_cast<std::int64_t>(cur.chunks.size()) == kMaxBlocks;
      if (tensors_full || blocks_full) {
        const std::int64_t done = std::min(n, (ch + 1) * kChunk) - first * kChunk;
        cur.tensors.emplace_back(t, static_cast<double>(done) / static_cast<double>(n));
        out.push_back(std::move(cur));
        cur = MtaLaunch{};
        first = ch + 1;
        loc_tensors = ch == chunks - 1 ? 0 : 1;
      }
    }
    if (first < chunks) {
      const std::int64_t left = n - first * kChunk;
      cur.tensors.emplace_back(t, static_cast<double>(left) / static_cast<double>(n));
    }
  }
  if (!cur.chunks.empty()) out.push_back(std::move(cur));
  return out;
}

// What a list contributes: its element size and whether the kernel loads and stores it.
struct MtaList {
  double elt = 2;
  bool read = true, written = false;
};

std::vector<Launch> mta_launches(const std::vector<std::int64_t>& elems, const std::vector<std::vector<TensorUse>>& lists,
                                 const std::vector<MtaList>& how, std::int64_t max_tensors, const std::string& name,
                                 double fp32_per_elem, double sfu_per_elem, const hw::HardwareSpec& hw) {
  for (const auto& list : lists) {
    if (list.size() != elems.size()) throw ModelError("multi_tensor_apply: every list needs one tensor per size");
  }
  // Lists that name the same tensors (addcmul_'s grads, twice) load it once from DRAM.
  std::vector<bool> duplicate(lists.size(), false);
  for (std::size_t a = 0; a < lists.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      if (!lists[a].empty() && lists[a].front().tensor == lists[b].front().tensor) duplicate[a] = true;
    }
  }
  double read_per_elem = 0, dram_read_per_elem = 0, write_per_elem = 0;
  for (std::size_t l = 0; l < how.size(); ++l) {
    if (how[l].read) {
      read_per_elem += how[l].elt;
      if (!duplicate[l]) dram_read_per_elem += how[l].elt;
    }
    if (how[l].written) write_per_elem += how[l].elt;
  }
  std::vector<Launch> out;
  for (const MtaLaunch& m : mta_schedule(elems, max_tensors)) {
    Launch l;
    l.name = name;
    l.family = "multi_tensor_apply";
    l.grid = {static_cast<std::int64_t>(m.chunks.size()), 1, 1};
    l.block = {kMtaThreads, 1, 1};
    l.regs_per_thread = 32;
    const auto occ = hw::compute_occupancy(hw.sm, hw::BlockResources{static_cast<int>(kMtaThreads), 32, 0});
    const double sharing = static_cast<double>(
        std::clamp<std::int64_t>(ceil_div(l.grid.x, hw.sm_count), 1, std::max(1, occ.ctas_per_sm)));
    for (const std::int64_t n : m.chunks) {
      hw::CtaWork w;
      const double x = static_cast<double>(n);
      w.fp32_flops = fp32_per_elem * x;
      w.sfu_ops = sfu_per_elem * x;
      w.l2_bytes = (read_per_elem + write_per_elem) * x;
      w.dram_read_bytes = dram_read_per_elem * x;
      w.dram_write_bytes = write_per_elem * x;
      // Each thread's loop iteration: a kILP-element vector of every list it reads, then the
      // math, issued at the SM's FP32 rate shared with the launch's other CTAs on that SM, and
      // the stores.
      const double iterations = static_cast<double>(ceil_div(n, kMtaThreads * kIlp));
      w.max_inflight_bytes = static_cast<double>(kMtaThreads * kIlp) * read_per_elem;
      const double math = sharing * static_cast<double>(kMtaThreads * kIlp) * (fp32_per_elem + sfu_per_elem) /
                          (hw.throughput.fp32 * hw.clocks.sustained_other_hz);
      w.critical_path = sim::Time::from_seconds(
          iterations * (kForeachRoundTripsPerIteration * hw.dram.latency.seconds() + math));
      detail::add_class(l, 1, w);
    }
    for (const auto& [t, share] : m.tensors) {
      for (std::size_t li = 0; li < lists.size(); ++li) {
        TensorUse u = lists[li][t];
        u.bytes = static_cast<std::int64_t>(static_cast<double>(u.bytes) * share);
        if (how[li].read && !duplicate[li]) l.reads.push_back(u);
        if (how[li].written) l.writes.push_back(u);
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

// Lists a foreach functor loads: its template's r_args_depth ("UnaryOpFunctor<T, depth,
// r_args_depth, res_arg_index>"); the other lists are outputs only. nullopt if not spelled so.
std::optional<int> functor_loaded_lists(std::string_view functor) {
  const auto open = functor.find('<');
  const auto close = functor.find('>', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return std::nullopt;
  std::vector<int> nums;
  std::string_view args = functor.substr(open + 1, close - open - 1);
  std::size_t start = 0;
  int field = 0;
  while (start <= args.size()) {
    const std::size_t comma = std::min(args.find(',', start), args.size());
    std::string_view f = args.substr(start, comma - start);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    if (field > 0) {
      if (f.empty() || !std::all_of(f.begin(), f.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) break;
      nums.push_back(std::stoi(std::string(f)));
    }
    ++field;
    start = comma + 1;
  }
  if (nums.size() < 2) return std::nullopt;
  return nums[1];
}

}  // namespace

std::vector<Launch> lower_multi_tensor_apply(const std::vector<std::int64_t>& elems, hw::DType dtype,
                                             const std::vector<std::vector<TensorUse>>& lists, int written,
                                             std::string_view functor, double flops_per_elem,
                                             const hw::HardwareSpec& hw) {
  const auto depth = static_cast<std::int64_t>(lists.size());
  if (depth < 1 || depth > 5) throw ModelError("multi_tensor_apply: 1 to 5 tensor lists");
  if (written < 0 || written > depth) throw ModelError("multi_tensor_apply: written lists out of range");
  // TensorListMetadata holds depth_to_max_tensors addresses per list; the scalar-list variant
  // (one scalar per tensor, as _foreach_div_ by a list) has room for 96 at depth 1.
  const bool scalar_list = functor.find("ScalarList") != std::string_view::npos;
  constexpr std::int64_t kMaxTensors[5] = {110, 64, 48, 36, 30};
  const std::int64_t max_tensors = scalar_list && depth == 1 ? 96 : kMaxTensors[depth - 1];
  const std::string meta = scalar_list ? fmt::format("TensorListScalarListMetadata<float, {}>", depth)
                                       : fmt::format("TensorListMetadata<{}>", depth);
  const std::string name = fmt::format(
      "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::{}, "
      "at::native::(anonymous namespace)::{}{}>",
      meta, functor, functor.ends_with('>') ? " " : "");  // demangled as "> >"
  // Out-of-place functors (sqrt into a new list) load fewer lists than they touch: those not
  // loaded are the outputs, which the caller lists first.
  const int loaded = std::clamp(functor_loaded_lists(functor).value_or(static_cast<int>(depth)), 0, static_cast<int>(depth));
  std::vector<MtaList> how(static_cast<std::size_t>(depth));
  for (std::int64_t li = 0; li < depth; ++li) {
    how[static_cast<std::size_t>(li)] = {detail::elt_bytes(dtype), li >= depth - loaded, li < written};
  }
  return mta_launches(elems, lists, how, max_tensors, name, flops_per_elem, 0.0, hw);
}

std::vector<Launch> lower_fused_adamw(const std::vector<std::int64_t>& elems, hw::DType param_dtype,
                                      hw::DType state_dtype, const std::vector<std::vector<TensorUse>>& lists,
                                      const hw::HardwareSpec& hw) {
  if (lists.size() != 4) throw ModelError("fused AdamW: params, grads, exp_avgs and exp_avg_sqs");
  const std::string name = fmt::format(
      "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
      "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<{}, "
      "4, (at::native::ADAM_MODE)1, false>, float const*, double, double, double, double, double, bool, float "
      "const*, float const*>",
      detail::aten_type_name(param_dtype));
  const double p = detail::elt_bytes(param_dtype), s = detail::elt_bytes(state_dtype);
  // All four loaded; params and both moments stored.
  const std::vector<MtaList> how = {{p, true, true}, {p, true, false}, {s, true, true}, {s, true, true}};
  // Per element: the gradient's and moments' conversions and a square root in FP32, the rest in
  // FP64 (see kFusedAdamFp64OpsPerElem).
  return mta_launches(elems, lists, how, 36, name, 8.0 + kFp64FlopsEquivalent * kFusedAdamFp64OpsPerElem, 1.0, hw);
}

}  // namespace gpusim::models
