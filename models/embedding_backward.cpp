// nn.Embedding's backward (Embedding.cu, EmbeddingBackwardKernel.cu): the zeroed gradient
// table, then either the per-feature accumulation kernel or the sort path (cub's radix sort of
// the indices, unique_by_key, segment scans, the per-segment sums and scatter), checked against
// validation/data/hf_train_h100.json.gz.
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using detail::dram_round_trips;
using detail::StreamingKernel;

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

}  // namespace

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
    w.critical_path = dram_round_trips(
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
  // hf_models_h100.json.gz): 12 keys a thread is taken.
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
    w.critical_path = dram_round_trips(trips, hw);
    detail::add_class(l, live, w);
    hw::CtaWork idle;  // reads the segment count and exits
    idle.critical_path = dram_round_trips(1.0, hw);
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

}  // namespace gpusim::models
