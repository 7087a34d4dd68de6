// torch._grouped_mm on Hopper (aten/src/ATen/native/cuda/GroupMM.cu, PyTorch 2.11): a small
// kernel that writes the per-group problem sizes and pointers, then a persistent CUTLASS 3.x
// ptr-array GEMM (384 threads, grid = SM count, cluster 2x1) that walks the tiles of every
// group with tokens. Groups with no rows cost nothing, so MoE layers stream only the weights of
// the experts that got tokens. The kernel is chosen on the host from the total row count (the
// per-group counts live on the device): KernelPtrArrayTmaWarpSpecializedPingpong with 64x128x64
// tiles for few rows, the Cooperative kernel with 128x256x64 tiles (MMA 64x256x16) for many.
// The choice is GroupMM.cu's (PyTorch 2.11): Pingpong when M <= 128 or N <= 128, M being the
// mean rows a group for the forward's 2d x 3d product (the Mixtral rows of
// validation/data/hf_models_h100.json.gz: 32 to 512 rows over 8 experts ran the pingpong kernel,
// 4096 rows the cooperative one; Qwen3-MoE's 16,384 rows over 128 experts in
// hf_train3_h100.json.gz the pingpong one). The weight gradient (grouped_gemm_backward.cpp) uses
// the same kernels.
#include <fmt/format.h>

#include <algorithm>

#include "models/common.h"
#include "models/families.h"
#include "models/grouped_gemm.h"
#include "sim/error.h"

namespace gpusim::models {

namespace detail {

bool grouped_gemm_small(std::int64_t M, std::int64_t N) { return M <= 128 || N <= 128; }

std::vector<Launch> grouped_gemm_launches(const GroupedGemmWork& g, hw::DType dtype, const TensorUse& a,
                                          const TensorUse& b, const TensorUse& out, const hw::HardwareSpec& hw) {
  constexpr double kInflightBytes = 8 * 1024;
  // The streaming regime, fitted at decode (one tile a group) on
  // validation/data/grouped_mm_h200.json (72 launches: 1-64 experts hit of Qwen3-MoE's,
  // DeepSeek-V2-Lite's and Mixtral's, 1 and 4 rows each): alone a CTA moves about 1.6 of its 16 KiB
  // stages a DRAM round trip (12.8 us for one Qwen3-MoE expert's 12 tiles of 2048-deep weights, 9.0
  // for 768-deep ones: 0.19 us a stage), all of them together 2.5-2.9 TB/s (dram.activation_rate),
  // and a launch over 128 groups starts about 4 us later than one over 8
  // (kSchedulerCyclesPerGroup). 1.3-2.0 stages x 0-60 cycles tried: 27.3 -> 7.2% on the probe
  // (issue 16's twenty-second round, docs/engine.md).
  constexpr std::int64_t kTileDepth = 64;
  constexpr double kStreamStagesInFlight = 1.6;
  constexpr double kSchedulerCyclesPerGroup = 60;
  const double e = elt_bytes(dtype);
  StreamingKernel prep;
  prep.name = "void at::cuda::detail::prepare_grouped_gemm_data<cutlass::bfloat16_t, cutlass::bfloat16_t, float>";
  prep.family = "grouped_gemm";
  prep.threads = std::max<std::int64_t>(1, g.groups);
  prep.regs = 38;
  prep.read_bytes = static_cast<double>(g.groups) * 4;
  prep.write_bytes = static_cast<double>(g.groups) * 64;
  prep.round_trips = 2;

  const bool hopper = is_hopper(hw);
  const bool cooperative = hopper && !g.small;
  // Elsewhere (sm_80, sm_120) an mma.sync grouped kernel with 128x128 tiles, 256 threads and a
  // 3-stage 32-deep pipeline: an estimate, not measured (no such GPU here).
  const std::int64_t tm = g.tile_m(hw), tn = g.tile_n(hw);
  // The Pingpong kernel streams its experts' weights at the pace grouped_mm_h200.json measured
  // (below): an expert's first row tile from DRAM, its further row tiles (prefills: 65 and more
  // rows an expert) from L2, which the engine charges at L2's latency in the same window of
  // stages. Issue 16's twenty-fifth round: with every expert's rows in one tile only (decode), a
  // group of two tiles had run the unstreamed pace below, 50-115% slow (grouped_mm4_h200.json.gz:
  // 65-128 rows an expert take no longer than 64, 257-267 us for Qwen3-MoE's gate_up over all
  // 128 experts).
  const bool streams = hopper && g.small && g.streams_weights;
  Launch l;
  l.name = !hopper ? std::string("void cutlass::Kernel2<cutlass::gemm::kernel::GemmGrouped<sm80 128x128x32, 3 stages> >") : fmt::format(
      "void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, MainloopSm90ArrayTmaGmmaWarpSpecialized<Shape<2, 1, 1>, KernelPtrArrayTmaWarpSpecialized{}>, Shape<{}, {}, 64> > > >",
      cooperative ? "Cooperative" : "Pingpong", tm, tn);
  l.family = "grouped_gemm";
  l.grid = {hw.sm_count, 1, 1};
  l.block = {hopper ? 384 : 256, 1, 1};
  l.regs_per_thread = hopper ? 168 : 232;
  l.smem_per_cta = !hopper ? 3 * (tm + tn) * 32 * static_cast<std::int64_t>(e) : cooperative ? 215040 : 206848;
  if (g.tiles > 0) {
    const double t = static_cast<double>(g.tiles);
    hw::CtaWork per_tile;
    per_tile.tensor_flops = g.flops / t;
    per_tile.tensor_dtype = dtype;
    per_tile.l2_bytes = g.l2_bytes / t;
    per_tile.dram_read_bytes = g.dram_read_bytes / t;
    per_tile.dram_write_bytes = g.dram_write_bytes / t;
    for (const auto& share : split_evenly(g.tiles, hw.sm_count)) {
      hw::CtaWork w;
      const double n = static_cast<double>(share.items);
      w.tensor_flops = per_tile.tensor_flops * n;
      w.tensor_dtype = dtype;
      w.l2_bytes = per_tile.l2_bytes * n;
      w.dram_read_bytes = per_tile.dram_read_bytes * n;
      w.dram_write_bytes = per_tile.dram_write_bytes * n;
      if (streams) {
        // Each CTA keeps about kStreamStagesInFlight stages of its expert's weight slab in flight
        // (TMA copies, at loaded latency), a 128-byte run of each of the slab's rows a stage,
        // which costs a DRAM row activation apiece; it first walks every group's problem shape.
        w.max_inflight_bytes = kStreamStagesInFlight * static_cast<double>(tn * kTileDepth) * e;
        w.bulk_copies = true;
        // Row activations are the weight slab's: 128-byte runs of its rows, a run a stage. The
        // tokens' rows (read once an expert) and the output tiles (written back from L2)
        // come in long runs: the run length is stretched so that only the weights count.
        w.dram_run_bytes = static_cast<double>(kTileDepth) * e *
                           (g.dram_read_bytes + g.dram_write_bytes) / g.weight_read_bytes;
        w.fixed = hw.dram.latency +
                  sim::Time::from_seconds(kSchedulerCyclesPerGroup * static_cast<double>(g.groups) /
                                          hw.clocks.sustained_other_hz);
      } else {
        // The ptr-array kernel streams its weights well below its shared-memory pipeline depth:
        // calibrated to the 2.35-2.41 TB/s its Mixtral calibration cases reach on the H100.
        w.max_inflight_bytes = kInflightBytes;
        // Each tile fills the TMA pipeline and drains its epilogue: a DRAM round trip apiece.
        w.fixed = sim::Time::from_seconds(n * hw.dram.latency.seconds());
      }
      add_class(l, share.ctas, w);
    }
  } else {
    add_class(l, hw.sm_count, hw::CtaWork{});
  }
  l.reads = {a, b};
  l.writes = {out};
  return {streaming_launch(prep, hw), l};
}

}  // namespace detail

std::vector<Launch> lower_grouped_gemm(const std::vector<std::int64_t>& rows_per_expert,
                                       std::int64_t N, std::int64_t K, hw::DType dtype,
                                       const TensorUse& in, const TensorUse& weights,
                                       const TensorUse& out, const hw::HardwareSpec& hw) {
  using detail::ceil_div;
  const double e = detail::elt_bytes(dtype);
  detail::GroupedGemmWork g;
  g.groups = static_cast<std::int64_t>(rows_per_expert.size());
  std::int64_t total_rows = 0;
  for (const std::int64_t m : rows_per_expert) total_rows += std::max<std::int64_t>(0, m);
  // GroupMM.cu's choice (2d x 3d: M is the mean rows a group, over every group).
  g.small = detail::grouped_gemm_small(g.groups > 0 ? total_rows / g.groups : 0, N);
  const std::int64_t tm = g.tile_m(hw), tn = g.tile_n(hw);
  std::int64_t rows = 0, hit = 0;
  g.streams_weights = true;
  for (const std::int64_t m : rows_per_expert) {
    if (m <= 0) continue;
    g.tiles += ceil_div(m, tm) * ceil_div(N, tn);
    rows += m;
    ++hit;
  }
  // Work of the average tile: a tile_m-row slab of A (only the valid rows are fetched) and a
  // tile_n-row slab of the expert's weights over all of K; weights come from DRAM once per
  // expert (re-reads by further M tiles of the same expert hit L2).
  const double t = static_cast<double>(g.tiles);
  const double weight_bytes = static_cast<double>(hit * N * K) * e;
  const double a_bytes = static_cast<double>(rows * K) * e;
  const double c_bytes = static_cast<double>(rows * N) * e;
  g.flops = 2.0 * static_cast<double>(tm * tn * K) * t;
  g.l2_bytes = static_cast<double>(tn * K) * e * t + a_bytes * static_cast<double>(ceil_div(N, tn)) + c_bytes;
  g.dram_read_bytes = weight_bytes + a_bytes;
  g.weight_read_bytes = weight_bytes;
  g.dram_write_bytes = c_bytes;
  return detail::grouped_gemm_launches(g, dtype, in, weights, out, hw);
}

}  // namespace gpusim::models
