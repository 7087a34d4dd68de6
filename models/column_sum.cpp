// x.sum(0) over the rows of a tensor (weight and bias gradients): ATen's reduce_kernel for a
// reduction over the outer dimension (Reduce.cuh's setReduceConfig), checked against the
// gradient sums of validation/data/hf_train_h100.json.gz.
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "models/common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using detail::dram_round_trips;

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
      w.critical_path = dram_round_trips(loads + kColumnSumReduceRoundTrips, hw);
      if (global) {
        const double partial_walk = static_cast<double>(ceil_div(c.ctas_per_output, c.by));
        w.critical_path += dram_round_trips(kColumnSumGlobalReduceRoundTrips, hw) +
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

}  // namespace gpusim::models
