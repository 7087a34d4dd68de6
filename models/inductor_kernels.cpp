// TorchInductor's Triton kernels: launch configurations after torch/_inductor/runtime/
// triton_heuristics.py (pointwise: 1,024 elements a block of 4 warps; persistent reductions for
// rows that fit a block; looped reductions of 16 warps over longer rows), and their latency
// structure: a block issues all of its loads at once (no software pipelining outside tl.dot), so
// a pointwise or persistent block waits about one memory round trip, and a looped reduction one
// round trip per iteration of each pass over its row.
#include "models/inductor_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "models/common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;

constexpr std::int64_t kPointwiseBlock = 1024;     // XBLOCK of the pointwise configs
constexpr std::int64_t kPersistentMaxRow = 1024;   // rows up to this fit one block (triton_per_*)
constexpr std::int64_t kReductionTile = 4096;      // elements of the rows a looped block owns
constexpr std::int64_t kReductionMaxRBlock = 2048;  // RBLOCK: at most this many, 4 a thread
// A looped reduction's iteration: its loads (4 elements a thread), the wait, the accumulation;
// the next iteration's loads are not issued before. Fitted on the loss's log-sum-exp over the
// vocabulary (63 iterations a row of 128,256, 2,048 rows, 355 us on the H100).
constexpr double kIterationRoundTrips = 3.0;
// An iteration that also stores its tile (a pass computing the row's output, as the loss's
// backward writes the logits' gradient) waits about one more. Fitted on the loss's backward
// (one loaded pass of 126 iterations a row, 597 us on the H100, its loop over the nll gradient
// loading nothing).
constexpr double kStoreRoundTrips = 1.0;
// Dependent memory round trips of a block beyond its loop: the first load, the reduction
// across warps (shared memory and a barrier) and the store.
constexpr double kBlockRoundTrips = 1.5;

std::int64_t pow2_ceil(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

double sum_bytes(const std::vector<hw::TensorUse>& ts) {
  double b = 0;
  for (const auto& t : ts) b += static_cast<double>(t.bytes);
  return b;
}

}  // namespace

hw::Launch lower_triton(const TritonKernel& k, const hw::HardwareSpec& hw) {
  if (k.xnumel <= 0 || k.rnumel < 0 || k.passes < 1) {
    throw ModelError(fmt::format("triton kernel {}: sizes must be positive", k.name));
  }
  detail::StreamingKernel s;
  s.name = k.name;
  s.family = "triton";
  s.read_bytes = sum_bytes(k.reads);
  s.write_bytes = sum_bytes(k.writes);
  s.reads = k.reads;
  s.writes = k.writes;
  double iterations = 0;  // dependent loop iterations of a block
  if (k.rnumel == 0) {
    s.ctas = ceil_div(k.xnumel, kPointwiseBlock);
    s.threads = 128;
    s.fp32_flops = k.flops_per_elem * static_cast<double>(k.xnumel);
  } else if (k.rnumel <= kPersistentMaxRow) {
    // A row (or several short ones) per block, held in registers.
    const std::int64_t rows_per_cta = std::max<std::int64_t>(1, kPersistentMaxRow / pow2_ceil(k.rnumel));
    s.ctas = ceil_div(k.xnumel, rows_per_cta);
    s.threads = rows_per_cta > 1 ? 64 : 32;
    s.fp32_flops = k.flops_per_elem * static_cast<double>(k.xnumel * k.rnumel);
  } else {
    const std::int64_t rows_per_cta = std::max<std::int64_t>(1, kReductionTile / pow2_ceil(k.rnumel));
    s.ctas = ceil_div(k.xnumel, rows_per_cta);
    s.threads = k.threads > 0 ? k.threads : 512;
    s.fp32_flops = k.flops_per_elem * static_cast<double>(k.xnumel * k.rnumel);
    const std::int64_t rblock = std::min({pow2_ceil(k.rnumel), kReductionMaxRBlock, 4 * s.threads});
    iterations = static_cast<double>(k.passes) * static_cast<double>(ceil_div(k.rnumel, rblock));
  }
  if (k.threads > 0) s.threads = k.threads;
  if (k.blocks > 0) s.ctas = k.blocks;
  const double ctas = static_cast<double>(s.ctas);
  // A pointwise or persistent block loads everything at once; a looped one an iteration's tile.
  s.inflight_per_cta = iterations > 0 ? s.read_bytes / ctas / iterations : s.read_bytes / ctas;
  // The last pass stores the rows when the kernel writes about as much as it reads.
  const bool stores_rows = iterations > 0 && s.write_bytes >= 0.5 * s.read_bytes;
  const double last_pass = iterations / static_cast<double>(k.passes);
  s.round_trips = kBlockRoundTrips + kIterationRoundTrips * iterations + (stores_rows ? kStoreRoundTrips * last_pass : 0.0);
  s.regs = 32;
  return detail::streaming_launch(s, hw);
}

std::vector<hw::Launch> lower_triton_column_sum(const std::string& name, std::int64_t rows, std::int64_t cols,
                                                const std::vector<hw::TensorUse>& reads, const hw::TensorUse& output,
                                                const hw::HardwareSpec& hw) {
  if (rows <= 0 || cols <= 0) throw ModelError(fmt::format("triton column sum {}: sizes must be positive", name));
  // Row groups of 32 rows, as many as keep the partial kernel within 2,048 blocks of 64 columns.
  const std::int64_t splits = std::clamp<std::int64_t>(std::min(ceil_div(rows, 32), 131072 / cols), 1, rows);
  const hw::TensorUse partial = detail::tensor(output.tensor, "partials", static_cast<double>(splits * cols) * 4);
  TritonKernel p;
  p.name = fmt::format("triton_red_fused_{}_sum_0", name);
  p.xnumel = splits * cols;
  p.rnumel = ceil_div(rows, splits);
  p.threads = 128;
  p.blocks = ceil_div(splits * cols, 64);  // 64 columns of one row group a block
  p.reads = reads;
  p.writes = {partial};
  TritonKernel f;
  f.name = fmt::format("triton_per_fused_{}_sum_1", name);
  f.xnumel = cols;
  f.rnumel = splits;
  f.threads = 256;
  f.blocks = ceil_div(cols, 128);
  f.reads = {partial};
  f.writes = {output};
  return {lower_triton(p, hw), lower_triton(f, hw)};
}

}  // namespace gpusim::models
