// The vocabulary shared by cuBLAS's GEMM kernel choice (gemm_selection.cpp) and the launches
// built from it (gemm_model.cpp): a kernel configuration, a choice of one with its K split, the
// problem, and the tile arithmetic and per-step costs both the choice and the launches charge.
// Internal to the GEMM model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "hw/occupancy.h"
#include "models/common.h"

namespace gpusim::models::gemm_detail {
using detail::ceil_div;
using detail::round_up;

enum class GemmKind { kNvjet, kSm90Tf32, kSimtSingle, kSimtBatched, kMmaSync, kGemv };

// One kernel configuration: the tile (tile_n along N, tile_m along M, tile_k deep), its
// pipeline and resources, and how its grid is formed.
struct Config {
  GemmKind kind = GemmKind::kNvjet;
  std::int64_t tile_n = 128, tile_m = 128, tile_k = 64;
  std::int64_t stages = 4;
  int threads = 384;
  int regs = 168;
  std::int64_t smem = 0;
  // Thread-block cluster: cluster_n tiles along N by cluster_m along M. Each grid dimension's
  // tile count is rounded up to it (ops_h100.csv: 88 tiles of 64x48 in 2x4 clusters -> 96 CTAs).
  std::int64_t cluster_n = 1, cluster_m = 1;
  bool persistent = false;
  // nvjet name parts: schedule ("h"/"v"), cooperative suffix, last layout letter.
  std::string sched = "v", coop;
  char out_layout = 'T';
  // Elements per global load (the operands' alignment) of an mma.sync kernel: 1 means the
  // sm_75-style kernel that stages single elements through registers, two stages deep, so each
  // K step waits for its loads (cuBLAS's "cutlass_75_tensorop_..._align1").
  std::int64_t align = 8;
  // The sm_75-style kernel for 16-bit operands with single-element rows: loads go through
  // registers, so every K step waits for its own (tf32's align1 kernels use cp.async, as align2/4).
  bool register_staged = false;
  // Every K step waits for its own loads: a chain of k_step_path, not a throughput. The
  // register-staged 16-bit kernels, and on sm_90 the tf32 align1 kernels too (random sets 3-5,
  // ops{3,4,5}_h100.json: "cutlass_80_tensorop_s1688gemm_128x256_32x3_nn_align1" takes 2.2 us
  // per 32-deep step for 2696x1491x6839 over one wave, 2.9 for 660x543x2782 split 8, about 3 for
  // 3660x11162x365 over ten waves, as the 16-bit align1 kernels' 2.1). The DRAM round trips a
  // step waits (0: none).
  double k_step_round_trips = 0;
  // Cycles a thread's epilogue stores add to its CTA's time after the mainloop (the mma.sync
  // kernels' stores of 1-4 elements each).
  double epilogue_chain_cycles = 0;
  // Cycles each K step adds to that chain beyond its loads (the wmma kernels' 16-deep sub-steps).
  double k_step_chain_cycles = 0;
  // The K elements a split-K slice is rounded up to (0: whole K steps, tile_k).
  std::int64_t split_k_align = 0;
  // cuBLAS's sm80_xmma tf32 kernel of 32x32x64 tiles that small unaligned tf32 products run.
  bool xmma_tf32_small = false;
  // CUTLASS's wmma (m16n16k16) kernel of 32x32 tiles that small 16-bit align2 products run.
  bool wmma = false;
  // SIMT kernels: the share of time the FP32 pipe issues FFMAs (simt_ffma_share).
  double ffma_share = 0;
  // SIMT kernels: the DRAM round trips one 8-deep K step waits (simt_k_step_path).
  double simt_step_round_trips = 1.0;
  // Half DRAM round trips of base_work's prologue the kernel does not wait before its K-step
  // chain, because its first loads wait in that chain instead (set where each kernel family's
  // configuration is made).
  std::int64_t prologue_saved_half_round_trips = 0;
  // Core-clock cycles a tile's epilogue spends issuing its stores, which the CTAs sharing an SM
  // take in turn (hw::CtaWork::issue_path); 0 where that does not bind.
  double epilogue_issue_cycles = 0;
  // Core-clock cycles each K step spends issuing its loads, which the CTAs sharing an SM take in
  // turn (register-staged kernels' single-element loads); 0 where that does not bind.
  double k_step_issue_cycles = 0;
  // sm_90 tf32 kernels: the consumer warpgroups issuing wgmma (cuBLAS's "warpgroupsize<W>x1x1").
  int consumer_warpgroups = 2;
};

struct Choice {
  Config cfg;
  std::int64_t split = 1;
  double est_seconds = 0;
  // The partials go through cublasLt::splitKreduce_kernel (every split; tf32's small products
  // even unsplit).
  bool reduce = false;
  // The slices add into the output in turn inside the kernel (serial split-K behind a memset of
  // semaphores) instead of a reduce kernel.
  bool serial = false;
  // The partials are written in the output's 16-bit type, not fp32 (the "bf16_s1688gemm" split-K
  // variant and its splitKreduce_kernel<..., __nv_bfloat16, __nv_bfloat16, float, ...>).
  bool partials_16bit = false;
};

// A choice that splits K `split` ways through cublasLt's splitKreduce_kernel (even unsplit).
inline Choice reduced_split(const Config& c, std::int64_t split, bool partials_16bit = false) {
  Choice ch{c, split, 0};
  ch.reduce = true;
  ch.partials_16bit = partials_16bit;
  return ch;
}

struct Problem {
  std::int64_t M, N, K, batch;
  hw::DType dtype;
  std::int64_t lda = 0, ldb = 0;  // as GemmProblem's: 0 for contiguous (K, N)
};

// The share of the tensor rate an mma.sync kernel reaches. On sm_90 (share below 1) the legacy
// warp-level path reaches about the same FLOP rate whatever the operand type: cuBLAS's tf32
// align1 kernels run 78-116 TFLOP/s on large shapes as the 16-bit ones run 83-118 (random sets
// 3-5, ops{3,4,5}_h100.json: 2696x1491x6839 in 472 us, 3341x422x9010 in 300), so tf32 takes the
// share of the 16-bit rate. The 16-bit multistage kernels (cp.async, align2 and up) reach more
// than the register-staged ones: 150-200 TFLOP/s on large shapes (sets 3-8, e.g. 3410x2246x5186
// in 396 us). Where mma.sync is native (share 1) every kernel runs at its type's rate.
inline double mma_sync_efficiency(const hw::HardwareSpec& hw, hw::DType d, bool register_staged) {
  const double share = hw.throughput.mma_sync_share;
  if (share >= 1.0) return share;
  if (d != hw::DType::kTf32) return register_staged ? share : hw.throughput.mma_sync_cp_async_share;
  return std::min(1.0, share * hw.tensor_flops_per_cycle(hw::DType::kBf16) /
                           hw.tensor_flops_per_cycle(hw::DType::kTf32));
}

// One consumer warpgroup of cuBLAS's sm_90 tf32 kernels keeps the tensor pipe busy about half
// the time: the 64x128, 128x128 and 64x256 kernels ("warpgroupsize1x1x1") reach 130-260
// TFLOP/s on products of several waves where the two-warpgroup 128x256 ones reach 340-380 (sets
// 3-14, H100; e.g. 2352x2992x864 in 47 us, 5280x13152x7072 in 2586). Issue 16's tenth round,
// fitted on the 28 sm_90 tf32 rows of sets 3-14 (H100) and 26 of sets 3-13 (H200) with the tile
// rule (tf32_sm90_candidates): 0.45-1 tried, 0.55 best; 23.8 -> 18.5% (H100), 28.1 -> 19.8%.
constexpr double kSm90Tf32OneWarpgroupShare = 0.55;

// The share of its tensor rate a configuration's MMA instructions reach.
inline double tensor_efficiency(const hw::HardwareSpec& hw, hw::DType d, const Config& c) {
  if (c.kind == GemmKind::kMmaSync) return mma_sync_efficiency(hw, d, c.register_staged);
  if (c.kind == GemmKind::kSm90Tf32 && c.consumer_warpgroups == 1) {
    return kSm90Tf32OneWarpgroupShare;
  }
  return 1.0;
}

inline double k_step_path(const hw::HardwareSpec& hw, const Config& c, double k_per_cta) {
  return std::ceil(k_per_cta / static_cast<double>(c.tile_k)) *
         (c.k_step_round_trips * hw.dram.latency.seconds() +
          c.k_step_chain_cycles / hw.clocks.sustained_other_hz);
}

// Seconds one CTA's K steps spend issuing their loads (Config::k_step_issue_cycles).
inline double k_step_issue_seconds(const hw::HardwareSpec& hw, const Config& c, double k_per_cta) {
  return std::ceil(k_per_cta / static_cast<double>(c.tile_k)) * c.k_step_issue_cycles /
         hw.clocks.sustained_other_hz;
}

// CTAs resident per SM for a configuration (1 when it cannot be computed).
inline int ctas_per_sm(const hw::HardwareSpec& hw, const Config& c) {
  const auto occ =
      hw::compute_occupancy(hw.sm, hw::BlockResources{c.threads, c.regs, c.smem});
  return std::max(1, occ.ctas_per_sm);
}

// CTAs an SM actually holds at once for a launch of `ctas`, at most its occupancy `occ`: they
// share its pipes and take turns at its schedulers.
inline double ctas_sharing_an_sm(const hw::HardwareSpec& hw, int occ, double ctas) {
  return std::min(static_cast<double>(occ), std::ceil(ctas / static_cast<double>(hw.sm_count)));
}

inline std::int64_t units_of(const Problem& p, const Config& c, std::int64_t split) {
  return ceil_div(p.N, c.tile_n) * ceil_div(p.M, c.tile_m) * p.batch * split;
}

// CTAs launched: the tile grid rounded up to whole clusters, capped at one wave of clusters
// for persistent kernels.
inline std::int64_t grid_ctas(const hw::HardwareSpec& hw, const Problem& p, const Config& c,
                              std::int64_t split) {
  const std::int64_t per_cluster = c.cluster_n * c.cluster_m;
  std::int64_t ctas = round_up(ceil_div(p.N, c.tile_n), c.cluster_n) *
                      round_up(ceil_div(p.M, c.tile_m), c.cluster_m) * p.batch * split;
  if (c.persistent) {
    ctas = std::min(ctas, std::max(per_cluster, hw.sm_count / per_cluster * per_cluster));
  }
  return ctas;
}

inline std::int64_t k_per_split(const Problem& p, const Config& c, std::int64_t split) {
  return round_up(ceil_div(p.K, split), c.split_k_align > 0 ? c.split_k_align : c.tile_k);
}

// splitKreduce_kernel's threads walk their partials four at a time; a group of four costs a
// little less than an L2 round trip, the next group's loads issuing under the last adds. The
// partials left over after the groups (split % 4) run one load at a time, each step a longer round
// trip: one leftover costs one step, two or three two (a split below four runs one step) (sets
// 3-24, H100, reduces of 1-4 CTAs, median: 1.60 us for 1-3 partials, 1.50 for 4, 1.66-1.79 for 5,
// 1.86-1.92 for 6, 1.55 for 8, 1.84 for 9, 1.89 for 10, 1.98 for 11; the H200 0.2 us lower, the
// same steps). A least-squares fit over the 498 reduces of at most 16 CTAs and 4-264 partials of
// sets 3-25 gives 0.120 us a group and 0.231 a leftover step on the H100 (0.121 and 0.229 on the
// H200): 0.84 and 1.6 of the 143 ns L2 round trip.
constexpr std::int64_t kReducePartialsPerRoundTrip = 4;
constexpr double kReduceGroupRoundTrips = 0.84;
constexpr double kReduceLeftoverStepRoundTrips = 1.6;
constexpr std::int64_t kReduceLeftoverMaxSteps = 2;

inline double reduce_chain_seconds(const hw::HardwareSpec& hw, std::int64_t split) {
  const std::int64_t groups = split / kReducePartialsPerRoundTrip;
  const std::int64_t leftover = split % kReducePartialsPerRoundTrip;
  const std::int64_t leftover_steps =
      groups == 0 ? std::min<std::int64_t>(leftover, 1) : std::min(leftover, kReduceLeftoverMaxSteps);
  return (static_cast<double>(groups) * kReduceGroupRoundTrips +
          static_cast<double>(leftover_steps) * kReduceLeftoverStepRoundTrips) *
         hw.l2.hit_latency.seconds();
}

// cuBLAS's sm80_xmma SIMT kernels split K into fp32 partials that their own reduce
// ("..._execute_split_k_kernel") sums, not cuBLASLt's splitKreduce_kernel: one or two CTAs a
// tile (the main kernel's threads), each thread walking the partials in turn with its share of
// the tile's outputs, 16 at a time (sets 3-19, H100, 53 launches: 2.0 us + 0.23 us per partial
// and 16 outputs a thread, 7% MAPE, from 2.5 us for 2 partials to 10 us for 33 of a 64x32
// tile and 6.9 us for 3 of a 256x128 tile). The step is about 1.6 L2 round trips (partials hit
// in L2 near or far); the rest is three DRAM round trips after the launch.
constexpr double kXmmaSplitKStepL2RoundTrips = 1.6;
constexpr int kXmmaSplitKFixedRoundTrips = 3;
constexpr std::int64_t kXmmaSplitKOutputsPerStep = 16;

// Whether a configuration's split-K partials go to its own reduce kernel (sm80_xmma's SIMT
// kernels) rather than cuBLASLt's splitKreduce_kernel.
inline bool reduces_in_own_kernel(const Config& c) { return c.kind == GemmKind::kSimtBatched; }

// The SIMT kernels run FFMA on the FP32 pipe, whatever the operand type.
inline bool runs_ffma(const Config& c) {
  return c.kind == GemmKind::kSimtSingle || c.kind == GemmKind::kSimtBatched;
}

// Bytes of one split-K partial element: fp32, or the output's 16-bit type in the variants that
// write those (Choice::partials_16bit).
inline double partial_bytes(const Problem& p, bool partials_16bit) {
  return partials_16bit ? detail::elt_bytes(p.dtype) : 4.0;
}

// CTAs per tile of the xmma split-K reduce: two where a tile holds more than 16 outputs a
// thread (the measured grids: one for 32x32 tiles of 64 threads, two for 64x32 and larger).
inline std::int64_t xmma_splitk_ctas_per_tile(const Config& c) {
  return c.tile_m * c.tile_n > c.threads * kXmmaSplitKOutputsPerStep ? 2 : 1;
}

// The xmma reduce's chain: every partial, 16 outputs a thread at a time.
inline double xmma_splitk_chain_seconds(const hw::HardwareSpec& hw, const Config& c,
                                        std::int64_t split) {
  const std::int64_t per_thread =
      ceil_div(c.tile_m * c.tile_n, xmma_splitk_ctas_per_tile(c) * c.threads);
  const double steps = static_cast<double>(split * ceil_div(per_thread, kXmmaSplitKOutputsPerStep));
  return steps * kXmmaSplitKStepL2RoundTrips * hw.l2.hit_latency.seconds();
}

// SIMT GEMMs issue shared-memory loads and address arithmetic beside their FFMAs: the FP32 pipe
// runs FFMAs about 77% of the time in CUTLASS's kernels (the 256x128 tile, calibrated on the
// 2048^3 fp32 calibration row; its smaller tiles keep that share, as the split-K slices of
// ops3_h100.csv follow). In the sm80_xmma kernels the share follows the outputs a thread holds
// per shared-memory load: 56% at 32 (the 64x64 tile, calibrated on naive attention's two
// calibration GEMMs), 77% at 128 (the 128x128 tile: 4320x336x4240 and 1856x1312x5248 run at
// 66-68% of the FP32 peak in sets 3-13), log-linear between, and on down to 16 (the 32x32 tile
// of 64 threads, 46%: extrapolated, since issue 16's tenth round offered that tile; held at 56%
// it took deep products from the 128x128 tile, which cuBLAS ran).
constexpr double kFfmaShareCutlass = 0.77;
constexpr double kFfmaShareAt32Outputs = 0.56;
constexpr double kFfmaShareAt128Outputs = 0.77;

inline double ffma_share_of(std::int64_t tile_m, std::int64_t tile_n, int threads) {
  const double outputs = static_cast<double>(tile_m * tile_n) / threads;
  const double t = std::clamp(std::log2(outputs / 32.0) / 2.0, -0.5, 1.0);
  return kFfmaShareAt32Outputs + t * (kFfmaShareAt128Outputs - kFfmaShareAt32Outputs);
}

inline double simt_ffma_share(const Config& c) {
  return c.ffma_share > 0 ? c.ffma_share : ffma_share_of(c.tile_m, c.tile_n, c.threads);
}

// A SIMT CTA's K steps (8 deep) each wait about one DRAM latency for their operands, however
// few FLOPs they hold (ops3_h100.csv: the split-K slices of 16x144x4512, 21x144x10169 and
// 16x3x10508 take 0.25-0.35 us per step).
inline double simt_k_step_path(const hw::HardwareSpec& hw, double k_per_cta, const Config& c) {
  return std::ceil(k_per_cta / static_cast<double>(c.tile_k)) * c.simt_step_round_trips *
         hw.dram.latency.seconds();
}

inline hw::CtaWork base_work(const hw::HardwareSpec& hw, hw::DType d) {
  hw::CtaWork w;
  w.tensor_dtype = d == hw::DType::kFp32 ? hw::DType::kBf16 : d;
  // Prologue: the tensor-map and barrier setup and the first stages' loads (two dependent DRAM
  // round trips); epilogue: the accumulators go out through shared memory and a TMA store that
  // completes before the CTA exits (two more). Calibrated as a count of latencies on the
  // calibration set's small GEMM (512^3, validation/data/ops_h100.csv). A persistent CTA pays
  // this once: its later tiles' loads overlap the previous epilogue.
  w.fixed = sim::Time::from_ps(4 * hw.dram.latency.ps()) + hw.l2.hit_latency;
  return w;
}

}  // namespace gpusim::models::gemm_detail
