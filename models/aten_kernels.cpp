// The small ATen kernels eager transformer code launches besides GEMMs, attention and
// pointwise math: embedding lookups, torch.cat (RoPE's rotate_half, the KV-cache append),
// reductions (RMSNorm's mean, the MoE top-k sum), the causal mask SDPA's math backend builds
// (tril) and the MoE routing bookkeeping (top-k, sort, histogram, cumsum, gathers). Launch
// shapes follow ATen (PyTorch 2.11) and match the kernel lists of
// validation/data/hf_models_h100.json.gz (the tril: hf_train4_h100.json.gz's fp32 cases); most of
// these kernels are latency-bound, so each states the dependent memory round trips on a thread's
// critical path (calibrated on the calibration cases of that file, see docs/engine.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using detail::StreamingKernel;


}  // namespace

Launch lower_embedding_lookup(std::int64_t rows, std::int64_t row_elems, hw::DType dtype,
                              const TensorUse& table, const TensorUse& out,
                              const hw::HardwareSpec& hw) {
  const double e = detail::elt_bytes(dtype);
  const double bytes = static_cast<double>(rows * row_elems) * e;
  StreamingKernel k;
  k.family = "index";
  k.read_bytes = bytes;
  k.write_bytes = bytes;
  k.reads = {table};
  k.writes = {out};
  if (rows <= 16) {
    // indexSelectSmallIndex: each thread walks every index for its columns, so the indices
    // are a dependent chain (index load, then the row load).
    k.name = fmt::format("void at::native::(anonymous namespace)::indexSelectSmallIndex<{}, long, unsigned int, 2, 2, -2>",
                         detail::aten_type_name(dtype));
    k.ctas = std::min<std::int64_t>(ceil_div(row_elems, 128), 8 * hw.sm_count);
    k.threads = 128;
    k.round_trips = 2.0 + static_cast<double>(rows);
    k.inflight_per_cta = 128 * e;
    return detail::streaming_launch(k, hw);
  }
  // vectorized_gather_kernel<16>: one CTA row per index and 4 KiB chunk of the row.
  const double row_bytes = static_cast<double>(row_elems) * e;
  const std::int64_t chunks = ceil_div(static_cast<std::int64_t>(row_bytes), 4096);
  k.name = "void at::native::vectorized_gather_kernel<16, long>";
  k.ctas = rows * chunks;
  k.threads = 256;
  k.round_trips = 2.0;
  k.inflight_per_cta = 256 * 16.0;
  Launch l = detail::streaming_launch(k, hw);
  l.grid = {rows, chunks, 1};
  return l;
}

Launch lower_cat(const std::vector<std::int64_t>& input_elems, hw::DType dtype, bool vectorized,
                 const std::vector<TensorUse>& inputs, const TensorUse& out,
                 const hw::HardwareSpec& hw, const std::vector<bool>& dense) {
  if (input_elems.empty()) throw ModelError("cat: no inputs");
  const double e = detail::elt_bytes(dtype);
  const auto opaque = static_cast<int>(e);
  const std::int64_t n_in = static_cast<std::int64_t>(input_elems.size());
  const std::int64_t largest = *std::max_element(input_elems.begin(), input_elems.end());
  Launch l;
  l.family = "cat";
  std::int64_t per_cta_threads = 0, gx = 0, vec = 1;
  if (vectorized) {
    vec = std::max<std::int64_t>(1, 16 / opaque);
    l.name = fmt::format("void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::(anonymous namespace)::OpaqueType<{}u>, unsigned int, 3, 128, 1, 16, {}>",
                         opaque, vec);
    per_cta_threads = 128;
    // getCatGridContig: one 16-byte vector per thread, at most 32 CTAs per SM (grid-striding
    // beyond that).
    gx = std::clamp<std::int64_t>(ceil_div(largest, 128 * vec), 1, 32 * static_cast<std::int64_t>(hw.sm_count));
  } else {
    l.name = fmt::format("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<{}u>, unsigned int, 4, 64, 64>",
                         opaque);
    per_cta_threads = 512;
    gx = 2 * static_cast<std::int64_t>(hw.sm_count);
  }
  l.grid = {gx, n_in, 1};
  l.block = {per_cta_threads, 1, 1};
  l.regs_per_thread = vectorized ? 23 : 25;
  for (std::size_t i = 0; i < input_elems.size(); ++i) {
    const std::int64_t elems = input_elems[i];
    // Dependent round trips per grid-stride iteration of a thread: the vectorized kernel loads
    // one vector and stores it; the strided kernel computes the output offset from the element
    // index with integer divisions (and the input offset too, for a strided input) and copies
    // one element (round trips fitted on the calibration cases' KV-cache and RoPE cats).
    const double per_iteration = vectorized ? 1.0 : (i < dense.size() && dense[i] ? 2.0 : 2.25);
    hw::CtaWork w;
    const double bytes = static_cast<double>(elems) * e / static_cast<double>(gx);
    w.l2_bytes = 2 * bytes;
    w.dram_read_bytes = bytes;
    w.dram_write_bytes = bytes;
    w.max_inflight_bytes = static_cast<double>(per_cta_threads) * (vectorized ? 16.0 : e);
    const double iterations = std::max(
        1.0, std::ceil(static_cast<double>(elems) / static_cast<double>(gx * per_cta_threads * vec)));
    w.critical_path = sim::Time::from_seconds(
        (vectorized ? per_iteration * iterations : 1.0 + per_iteration * iterations) *
        hw.dram.latency.seconds());
    detail::add_class(l, gx, w);
  }
  l.reads = inputs;
  l.writes = {out};
  return l;
}

Launch lower_reduce(std::int64_t outputs, std::int64_t reduced, hw::DType in, hw::DType out,
                    bool inner, std::string_view op_functor, const TensorUse& input,
                    const TensorUse& output, const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.family = "reduce";
  k.read_bytes = static_cast<double>(outputs * reduced) * detail::elt_bytes(in);
  k.write_bytes = static_cast<double>(outputs) * detail::elt_bytes(out);
  k.fp32_flops = static_cast<double>(outputs * reduced);
  k.reads = {input};
  k.writes = {output};
  std::int64_t bx = 0, by = 0;
  if (inner) {
    // ATen's ReduceConfig for a contiguous reduction: a block row of up to 32 threads (more
    // when there are few outputs) per output, up to 512 threads; 4-wide vector loads.
    constexpr std::int64_t kMaxThreads = 512;
    bx = std::min<std::int64_t>(detail::last_pow2(reduced), 32);
    by = std::min<std::int64_t>(detail::last_pow2(outputs), kMaxThreads / bx);
    bx = std::min<std::int64_t>(detail::last_pow2(reduced), kMaxThreads / by);
    k.ctas = ceil_div(outputs, by);
    const double per_thread = static_cast<double>(ceil_div(reduced, bx));
    // One 4-element vector load in flight per thread (the loop's next load waits for the
    // previous one's accumulate), then a shared-memory tree: y.mean(-1) over rows of 4096 fp32
    // takes 9-12 us for 16 rows a CTA from L2 and 19-28 us cold, whatever the CTAs
    // (validation/data/l2_order_h100.json; HF's RMSNorm means, hf_models_h100.json.gz: 8.9-9.7
    // us for 1-64 CTAs). Two elements a round trip had left them 30-40% fast.
    k.round_trips = std::ceil(per_thread / 4.0) + 2.0;
    k.inflight_per_cta = static_cast<double>(bx * by) * 16.0;
    k.name = fmt::format("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<{}, {}> >",
                         detail::aten_type_name(in), op_functor);
    k.smem = by > 1 ? 16 : 2064;
  } else {
    // A strided reduction: each thread owns outputs and walks the reduced dimension.
    bx = 64;
    by = 2;
    k.ctas = ceil_div(outputs, 512);
    k.round_trips = static_cast<double>(reduced) + 1.0;
    k.inflight_per_cta = 128 * 16.0;
    k.name = fmt::format("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<{}, {}> >",
                         detail::aten_type_name(in), op_functor);
    k.smem = 16;
  }
  k.threads = bx * by;
  Launch l = detail::streaming_launch(k, hw);
  l.block = {bx, by, 1};
  return l;
}

Launch lower_tril_bool(std::int64_t rows, std::int64_t cols, const TensorUse& in, const TensorUse& out,
                       const hw::HardwareSpec& hw) {
  if (rows <= 0 || cols <= 0) throw ModelError("tril: rows and cols must be positive");
  constexpr std::int64_t kPerThread = 8, kThreads = 128;
  const double n = static_cast<double>(rows * cols);
  StreamingKernel k;
  k.name = fmt::format("void at::native::triu_tril_kernel<bool, int, false, {}, false>", kPerThread);
  k.family = "tril";
  k.ctas = ceil_div(rows * cols, kPerThread * kThreads);
  k.threads = kThreads;
  k.read_bytes = n;  // one byte an element
  k.write_bytes = n;
  k.fp32_flops = n;  // the index compare
  // A thread's elements load together, then the selected values store.
  k.round_trips = 2.0;
  k.inflight_per_cta = static_cast<double>(kThreads * kPerThread);
  k.reads = {in};
  k.writes = {out};
  return detail::streaming_launch(k, hw);
}

std::vector<Launch> lower_topk(std::int64_t rows, std::int64_t cols, std::int64_t k,
                               const TensorUse& in, const TensorUse& out, const hw::HardwareSpec& hw) {
  // sbtopk::gatherTopK finds the k-th value by radix selection (several passes over the row,
  // each a dependent reduction), then bitonicSortKVInPlace orders the k results.
  StreamingKernel select;
  select.name = "void at::native::sbtopk::gatherTopK<float, unsigned int, 1, false>";
  select.family = "topk";
  select.ctas = rows;
  // A thread per element of the row, in whole warps (8 experts: 32; 64: 64; 128: 128; 256: 256;
  // hf_models_h100.json.gz and hf_models3_h100.json.gz).
  select.threads = std::clamp<std::int64_t>(32 * ceil_div(cols, 32), 32, 1024);
  select.read_bytes = static_cast<double>(rows * cols) * 4;
  select.write_bytes = static_cast<double>(rows * k) * 12;
  select.round_trips = 9;
  select.reads = {in};
  select.writes = {out};
  StreamingKernel sort = select;
  sort.name = "void at::native::bitonicSortKVInPlace<-2, -1, 16, 16, float, long, at::native::GTOp<float, true>, unsigned int>";
  sort.threads = 16;
  sort.read_bytes = sort.write_bytes = static_cast<double>(rows * k) * 12;
  sort.round_trips = 9;
  sort.reads = {out};
  return {detail::streaming_launch(select, hw), detail::streaming_launch(sort, hw)};
}

std::vector<Launch> lower_sort(std::int64_t n, const TensorUse& inout, const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.family = "sort";
  k.read_bytes = k.write_bytes = static_cast<double>(n) * 16;
  k.reads = {inout};
  k.writes = {inout};
  if (n <= 32) {
    k.name = "void at::native::bitonicSortKVInPlace<-2, -1, 16, 16, long, long, at::native::LTOp<long, true>, unsigned int>";
    k.threads = 16;
    k.round_trips = 7;
    return {detail::streaming_launch(k, hw)};
  }
  if (n <= 4096) {
    // One CTA radix-sorts the 64-bit keys 4 bits a pass (16 passes), each pass a block-wide
    // scan; 32 keys a thread (32 threads up to 1,024 keys, 128 threads for 4,096). A pass costs
    // 4.27 round trips plus 0.044 per 128 keys: 27.1 us at 512 keys (Mixtral prefill) and
    // 34.1 us at 4,096 (Qwen3-MoE and DeepSeek-V2-Lite prefill calibration cases); fitted on the
    // first alone it was 1.1 round trips per 128 keys, 200 us at 4,096.
    k.name = "void at::native::radixSortKVInPlace<-2, -1, 32, 32, long, long, unsigned int>";
    k.threads = std::clamp<std::int64_t>(32 * ceil_div(ceil_div(n, 32), 32), 32, 1024);
    k.regs = 223;
    k.smem = 8464;
    k.round_trips = 4.0 + 16.0 * (4.27 + 0.044 * static_cast<double>(ceil_div(n, 128)));
    return {detail::streaming_launch(k, hw)};
  }
  // Longer: cub's onesweep radix sort (Moonlight prefill, 6,144 keys): a histogram over all
  // keys, an exclusive sum, then 8 passes of 8 bits, each zeroing its tile counters and
  // scattering tiles of 3,072 keys (384 threads) with decoupled look-back.
  std::vector<Launch> out;
  out.push_back(detail::memset_launch(inout.tensor, "radix_sort_histogram", 8 * 256 * 8));
  StreamingKernel hist = k;
  hist.name = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortHistogramKernel";
  hist.ctas = 7 * static_cast<std::int64_t>(hw.sm_count);
  hist.threads = 128;
  hist.read_bytes = static_cast<double>(n) * 8;
  hist.write_bytes = 8.0 * 256 * 4;
  hist.round_trips = 2;
  out.push_back(detail::streaming_launch(hist, hw));
  StreamingKernel scan = k;
  scan.name = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortExclusiveSumKernel";
  scan.ctas = 8;
  scan.threads = 256;
  scan.read_bytes = scan.write_bytes = 256.0 * 4;
  scan.round_trips = 1;
  out.push_back(detail::streaming_launch(scan, hw));
  StreamingKernel pass = k;
  pass.name = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel";
  pass.ctas = ceil_div(n, 3072);
  pass.threads = 384;
  pass.round_trips = 8;
  for (int p = 0; p < 8; ++p) {
    out.push_back(detail::memset_launch(inout.tensor, "radix_sort_lookback", 4 * pass.ctas * 256));
    out.push_back(detail::streaming_launch(pass, hw));
  }
  return out;
}

Launch lower_histogram(std::int64_t n, std::int64_t bins, const TensorUse& in, const TensorUse& out,
                       const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.name = "void at::cuda::kernelHistogram1D<int, int, long, 1, 2, -1, (at::cuda::CUDAHistogramMemoryType)0>";
  k.family = "histogram";
  k.threads = 512;
  k.regs = 42;
  k.read_bytes = static_cast<double>(n) * 4;
  k.write_bytes = static_cast<double>(bins) * 4;
  k.round_trips = 1.5 + static_cast<double>(ceil_div(n, 512));
  k.reads = {in};
  k.writes = {out};
  return detail::streaming_launch(k, hw);
}

std::vector<Launch> lower_cumsum(std::int64_t n, const TensorUse& in, const TensorUse& out,
                                 const hw::HardwareSpec& hw) {
  StreamingKernel init;
  init.name = "void at_cuda_detail::cub::detail::scan::DeviceScanInitKernel";
  init.family = "scan";
  init.round_trips = 0.5;
  init.write_bytes = 64;
  StreamingKernel scan;
  scan.name = "void at_cuda_detail::cub::detail::scan::DeviceScanKernel";
  scan.family = "scan";
  scan.ctas = std::max<std::int64_t>(1, ceil_div(n, 128 * 15));
  scan.regs = 48;
  scan.smem = 7696;
  scan.read_bytes = static_cast<double>(n) * 4;
  scan.write_bytes = static_cast<double>(n) * 4;
  scan.round_trips = 2;
  scan.reads = {in};
  scan.writes = {out};
  return {detail::streaming_launch(init, hw), detail::streaming_launch(scan, hw)};
}

Launch lower_arange(std::int64_t n, const TensorUse& out, const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.name = "void at::native::elementwise_kernel_with_index<int, at::native::arange_cuda_out>";
  k.family = "elementwise";
  k.ctas = std::max<std::int64_t>(1, ceil_div(n, 64));
  k.threads = 64;
  k.regs = 16;
  k.write_bytes = static_cast<double>(n) * 8;
  k.round_trips = 0.3;
  k.writes = {out};
  return detail::streaming_launch(k, hw);
}

Launch lower_row_gather(std::int64_t rows, double row_bytes, const TensorUse& in,
                        const TensorUse& out, const hw::HardwareSpec& hw) {
  const std::int64_t chunks = std::max<std::int64_t>(1, ceil_div(static_cast<std::int64_t>(row_bytes), 4096));
  StreamingKernel k;
  k.name = "void at::native::vectorized_gather_kernel<16, long>";
  k.family = "index";
  k.ctas = rows * chunks;
  k.threads = 256;
  k.read_bytes = k.write_bytes = static_cast<double>(rows) * row_bytes;
  k.round_trips = 2;
  k.inflight_per_cta = 256 * 16.0;
  k.reads = {in};
  k.writes = {out};
  Launch l = detail::streaming_launch(k, hw);
  l.grid = {rows, chunks, 1};
  return l;
}

Launch lower_index_scalars(std::int64_t n, bool put, const TensorUse& in, const TensorUse& out,
                           const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.name = put ? "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_put_kernel_impl> >"
               : "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_impl> >";
  k.family = "index";
  k.ctas = std::max<std::int64_t>(1, ceil_div(n, 512));
  k.regs = 36;
  k.read_bytes = static_cast<double>(n) * 16;
  k.write_bytes = static_cast<double>(n) * 8;
  // An index load, then the indexed load; put also reads its source.
  k.round_trips = (put ? 3.0 : 2.0) + static_cast<double>(std::min<std::int64_t>(n, 512)) / 256.0;
  k.reads = {in};
  k.writes = {out};
  return detail::streaming_launch(k, hw);
}

}  // namespace gpusim::models
