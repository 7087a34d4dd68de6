// torch._grouped_mm on Hopper (aten/src/ATen/native/cuda/GroupMM.cu, PyTorch 2.11): a small
// kernel that writes the per-group problem sizes and pointers, then a persistent CUTLASS 3.x
// ptr-array GEMM (KernelPtrArrayTmaWarpSpecializedPingpong, tile 64x128x64, cluster 2x1,
// 384 threads, grid = SM count) that walks the tiles of every group with tokens. Groups with
// no rows cost nothing, so MoE layers stream only the weights of the experts that got tokens.
// Shapes confirmed by the Mixtral rows of validation/data/hf_models_h100.json.
#include <fmt/format.h>

#include <algorithm>

#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {

std::vector<Launch> lower_grouped_gemm(const std::vector<std::int64_t>& rows_per_expert,
                                       std::int64_t N, std::int64_t K, hw::DType dtype,
                                       const TensorUse& in, const TensorUse& weights,
                                       const TensorUse& out, const hw::HardwareSpec& hw) {
  using detail::ceil_div;
  constexpr std::int64_t kTileM = 64, kTileN = 128;
  constexpr double kInflightBytes = 8 * 1024;
  const double e = detail::elt_bytes(dtype);

  detail::StreamingKernel prep;
  prep.name = "void at::cuda::detail::prepare_grouped_gemm_data<cutlass::bfloat16_t, cutlass::bfloat16_t, float>";
  prep.family = "grouped_gemm";
  prep.threads = std::max<std::int64_t>(1, static_cast<std::int64_t>(rows_per_expert.size()));
  prep.regs = 38;
  prep.read_bytes = static_cast<double>(rows_per_expert.size()) * 4;
  prep.write_bytes = static_cast<double>(rows_per_expert.size()) * 64;
  prep.round_trips = 2;

  std::int64_t tiles = 0, rows = 0, hit = 0;
  for (const std::int64_t m : rows_per_expert) {
    if (m <= 0) continue;
    tiles += ceil_div(m, kTileM) * ceil_div(N, kTileN);
    rows += m;
    ++hit;
  }
  Launch l;
  l.name = "void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, MainloopSm90ArrayTmaGmmaWarpSpecialized<4, Shape<2, 1, 1>, KernelPtrArrayTmaWarpSpecializedPingpong>, Shape<64, 128, 64> > > >";
  l.family = "grouped_gemm";
  l.grid = {hw.sm_count, 1, 1};
  l.block = {384, 1, 1};
  l.regs_per_thread = 168;
  l.smem_per_cta = 206848;
  if (tiles > 0) {
    // Work of the average tile: a 64-row slab of A (only the valid rows are fetched) and a
    // 128-row slab of the expert's weights over all of K; weights come from DRAM once per
    // expert (re-reads by further M tiles of the same expert hit L2).
    const double t = static_cast<double>(tiles);
    const double weight_bytes = static_cast<double>(hit * N * K) * e;
    const double a_bytes = static_cast<double>(rows * K) * e;
    const double c_bytes = static_cast<double>(rows * N) * e;
    hw::CtaWork per_tile;
    per_tile.tensor_flops = 2.0 * kTileM * kTileN * static_cast<double>(K);
    per_tile.tensor_dtype = dtype;
    per_tile.l2_bytes = (static_cast<double>(kTileN * K) * e) +
                        a_bytes * static_cast<double>(ceil_div(N, kTileN)) / t + c_bytes / t;
    per_tile.dram_read_bytes = (weight_bytes + a_bytes) / t;
    per_tile.dram_write_bytes = c_bytes / t;
    for (const auto& share : detail::split_evenly(tiles, hw.sm_count)) {
      hw::CtaWork w;
      const double n = static_cast<double>(share.items);
      w.tensor_flops = per_tile.tensor_flops * n;
      w.tensor_dtype = dtype;
      w.l2_bytes = per_tile.l2_bytes * n;
      w.dram_read_bytes = per_tile.dram_read_bytes * n;
      w.dram_write_bytes = per_tile.dram_write_bytes * n;
      // The ptr-array kernel streams its weights well below its shared-memory pipeline depth:
      // calibrated to the 2.35-2.41 TB/s its Mixtral calibration cases reach on the H100.
      w.max_inflight_bytes = kInflightBytes;
      // Each tile fills the TMA pipeline and drains its epilogue: a DRAM round trip apiece.
      w.fixed = sim::Time::from_seconds(n * hw.dram.latency.seconds());
      detail::add_class(l, share.ctas, w);
    }
  } else {
    detail::add_class(l, hw.sm_count, hw::CtaWork{});
  }
  l.reads = {in, weights};
  l.writes = {out};
  return {detail::streaming_launch(prep, hw), l};
}

}  // namespace gpusim::models
