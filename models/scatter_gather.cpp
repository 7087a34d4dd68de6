// The indexed kernels of hand-written model code and its backward (PyTorch 2.x, ATen's
// ScatterGatherKernel.cu and Indexing.cu): torch.gather and scatter_add along the last
// dimension with one index per row (cs336_basics' cross_entropy picks each row's target;
// gather's backward adds the gradients back into zeroed rows), and index_put_ with
// accumulate, the backward of advanced indexing (`weight[token_ids]`: zeros, the indices
// linearized and radix-sorted with their positions, then indexing_backward_kernel summing each
// run of equal indices into its table row). Few elements each: latency-bound, stated as
// dependent memory round trips.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using detail::StreamingKernel;

// Dependent loads of a gather / scatter_add element: its index, then the indexed element (the
// scatter also loads its source); the store (or atomic add) ends the chain.
constexpr double kScatterGatherRoundTrips = 2.0;
// indexing_backward_kernel: a warp reads its sorted index and its neighbour's (is it the first
// of a run?), the original position, then the gradient row and the table row it adds into.
constexpr double kIndexingBackwardRoundTrips = 4.0;

// A small elementwise kernel over `n` int64 indices (remainder, multiply, divide): 4 a thread.
Launch index_arithmetic(const std::string& functor, std::int64_t n, const TensorUse& io, const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.name = fmt::format("void at::native::vectorized_elementwise_kernel<2, {}, std::array<char*, 2ul> >", functor);
  k.family = "elementwise";
  k.ctas = std::max<std::int64_t>(1, ceil_div(n, 512));
  k.read_bytes = k.write_bytes = static_cast<double>(n) * 8;
  k.round_trips = 1;
  k.reads = {io};
  k.writes = {io};
  return detail::streaming_launch(k, hw);
}

// cub::DeviceRadixSort::SortPairs of `n` 64-bit keys on their low `bits` bits, with 64-bit
// values: one CTA sorts a single tile (8-bit digits, a block-wide scan per digit; the per-pass
// cost of the single-CTA radix sort in aten_kernels.cpp), longer inputs go through onesweep
// (a histogram, its exclusive sum, then per digit a zeroed look-back array and the scatter).
std::vector<Launch> radix_sort_pairs(std::int64_t n, int bits, const TensorUse& keys, const hw::HardwareSpec& hw) {
  constexpr int kDigitBits = 8;
  const int passes = std::max(1, (bits + kDigitBits - 1) / kDigitBits);
  StreamingKernel k;
  k.family = "sort";
  k.read_bytes = k.write_bytes = static_cast<double>(n) * 16;
  k.reads = {keys};
  k.writes = {keys};
  constexpr std::int64_t kSingleTile = 4096;
  if (n <= kSingleTile) {
    k.name = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortSingleTileKernel";
    k.threads = 256;
    k.round_trips = 4.0 + passes * (4.27 + 0.044 * static_cast<double>(ceil_div(n, 128)));
    return {detail::streaming_launch(k, hw)};
  }
  std::vector<Launch> out;
  out.push_back(detail::memset_launch(keys.tensor, "radix_sort_histogram", passes * 256 * 8));
  StreamingKernel hist = k;
  hist.name = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortHistogramKernel";
  hist.ctas = 7 * static_cast<std::int64_t>(hw.sm_count);
  hist.threads = 128;
  hist.read_bytes = static_cast<double>(n) * 8;
  hist.write_bytes = passes * 256.0 * 4;
  hist.round_trips = 2;
  out.push_back(detail::streaming_launch(hist, hw));
  StreamingKernel scan = k;
  scan.name = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortExclusiveSumKernel";
  scan.ctas = passes;
  scan.threads = 256;
  scan.read_bytes = scan.write_bytes = 256.0 * 4;
  scan.round_trips = 1;
  out.push_back(detail::streaming_launch(scan, hw));
  StreamingKernel pass = k;
  pass.name = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel";
  pass.ctas = ceil_div(n, 3072);
  pass.threads = 384;
  pass.round_trips = 8;
  for (int p = 0; p < passes; ++p) {
    out.push_back(detail::memset_launch(keys.tensor, "radix_sort_lookback", 4 * pass.ctas * 256));
    out.push_back(detail::streaming_launch(pass, hw));
  }
  return out;
}

}  // namespace

Launch lower_scatter_gather(ScatterGather op, std::int64_t n, hw::DType dtype, const TensorUse& index,
                            const TensorUse& src, const TensorUse& out, const hw::HardwareSpec& hw) {
  if (n <= 0) throw ModelError("scatter/gather: the element count must be positive");
  const bool add = op == ScatterGather::kScatterAdd;
  const bool scatter_like = op != ScatterGather::kGather;
  const double e = detail::elt_bytes(dtype);
  // An assignment moves opaque elements of the type's size; scatter_add adds in the type.
  const std::string t = add ? detail::aten_type_name(dtype)
                            : fmt::format("at::native::OpaqueType<{}>", static_cast<int>(e));
  const std::string reduce = add ? "at::native::ReduceAdd" : "at::native::TensorAssign";
  StreamingKernel k;
  // _scatter_gather_elementwise_kernel<nt = 128, vt = 8>: 1024 elements a CTA.
  k.name = fmt::format("void at::native::_scatter_gather_elementwise_kernel<128, 8, "
                       "at::native::_cuda_scatter_gather_internal_kernel<{}, {}, long>::operator()<{}>"
                       "(at::TensorIterator&, long, long, long, {} const&)::{{lambda(int)#1}}>",
                       scatter_like, t, reduce, reduce);
  k.family = "index";
  k.ctas = std::max<std::int64_t>(1, ceil_div(n, 1024));
  k.regs = 40;
  k.read_bytes = static_cast<double>(n) * (8 + e);
  k.write_bytes = static_cast<double>(n) * e;
  k.fp32_flops = add ? static_cast<double>(n) : 0.0;
  k.round_trips = kScatterGatherRoundTrips + (add ? 1.0 : 0.0);
  k.reads = {index, src};
  k.writes = {out};
  return detail::streaming_launch(k, hw);
}

std::vector<Launch> lower_index_put_accumulate(std::int64_t T, std::int64_t V, std::int64_t d, hw::DType dtype,
                                               const TensorUse& ids, const TensorUse& grad_out,
                                               const TensorUse& grad_table, const hw::HardwareSpec& hw) {
  if (T <= 0 || V <= 0 || d <= 0) throw ModelError("index_put backward: T, V and d must be positive");
  const double e = detail::elt_bytes(dtype);
  std::vector<Launch> out;
  // index_backward: at::zeros of the table (FillFunctor, by the elementwise model).
  ElementwiseProblem zero;
  zero.func = EwFunc::kFill;
  zero.n = V * d;
  zero.in = zero.out = dtype;
  zero.output = grad_table.tensor;
  for (Launch& l : lower_elementwise(zero, hw, "")) {
    l.writes = {grad_table};
    out.push_back(std::move(l));
  }
  // makeLinearIndex (no range check in the backward): the indices wrapped (remainder) and
  // scaled by the row stride, then divided by the slice size again before the sort.
  const TensorUse linear{ids.tensor + ".linear_index", T * 8};
  out.push_back(index_arithmetic("at::native::BUnaryFunctor<long, long, long, at::native::binary_internal::remainder_kernel_cuda(at::TensorIteratorBase&)::{lambda(long, long)#1}>", T, linear, hw));
  out.push_back(index_arithmetic("at::native::AUnaryFunctor<long, long, long, at::native::binary_internal::MulFunctor<long> >", T, linear, hw));
  out.push_back(index_arithmetic("at::native::BUnaryFunctor<long, long, long, at::native::binary_internal::div_trunc_kernel_cuda(at::TensorIteratorBase&)::{lambda(long, long)#1}>", T, linear, hw));
  out.back().reads = {ids};
  // The positions sorted along with the keys, on the bits the largest row index needs.
  const TensorUse positions{ids.tensor + ".sorted_positions", T * 8};
  out.push_back(lower_arange(T, positions, hw));
  int bits = 1;
  while ((std::int64_t{1} << bits) < V) ++bits;
  for (Launch& l : radix_sort_pairs(T, bits, linear, hw)) out.push_back(std::move(l));
  // indexing_backward_kernel<float, 4>: a warp (32 x 4-wide) per sorted index and 128
  // features, 4 indices a CTA; the first index of each run sums the run's gradient rows into
  // its table row (a read-modify-write). Token ids drawn from the vocabulary rarely repeat:
  // about min(T, V) rows are touched.
  Launch l;
  // One feature a row (a gathered vector of scalars): the stride-1 variant, same grid.
  l.name = d == 1 ? fmt::format("void at::native::(anonymous namespace)::indexing_backward_kernel_stride_1<{}>",
                                detail::aten_type_name(dtype))
                  : fmt::format("void at::native::(anonymous namespace)::indexing_backward_kernel<{}, 4>",
                                detail::aten_type_name(dtype));
  l.family = "index";
  const std::int64_t gx = ceil_div(T, 4), gy = ceil_div(d, 32 * 4);
  l.grid = {gx, gy, 1};
  l.block = {32, 4, 1};
  l.regs_per_thread = 40;
  const double ctas = static_cast<double>(gx * gy);
  const double rows = static_cast<double>(std::min(T, V));
  hw::CtaWork w;
  w.fp32_flops = static_cast<double>(T * d) / ctas;
  w.dram_read_bytes = (static_cast<double>(T * d) * e + rows * static_cast<double>(d) * e + static_cast<double>(T) * 24) / ctas;
  w.dram_write_bytes = rows * static_cast<double>(d) * e / ctas;
  w.l2_bytes = w.dram_read_bytes + w.dram_write_bytes;
  w.max_inflight_bytes = 4.0 * 32 * 4 * e;
  w.critical_path = detail::dram_round_trips(kIndexingBackwardRoundTrips, hw);
  detail::add_class(l, gx * gy, w);
  l.reads = {linear, positions, grad_out, grad_table};
  l.writes = {grad_table};
  out.push_back(std::move(l));
  return out;
}

}  // namespace gpusim::models
