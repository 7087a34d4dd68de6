// Which GEMM kernel cuBLAS / cuBLASLt (13.x, as PyTorch 2.11 calls them) runs for a matmul or
// linear: its family, its tile and its K split (gemm_model.cpp builds the launches and costs).
//
// Kernel families, by arch and math (measured on H100: validation/data/ops_h100.csv):
//  * sm_90, bf16/fp16/fp8: "nvjet" warp-specialized TMA + wgmma kernels, 384 threads
//    (a producer and two consumer warpgroups), 168 registers, persistent: the grid is the
//    tile count, capped at the SM count, rounded to the thread-block cluster; a CTA loops
//    over tiles. Skinny shapes use split-K ("_splitK" kernels) plus cublasLt::splitKreduce_kernel.
//  * sm_90, tf32: sm90_xmma_gemm_..._tf32f32 kernels, the same persistent structure.
//  * fp32 with TF32 off, every arch: SIMT kernels (cutlass_80_simt_sgemm for a single GEMM,
//    sm80_xmma_gemm_f32..._ffma for batched ones), non-persistent: one CTA per tile.
//  * sm_80 and sm_120, 16-bit/fp8/tf32: mma.sync kernels (sm80_xmma-style), non-persistent
//    tile grids, split-K for skinny shapes; one-row products (decode GEMV) run cuBLAS's
//    gemvx kernel (seen on an RTX 5090 in seed 003's decode profile).
//  * sm_90 with rows that are not 16-byte multiples (no TMA), and small tf32 products: the same
//    mma.sync kernels (align1: sm_75-style, register-staged), at throughput.mma_sync_share of
//    the tensor rate; 2-16 rows of fp32 or single-element-aligned 16-bit operands: gemmSN
//    (validation/data/ops3_h100.csv); small unaligned tf32 products sm80_xmma's 32x32x64 kernel;
//    one output row or column the GEMV, or for a few long products dot_kernel and
//    reduce_1Block_kernel (random sets 3-5).
//
// Tile choice. cuBLAS picks kernels with a trained heuristic we cannot read. We reproduce it
// with a small cost estimate over the candidate tiles and split factors, built only from the
// hardware description (tensor rate, L2 and DRAM bandwidth, DRAM latency, shared memory):
//   time = max(per-CTA critical path, DRAM floor, L2 floor) + split-K reduce cost,
// and take the fastest, preferring fewer splits and larger tiles within 3%. Of the 15 measured
// (not held-out) H100 bf16/fp16 instances it reproduces 10 kernels exactly (name, grid, block,
// registers, shared memory); the 5 misses are near-ties between skinny configurations
// (tests/models/measured_launches_test.cpp lists them).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "models/common.h"
#include "models/gemm_config.h"
#include "models/gemm_selection.h"
#include "sim/error.h"

namespace gpusim::models::gemm_detail {
namespace {

// The nvjet kernels measured on H100 (ops_h100.csv): their stage counts, shared memory and
// clusters are properties of the compiled kernels. Shared memory is stages * (tile_n + tile_m)
// * 128 B plus 16.5-16.9 KiB of epilogue staging (41 KiB for the two "NNN" kernels).
struct NvjetKernel {
  std::int64_t tile_n, tile_m, stages, smem, cluster_n, cluster_m;
  const char* sched;
  const char* coop;
  char out_layout;
};
constexpr NvjetKernel kMeasuredNvjet[] = {
    {256, 128, 4, 213188, 1, 2, "h", "_coopA", 'T'},  // 2048^3, 2048x4096x4096
    {320, 128, 3, 188636, 1, 2, "h", "_coopB", 'T'},  // 8192^3, 4096x14336x4096
    {192, 192, 3, 188604, 1, 2, "h", "_coopB", 'N'},  // 3000^3
    {96, 128, 6, 213220, 4, 1, "v", "", 'N'},         // 128x11008x4096
    {64, 48, 15, 231868, 2, 4, "h", "", 'T'},         // 512^3
    {128, 16, 11, 219468, 4, 1, "v", "", 'T'},        // 16x4096x4096 split-K
    {128, 8, 12, 225652, 4, 1, "v", "", 'T'},         // 1x11008x4096; 8x1024x16384 split-K
    {64, 16, 16, 180692, 2, 1, "v", "", 'T'},         // 16x14336x4096
    {64, 8, 16, 164292, 2, 1, "v", "", 'T'},          // 1x4096x4096, 1x1536x8960 split-K
    {512, 16, 3, 219292, 2, 1, "v", "", 'T'},         // 16x128256x4096
};
// For tiles not measured: the epilogue staging of the measured "NNT" kernels.
constexpr std::int64_t kNvjetEpilogueSmem = 16600;
// Largest stage count an nvjet kernel uses (the 64x8 and 64x16 kernels: "_64x16").
constexpr std::int64_t kMaxStages = 16;

double tensor_rate_per_sm(const hw::HardwareSpec& hw, hw::DType d) {
  if (d == hw::DType::kFp32) return hw.throughput.fp32 * hw.clocks.sustained_other_hz;
  // The choice emulates cuBLAS's own heuristic, which assumes GEMMs reach about 92% of the tensor
  // pipe's peak; with that, its choices match the 86 of 91 measured launches (see the test).
  constexpr double kHeuristicMathEfficiency = 0.92;
  return hw.tensor_flops_per_cycle(d) * hw.clocks.sustained_tensor_hz * kHeuristicMathEfficiency;
}

// An nvjet (or sm90 tf32) configuration for a tile; nullopt when its stages do not fit.
std::optional<Config> hopper_config(const hw::HardwareSpec& hw, hw::DType d, std::int64_t tile_n,
                                    std::int64_t tile_m) {
  Config c;
  c.kind = d == hw::DType::kTf32 ? GemmKind::kSm90Tf32 : GemmKind::kNvjet;
  c.tile_n = tile_n;
  c.tile_m = tile_m;
  // 128-byte-deep K slices: 64 elements of 16-bit types, 32 of tf32, 128 of fp8.
  c.tile_k = 128 / static_cast<std::int64_t>(detail::elt_bytes(d));
  c.threads = 384;
  c.regs = 168;  // every nvjet / sm90_xmma kernel in ops_h100.csv
  c.persistent = true;
  // nvjet's mainloop K steps are a chain (nvjet_step_path); the first stages' loads wait in it,
  // so the prologue holds a DRAM latency less. Half a latency (sets 3-8: 0.25-1 tried) until issue
  // 16's sixteenth round, which charged the first wave's misses their queue
  // (dram.first_miss_interval): one-wave launches of 2-4 CTAs then ran 0.2-0.35 us slow, those of
  // 100-132 CTAs fast (sets 3-25: 0.5, 1 and 1.5 latencies tried with the queue, 1 best).
  if (c.kind == GemmKind::kNvjet) c.prologue_saved_half_round_trips = 2;
  const std::int64_t stage = (tile_n + tile_m) * 128;
  if (c.kind == GemmKind::kSm90Tf32 && tile_n == 256 && tile_m == 128) {
    // sm90_xmma_gemm_..._tf32f32 tilesize128x256x32 (4096^3 tf32): 231424 B, 66x2 grid.
    c.stages = 4;
    c.smem = 231424;
    c.cluster_n = 1;
    c.cluster_m = 2;
    return c;
  }
  for (const auto& k : kMeasuredNvjet) {
    if (c.kind == GemmKind::kNvjet && k.tile_n == tile_n && k.tile_m == tile_m &&
        k.smem <= hw.sm.shared_memory_per_cta) {
      c.stages = k.stages;
      c.smem = k.smem;
      c.cluster_n = k.cluster_n;
      c.cluster_m = k.cluster_m;
      c.sched = k.sched;
      c.coop = k.coop;
      c.out_layout = k.out_layout;
      return c;
    }
  }
  c.stages = std::min(kMaxStages, (hw.sm.shared_memory_per_cta - kNvjetEpilogueSmem) / stage);
  if (c.stages < 2) return std::nullopt;
  c.smem = c.stages * stage + kNvjetEpilogueSmem;
  // Clusters as the measured kernels of similar shape: 1x2 for large tiles, 4x1 for skinny
  // 96..256-wide tiles, 2x1 otherwise.
  const bool large = tile_n >= 128 && tile_m >= 128;
  c.cluster_n = large ? 1 : (tile_n >= 96 && tile_n <= 256 ? 4 : 2);
  c.cluster_m = large ? 2 : 1;
  c.sched = tile_m >= 128 || tile_n >= 320 ? "h" : "v";
  c.coop = large ? "_coopA" : "";
  return c;
}

// mma.sync (sm_80-style) tensor kernels for sm_80 and sm_120, 64-byte-deep K slices.
std::optional<Config> mma_sync_config(const hw::HardwareSpec& hw, hw::DType d, std::int64_t tile_n,
                                      std::int64_t tile_m) {
  Config c;
  c.kind = GemmKind::kMmaSync;
  c.tile_n = tile_n;
  c.tile_m = tile_m;
  c.tile_k = 64 / static_cast<std::int64_t>(detail::elt_bytes(d));  // 64-byte K slices
  const std::int64_t stage = (tile_n + tile_m) * 64;
  // cuBLAS's Ampere kernels run 3..5 stages ("stages_32x5" / "stage5"); fewer if they do not fit.
  c.stages = std::min<std::int64_t>(5, hw.sm.shared_memory_per_cta / stage);
  if (c.stages < 3) return std::nullopt;
  c.smem = c.stages * stage;
  // Warp tiles of 64x64 (32x32 for the small 64x64 CTA tile): 8 warps for 256-wide tiles.
  c.threads = tile_n * tile_m >= 256 * 128 ? 256 : 128;
  // Not measured (no A100 / RTX 5090 here): registers of comparable CUTLASS 2.x kernels.
  c.regs = c.threads == 256 ? 232 : (tile_n * tile_m >= 128 * 128 ? 255 : 168);
  c.persistent = false;
  return c;
}

// DRAM latencies one K step of an sm_90 tf32 align1 kernel takes (the 16-bit align1 kernels' too
// until issue 16's twelfth round): about 2.1 us per 32-deep step on H100 whatever the tile (64x64
// to 256x128) and whatever the CTAs per SM, so a chain of dependent latencies, not a throughput
// (calibration half of validation/data/ops3_h100.csv: 1.5-2.2 us per step over 13 kernels). 5
// since issue 16's ninth round, refitted with the 16-bit kernels' prologue (tile_launch): their
// one-step kernels of few CTAs had run 16% slow, their kernels of three and more steps 10-25% fast
// (sets 3-13, H100 and H200; 4-5.5 round trips a step x 1-4 fewer in the prologue tried, 5 and 3
// best: 10.43 -> 10.34% and 12.06 -> 11.90% over all their rows).
constexpr double kTf32Align1StepRoundTrips = 5.0;

// The 16-bit align1 kernels' K step, split into a latency and an issue part (issue 16's twelfth
// round). Their step time grows with the CTAs an SM holds: on the H100, 64x64 tiles step in 1.21
// us with one CTA an SM, 1.34 with two, 1.96 with four; 128x128 tiles in 1.37 with one and 2.11
// with two (sets 3-17, least squares over the split and unsplit rows of one wave). Every CTA
// issues its single-element loads, 32 a lane each step for a 64x64 tile, and the CTAs sharing
// the SM take their turns (hw::CtaWork::issue_path), so a step is a latency chain plus the
// issue of all resident CTAs. Fitted together on the 634 align1 rows of sets 3-17 (H100) and
// 592 of sets 3-13 and 15-17 (H200): 3-4.25 round trips x 0.02-0.14 cycles an element tried;
// 3.75 and 0.04 best, 14.4 -> 12.4% (H100) and 14.5 -> 13.1% (H200) with the minimum slice.
constexpr double kAlign1StepRoundTrips = 3.75;
constexpr double kAlign1StepIssueCyclesPerElement = 0.04;

// An align1 kernel stores its tile element by element: about 1,000 issue cycles for a 64x64
// tile (a quarter cycle an element), which the CTAs sharing an SM take in turn. Many-tile
// launches of one K step hold five 64x64 CTAs an SM and took 4.4 us a wave where a lone CTA
// takes 3 (sets 3-14: 5467x10083x5 in 91 us on the H100 and the H200 alike, so not DRAM's
// pace). Issue 16's tenth round, fitted on the 508 align1 rows of sets 3-14 (H100) and 466 of
// sets 3-13 (H200): 15.5 -> 13.6% and 17.1 -> 13.5% (800-1,200 tried; per K step, and on the
// align2, tf32 and wmma kernels too, did no better).
constexpr double kAlign1EpilogueIssueCyclesPerElement = 1000.0 / 4096.0;
// Each thread also waits for its own element stores before the CTA ends, about 20 cycles an
// element: a lone CTA of larger tiles takes longer (sets 3-28, H100, one-step launches of one wave:
// 64x64 tiles 2.8-3.1 us, 128x64 4.1-4.4, 128x128 4.5-5.5, 32, 64 and 128 elements a thread).
// Issue 16's seventeenth round, fitted with the prologue: 10-30 cycles x 7-9 half round trips
// tried, 20 and 8 best (sets 3-28 7.933 -> 7.924% H100, 8.789 -> 8.752% H200; those 128x128
// and 128x64 rows about 21 -> 9% fast).
constexpr double kAlign1EpilogueStoreCycles = 20.0;
constexpr std::int64_t kAlign1PrologueSavedHalfRoundTrips = 8;
// The 16-bit cp.async kernels (cutlass_80 s16816, 2- and 4-element rows) store their tile as the
// align1 kernels do, `align` elements a store: about 40 cycles a store a thread after the
// mainloop. Shallow launches of large tiles show it: one 256x128 tile of K = 2 takes 7-8 us
// (1400x3062x2 in 8.4 us on 132 such tiles, 12248x1304x2 in 31.4 on 576), where the mainloop's one
// step takes 3-4 (sets 3-42; those rows had run 25-50% fast). Issue 16's twenty-fourth round,
// with the epilogue serial after the mainloop (Config::epilogue_chain_cycles): 20-60 cycles tried,
// 40 best (op sets 3-42 7.407 -> 7.37% H100, 8.172 -> 8.15% H200); the tf32 kernels' 16-byte
// stores did worse with it.
constexpr double kCpAsyncEpilogueStoreCycles = 40.0;

// The xmma tf32 32x32x64 kernel of small unaligned products: about 0.7 us per 64-deep step
// beyond a one-step kernel's 3 us (sets 3-5: 5165x14x136 in 7.8 us, 253x18x443 in 7.3,
// 1082x11x382 in 7.1, 924x30x30 in 3.5).
constexpr double kXmmaTf32StepRoundTrips = 2.0;

// Elements per 16 bytes or fewer: the widest load every row of A, B and C allows (K for A and,
// as F.linear lays W out, B; N for B in a matmul and for C; the stored leading dimensions where
// the caller knows them).
std::int64_t operand_align(const Problem& p) {
  std::int64_t a = 16 / static_cast<std::int64_t>(detail::elt_bytes(p.dtype));
  const std::int64_t lda = p.lda > 0 ? p.lda : p.K, ldb = p.ldb > 0 ? p.ldb : p.N;
  while (a > 1 && (lda % a != 0 || ldb % a != 0 || p.N % a != 0)) a /= 2;
  return a;
}
// Rows that allow 2- or 4-element loads: wider than single elements, short of 16 bytes (16-bit).
bool two_or_four_element_rows(const Problem& p) {
  const std::int64_t align = operand_align(p);
  return align == 2 || align == 4;
}
// TMA (and so cuBLAS's sm_90 kernels) needs every row stride to be a multiple of 16 bytes; other
// shapes run cuBLAS's sm_80/sm_75-style mma.sync kernels with narrower loads (ops3_h100.csv:
// "..._align1", "_align2" kernels for every unaligned shape).
bool tma_aligned(const Problem& p) {
  return operand_align(p) * static_cast<std::int64_t>(detail::elt_bytes(p.dtype)) == 16;
}

// Whether cuBLAS takes its sm_90 (TMA, wgmma) kernels: 16-byte rows, and for tf32 a deep
// product of some size; the rest run the sm_80 mma.sync kernels (sets 3-13, H100: 24 of the 26
// aligned tf32 products on the sm_90 kernel had K >= 256, at least 64 rows and columns and
// 5e8 multiply-adds, 1552x6240x272 to 5280x13152x7072; none of the 172 on cutlass_80 align4
// had all three, 3600x2832x112, 672x752x448 and 16x5904x8384 among them; 11712x16x1216 and
// 9952x16x2304 ran sm_90, a miss). Never fp32, which has no tensor-core path (its aligned
// one-row products ran gemvx too: 1x4x8, 1x4x20 in sets 3-12).
constexpr std::int64_t kSm90Tf32MinK = 256;
constexpr std::int64_t kSm90Tf32MinSide = 64;
constexpr double kSm90Tf32MinWork = 5e8;

bool runs_sm90_kernels(const hw::HardwareSpec& hw, const Problem& p) {
  if (!detail::is_hopper(hw) || p.dtype == hw::DType::kFp32 || !tma_aligned(p)) return false;
  if (p.dtype == hw::DType::kTf32) {
    const double work = static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K) *
                        static_cast<double>(p.batch);
    return p.K >= kSm90Tf32MinK && std::min(p.M, p.N) >= kSm90Tf32MinSide && work >= kSm90Tf32MinWork;
  }
  return true;
}

// Whether `split` slices of K (each rounded up to the tile depth) leave the last one empty.
bool last_slice_empty(const Problem& p, const Config& c, std::int64_t split) {
  return split > 1 && k_per_split(p, c, split) * (split - 1) >= p.K;
}

// What a split adds to a GEMM as the kernel choice sees it: the fp32 partials go out and come
// back through L2, and the reduce is one more kernel walking its partials for `reduce_seconds`.
double split_cost_seconds(const hw::HardwareSpec& hw, const Problem& p, std::int64_t split,
                          double reduce_seconds) {
  if (split <= 1) return 0.0;
  return 2.0 * static_cast<double>(split * p.batch * p.M * p.N) * 4.0 / hw.l2.bandwidth +
         reduce_seconds + hw.launch.kernel_overhead.seconds() + hw.launch.graph_gap.seconds();
}

// The same with cuBLASLt's splitKreduce_kernel.
double split_cost_seconds(const hw::HardwareSpec& hw, const Problem& p, std::int64_t split) {
  return split_cost_seconds(hw, p, split, reduce_chain_seconds(hw, split));
}

// The cost estimate the choice minimizes (seconds). Only hardware parameters enter it.
double estimate(const hw::HardwareSpec& hw, const Problem& p, const Config& c, std::int64_t split) {
  const double e = detail::elt_bytes(p.dtype);
  const std::int64_t units = units_of(p, c, split);
  const std::int64_t ctas = grid_ctas(hw, p, c, split);
  const int occ = ctas_per_sm(hw, c);
  const double kk = static_cast<double>(k_per_split(p, c, split));
  // CTAs on an SM share its pipes; mma.sync kernels reach their share of the rate.
  const double rate = tensor_rate_per_sm(hw, p.dtype) / occ * tensor_efficiency(hw, p.dtype, c);
  const double t_math = 2.0 * c.tile_m * c.tile_n * kk / rate;
  const double unit_bytes = static_cast<double>(c.tile_m + c.tile_n) * kk * e;
  // A CTA streams at most its pipeline depth per DRAM latency (Little's law) and at most its
  // SM's share of the L2 fabric (all SMs together reach hw.l2.bandwidth).
  const double inflight = static_cast<double>(c.stages * (c.tile_n + c.tile_m) * c.tile_k) * e;
  const double bw_cta = std::min(inflight / hw.dram.latency.seconds(),
                                 hw.l2.bandwidth / hw.sm_count / occ);
  // Units one CTA (slot) processes in sequence.
  const double slots = c.persistent ? static_cast<double>(ctas)
                                    : static_cast<double>(hw.sm_count) * occ;
  const double per_slot = std::ceil(static_cast<double>(units) / slots);
  double t_unit = std::max(t_math, unit_bytes / bw_cta);
  if (c.k_step_round_trips > 0) {
    // Each K step issues its loads after those of the other CTAs sharing the SM.
    const double sharing = ctas_sharing_an_sm(hw, occ, static_cast<double>(ctas));
    t_unit = std::max(t_unit, k_step_path(hw, c, kk) + sharing * k_step_issue_seconds(hw, c, kk));
  }
  const double t_cta = per_slot * t_unit;
  const double unique = static_cast<double>(p.batch) *
                        (static_cast<double>(p.M * p.K + p.K * p.N) * e +
                         static_cast<double>(p.M * p.N) * e);
  // DRAM reaches its bandwidth only with enough SMs streaming: each SM keeps at most
  // sm.max_inflight_bytes of misses in flight (Little's law). The engine lets TMA kernels'
  // stages exceed that; cuBLAS's choices follow the capped estimate better (random sets 3-5).
  const double busy_sms = static_cast<double>(std::min<std::int64_t>(ctas, hw.sm_count));
  const double sm_dram_rate =
      static_cast<double>(hw.sm.max_inflight_bytes) / hw.dram.latency.seconds();
  const double t_dram = unique / std::min(hw.dram.achievable_bandwidth(), busy_sms * sm_dram_rate);
  const double t_l2 = static_cast<double>(units) * unit_bytes / hw.l2.bandwidth;
  return std::max({t_cta, t_dram, t_l2}) + split_cost_seconds(hw, p, split);
}

// cuBLAS keeps the register-staged kernels' K slices deep: 64 and more of K in 191 of the 240
// launches split with a reduce over fewer tiles than SMs (sets 3-17, H100, K above 80: 403x51x342
// -> 5 slices, 847x37x152 -> 2), where the estimate alone splits about twice as fine. Issue
// 16's twelfth round, fitted with the K step above: 32-64 tried, 48 best (the slices of 8-32
// that cuBLAS cuts for some single-tile products stay a miss).
constexpr std::int64_t kRegisterStagedMinSliceK = 48;

// The K split cuBLAS takes for a configuration, where it follows a rule rather than the estimate.
using SplitRule = std::int64_t (*)(const hw::HardwareSpec&, const Problem&, const Config&);

// Picks the fastest candidate; within 3% of it, fewer splits, then larger tiles, then the
// larger tile dimension along N. Splits up to max_split are weighed, or for nvjet tiles only the
// one `split_rule` gives.
Choice choose(const hw::HardwareSpec& hw, const Problem& p, const std::vector<Config>& candidates,
              std::int64_t max_split, SplitRule split_rule = nullptr) {
  struct Scored {
    Choice c;
    double t;
  };
  std::vector<Scored> all;
  for (const auto& cfg : candidates) {
    const std::int64_t tiles = units_of(p, cfg, 1);
    // cuBLAS splits K only when the tiles alone leave SMs idle.
    const std::int64_t top = tiles < hw.sm_count ? max_split : 1;
    if (split_rule != nullptr && cfg.kind == GemmKind::kNvjet) {
      const std::int64_t s = split_rule(hw, p, cfg);
      all.push_back({Choice{cfg, s, 0}, estimate(hw, p, cfg, s)});
      continue;
    }
    for (std::int64_t s = 1; s <= top; ++s) {
      if (last_slice_empty(p, cfg, s)) continue;
      if (cfg.register_staged && s > 1 && p.K < s * kRegisterStagedMinSliceK) continue;
      all.push_back({Choice{cfg, s, 0}, estimate(hw, p, cfg, s)});
    }
  }
  if (all.empty()) throw ModelError("gemm: no kernel configuration fits this hardware");
  double best = std::numeric_limits<double>::infinity();
  for (const auto& s : all) best = std::min(best, s.t);
  const Scored* pick = nullptr;
  for (const auto& s : all) {
    if (s.t > best * 1.03) continue;
    if (pick == nullptr) {
      pick = &s;
      continue;
    }
    // The align1 kernels' time is a chain of K steps, the same for every tile: among near ties
    // cuBLAS takes the smallest (ops3_h100.csv: 64x64 for every align1 shape of one wave).
    const auto key = [](const Scored& x) {
      const std::int64_t area = x.c.cfg.tile_n * x.c.cfg.tile_m;
      return std::tuple(x.c.split, x.c.cfg.register_staged ? area : -area, -x.c.cfg.tile_n);
    };
    if (key(s) < key(*pick)) pick = &s;
  }
  Choice out = pick->c;
  out.est_seconds = pick->t;
  out.reduce = out.split > 1;
  return out;
}

std::vector<Config> hopper_candidates(const hw::HardwareSpec& hw, const Problem& p) {
  std::vector<Config> out;
  std::vector<std::int64_t> tms;
  std::vector<std::int64_t> tns;
  if (p.M <= 64) {
    // Skinny: the token dimension fits one tile (the measured 128x8, 128x16, 64x8, 64x16,
    // 512x16 kernels).
    tms = {p.M <= 8 ? 8 : p.M <= 16 ? 16 : p.M <= 32 ? 32 : 64};
    tns = {64, 128, 256, 512};
  } else {
    tms = {48, 64, 96, 128, 192, 256};
    tns = {64, 96, 128, 192, 256, 320};
  }
  for (const auto tn : tns) {
    for (const auto tm : tms) {
      if (tn * tm > 320 * 128) continue;  // accumulators of two consumer warpgroups
      if (auto c = hopper_config(hw, p.dtype, tn, tm)) out.push_back(*c);
    }
  }
  return out;
}

// cuBLAS's sm_90 tf32 kernels: the two-warpgroup 128x256 and 256x128 tiles for deep products
// with both sides of some size (sets 3-14, H100: K of 5040 to 14944, sides of 928 and more, 5
// rows; the hand-picked 2048^3 and 4096^3 in ops_h100.csv); else one consumer warpgroup over
// 64x64, 64x128, 128x128 or 64x256 tiles (23 rows of sets 3-14, 1136x528x9408 and
// 4576x320x7168 among them). The K bound was 4096 until the hand-picked 2048^3 row (held out)
// ran 71% slow with it. A miss: 3072^3 ran 128x128 (ops2_h100.csv).
constexpr std::int64_t kSm90Tf32TwoWarpgroupMinK = 2048;
constexpr std::int64_t kSm90Tf32TwoWarpgroupMinSide = 896;

std::vector<Config> tf32_sm90_candidates(const hw::HardwareSpec& hw, const Problem& p) {
  const bool two = p.K >= kSm90Tf32TwoWarpgroupMinK &&
                   std::min(p.M, p.N) >= kSm90Tf32TwoWarpgroupMinSide;
  using Tiles = std::vector<std::pair<std::int64_t, std::int64_t>>;  // (tile_m, tile_n)
  const Tiles tiles = two ? Tiles{{128, 256}, {256, 128}}
                          : Tiles{{64, 64}, {64, 128}, {128, 128}, {64, 256}};
  std::vector<Config> out;
  for (const auto& [tm, tn] : tiles) {
    if (auto c = hopper_config(hw, p.dtype, tn, tm)) {
      c->consumer_warpgroups = two ? 2 : 1;
      out.push_back(*c);
    }
  }
  return out;
}

std::vector<Config> mma_sync_candidates(const hw::HardwareSpec& hw, const Problem& p) {
  std::vector<Config> out;
  const std::int64_t align = operand_align(p);
  if (align == 1 && detail::elt_bytes(p.dtype) == 2) {
    // The sm_75-style kernels of single-element loads: 32-deep K steps, two stages (shared
    // memory 16, 24, 32 and 48 KiB for the measured 64x64, 128x64, 128x128, 256x128 tiles).
    // Registers as measured: 96, 168, 252 (128 threads) and 229 (256 threads). cuBLAS names a
    // tile N first: the 256x128 kernel's tiles span 256 columns and 128 rows (sets 3-16, H100:
    // 10360x1991x578 on 648 = 8 x 81 CTAs, 8976x1827x11243 on 568 x 3 split).
    const std::int64_t shapes1[][3] = {
        {64, 64, 96}, {128, 64, 168}, {128, 128, 252}, {256, 128, 229}};
    for (const auto& s : shapes1) {
      Config c;
      c.kind = GemmKind::kMmaSync;
      c.tile_n = s[0];
      c.tile_m = s[1];
      c.tile_k = 32;
      c.stages = 2;
      c.smem = c.stages * (c.tile_n + c.tile_m) * c.tile_k * static_cast<std::int64_t>(detail::elt_bytes(p.dtype));
      if (c.smem > hw.sm.shared_memory_per_cta) continue;
      c.threads = c.tile_n * c.tile_m >= 256 * 128 ? 256 : 128;
      c.regs = static_cast<int>(s[2]);
      c.align = 1;
      c.register_staged = true;
      c.k_step_round_trips = kAlign1StepRoundTrips;
      c.k_step_issue_cycles =
          kAlign1StepIssueCyclesPerElement * static_cast<double>((c.tile_m + c.tile_n) * c.tile_k);
      // No tensor maps, and the first loads wait in the K-step chain: the prologue's DRAM round
      // trips are that chain's (sets 3-13: one-step align1 kernels of a few CTAs take 2.8-3.1 us
      // on the H100; fitted with the step, then with the epilogue's stores below).
      c.prologue_saved_half_round_trips = kAlign1PrologueSavedHalfRoundTrips;
      c.epilogue_issue_cycles =
          kAlign1EpilogueIssueCyclesPerElement * static_cast<double>(c.tile_m * c.tile_n);
      c.epilogue_chain_cycles = kAlign1EpilogueStoreCycles *
                                static_cast<double>(c.tile_m * c.tile_n) /
                                static_cast<double>(c.threads);
      out.push_back(c);
    }
    return out;
  }
  const std::int64_t shapes[][2] = {{256, 128}, {128, 256}, {128, 128}, {128, 64},
                                    {64, 128},  {64, 64},   {128, 32},  {64, 32}};
  for (const auto& s : shapes) {
    // On sm_90 cuBLAS runs no 32-row cutlass_80 tile, whatever M (sets 3-17, H100: the 16-bit
    // and tf32 products of 32 rows or fewer ran 64x64, 128x64 and 256x64 tiles, 136 launches).
    // Elsewhere (not measured) skinny products (M <= 32) take the 32-row tiles, others the 64-
    // and 128-row ones (small warp tiles run mma.sync below its rate, which the estimate does
    // not see).
    if (detail::is_hopper(hw) ? s[1] == 32 : (p.M <= 32) != (s[1] == 32)) continue;
    if (auto c = mma_sync_config(hw, p.dtype, s[0], s[1])) {
      c->align = align;
      if (detail::elt_bytes(p.dtype) == 2) {
        // Its threads store the tile `align` elements at a time, one store after another.
        c->epilogue_chain_cycles = kCpAsyncEpilogueStoreCycles *
                                   static_cast<double>(c->tile_m * c->tile_n) /
                                   static_cast<double>(align * c->threads);
      }
      if (align == 1 && p.dtype == hw::DType::kTf32 && hw.throughput.mma_sync_share < 1.0) {
        // sm_90's tf32 align1 kernels: 128-byte-deep K steps, three stages ("_32x3"), chained.
        c->tile_k = 32;
        c->stages = 3;
        c->smem = c->stages * (c->tile_n + c->tile_m) * c->tile_k * 4;
        if (c->smem > hw.sm.shared_memory_per_cta) continue;
        c->k_step_round_trips = kTf32Align1StepRoundTrips;
      }
      out.push_back(*c);
    }
  }
  return out;
}

// The mma.sync candidate of tile_n x tile_m for this product, if the kernels have one.
std::optional<Config> mma_sync_tile(const hw::HardwareSpec& hw, const Problem& p,
                                    std::int64_t tile_n, std::int64_t tile_m) {
  for (const Config& c : mma_sync_candidates(hw, p)) {
    if (c.tile_n == tile_n && c.tile_m == tile_m) return c;
  }
  return std::nullopt;
}

// CUTLASS's SIMT kernels' first loads wait in their K-step chain (simt_k_step_path), so their
// prologue waits one DRAM round trip fewer, as sm80_xmma's 32x32 tile and nvjet's do: one-step
// launches of the 64x64 kernel (K slices of 2-4) take 2.5-2.8 us whatever their CTAs (1-104),
// gpusim had 2.9-3.7 (sets 3-30, H100: 79 launches whose grid it matched, 10-30% slow). 0-3 half
// round trips tried with steps of 0.7-1.0 round trips: one round trip with the step as it was best
// (sets 3-30 7.775 -> 7.737% H100, 8.584 -> 8.515% H200; the 64x64 kernel's rows 8.2 -> 7.1%,
// 10.4 -> 7.8%). Issue 16's eighteenth round.
constexpr std::int64_t kCutlassSimtPrologueSavedHalfRoundTrips = 2;

// CUTLASS's SIMT kernels as cuBLAS names them, cutlass_80_simt_sgemm_<N tile>x<M tile>_8x<stages>:
// the N tile runs along the output's columns (4144x1904x832 fp32: 264 CTAs of 256x128 = 33 x 8
// tiles of 128 rows and 256 columns). Threads, registers and shared memory as measured (ops_h100.csv,
// ops3-6_h100.csv).
Config cutlass_simt(std::int64_t tile_n, std::int64_t tile_m, std::int64_t stages, int threads, int regs,
                    std::int64_t smem) {
  Config c;
  c.kind = GemmKind::kSimtSingle;
  c.tile_k = 8;
  c.persistent = false;
  c.tile_n = tile_n;
  c.tile_m = tile_m;
  c.stages = stages;
  c.threads = threads;
  c.regs = regs;
  c.smem = smem;
  c.ffma_share = kFfmaShareCutlass;
  c.prologue_saved_half_round_trips = kCutlassSimtPrologueSavedHalfRoundTrips;
  return c;
}

Config cutlass_simt_256x128() { return cutlass_simt(256, 128, 4, 256, 202, 49152); }
Config cutlass_simt_64x64() { return cutlass_simt(64, 64, 5, 128, 76, 20480); }
// The 128x64 split-K variant of shallow products (kSimtSplitVariantWideMinRowTiles), its
// prologue waited in full.
Config cutlass_simt_128x64() {
  Config c = cutlass_simt(128, 64, 5, 128, 120, 30720);
  c.prologue_saved_half_round_trips = 0;
  return c;
}

// One of cuBLAS's sm80_xmma SIMT kernels as measured: its tile, threads, registers and shared
// memory.
struct SimtTile {
  std::int64_t m, n;
  int threads, regs;
  std::int64_t smem;
};

// The 32x32 tile of 64 threads steps in 0.7 DRAM latencies, not one: over its 127 single-kernel
// launches of sets 3-28 (H100, fp32 and tf32) time grows 0.26 us an 8-deep step (2.6 us + 0.033 us
// a unit of K for 14-36 CTAs: 432x32x160 in 7.4 us, 192x192x208 in 9.4), where one latency a step
// had them 20-30% slow at every depth (19.5% MAPE; 0.6-0.8 tried, 0.65-0.7 best at 8.8%). The
// larger tiles' rows did no better below one latency.
// Its first loads wait in that chain too, so its prologue waits one DRAM round trip fewer, as
// nvjet's (one-wave launches of K = 16 took 2.9-3.1 us, gpusim 3.5-3.7; 0-4 half round trips
// tried with the step: 2 best, those launches 10.9 -> 9.6%, sets 3-28 8.131 -> 8.104% H100,
// 8.958 -> 8.948% H200).
constexpr std::int64_t kSm80XmmaSmallTile = 32;
constexpr double kSm80XmmaSmallStepRoundTrips = 0.7;
constexpr std::int64_t kSm80XmmaSmallPrologueSavedHalfRoundTrips = 2;

// cuBLAS's sm80_xmma SIMT kernels (sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma): 3 stages; their
// FFMA share follows the outputs a thread holds (simt_ffma_share).
Config sm80_xmma_simt(const SimtTile& t) {
  Config c;
  c.kind = GemmKind::kSimtBatched;
  c.tile_k = 8;
  c.persistent = false;
  c.tile_m = t.m;
  c.tile_n = t.n;
  c.stages = 3;
  c.threads = t.threads;
  c.regs = t.regs;
  c.smem = t.smem;
  if (t.m == kSm80XmmaSmallTile && t.n == kSm80XmmaSmallTile) {
    c.simt_step_round_trips = kSm80XmmaSmallStepRoundTrips;
    c.prologue_saved_half_round_trips = kSm80XmmaSmallPrologueSavedHalfRoundTrips;
  }
  return c;
}

// fp32 with TF32 off: cuBLAS's SIMT kernels (measured on H100, assumed the same elsewhere).
Config simt_config(const hw::HardwareSpec& hw, const Problem& p, bool b_transposed) {
  if (p.batch == 1 && p.M >= 256 && p.N >= 128) return cutlass_simt_256x128();
  // Batched: sm80_xmma_gemm_f32..._ffma (naive attention's two bmm on H100). Per layout cuBLAS
  // had two tiles: "tn" (q @ k^T) 128x128 or 64x64, "nn" (p @ v) 128x64 or 64x64; it took the
  // larger where that still gave at least 8 CTAs per SM (S = 512: 768 CTAs of 128x128 -> 64x64;
  // S = 1024: 8192 -> 128x128; p @ v at S = 1024: 1024 CTAs of 128x64 -> 64x64; S = 4096: 3072
  // -> 128x64).
  const SimtTile tn[] = {{128, 128, 128, 255, 33792}, {64, 64, 128, 128, 13056}};
  const SimtTile nn[] = {{128, 64, 128, 224, 18816}, {64, 64, 128, 121, 12672}};
  Config c;
  for (const auto& t : b_transposed ? tn : nn) {
    c = sm80_xmma_simt(t);
    c.ffma_share = kFfmaShareAt32Outputs;  // as naive attention's calibration GEMMs ran, either tile
    if (units_of(p, c, 1) >= 8LL * hw.sm_count) break;
  }
  return c;
}

constexpr SimtTile kSm80XmmaSimtTiles[] = {{32, 32, 64, 80, 6528},
                                           {64, 32, 64, 121, 9600},
                                           {32, 64, 64, 102, 9600},
                                           {128, 32, 128, 118, 15744}};

// sm80_xmma's 128x128 tile ran only deep products (sets 3-13: K of 3296 to 15885); 512^3 ran
// 64x64 split 4.
constexpr std::int64_t kSimtSquareTileMinK = 2048;
// Shallower products never ran the 256x128 tile, however large (sets 3-13: 3969x10157x43,
// 5469x12672x39, 3744x5664x16 on sm80_xmma's 64x64; 992x3776x48 the one exception).
constexpr std::int64_t kSimtWideTileMinK = 64;

// Shallow products (K below kSimtWideTileMinK) of few tiles run CUTLASS's 64x64 SIMT kernel in its
// split-K variant: fp32 partials in slices of about 4 (at most 4 of them) and splitKreduce_kernel,
// even unsplit (sets
// 3-13, H100: 35 of the 47 products of K < 64 and fewer than 64 such tiles; 80x16x16 ran 2 x 4
// CTAs and the reduce in 4.1 us, 19x398x2 one slice and the reduce). The others ran the 128x64
// and 128x32 variants the same way, or sm80_xmma's 32x32 tile.
constexpr std::int64_t kSimtSplitVariantMaxTiles = 63;
constexpr std::int64_t kSimtSplitVariantSliceK = 4;
constexpr std::int64_t kSimtSplitVariantMaxSplit = 4;
// Up to K = 24 every slice holds 4 (19 and 21 in 5 and 6; 4 at most had run them 13-25% fast),
// and K = 32 is not split at all, though the reduce still runs (sets 3-33, H100: all 12 products
// of K = 32 on one slice of the 64x64 and 128x64 variants; the split of 4 had run them 11-18%
// fast). No product of K = 25-31 was measured. Issue 16's nineteenth round.
constexpr std::int64_t kSimtSplitVariantFullSlicesMaxK = 24;
constexpr std::int64_t kSimtSplitVariantUnsplitMaxK = 32;
// Products of at least three 64-row tiles and at least two 128-column ones (or exactly three
// 64-row tiles), at most 40 tiles of 64x64, run the 128x64 variant (64 rows by 128 columns a
// tile, 128 threads of 64 outputs, 120 registers, 30 KiB): sets 3-33, H100, 20 of the 22 such
// products of K < 64 (144x16x16 to 880x112x16 and 448x256x16 on 3-28 tiles; 192x13x12 ran the
// 64x64 one, 189x4x9 the 128x32 one), where gpusim had run the 64x64 variant 5-33% fast. Its
// prologue waits in full, without the round trip the other CUTLASS SIMT kernels save
// (kCutlassSimtPrologueSavedHalfRoundTrips): one-wave launches take 3.2-3.6 us at K = 2-16
// against the 64x64 variant's 2.6-2.7 (cutlass_simt_128x64). Issue 16's nineteenth round.
constexpr std::int64_t kSimtSplitVariantWideMinRowTiles = 3;
constexpr std::int64_t kSimtSplitVariantWideMinColTiles = 2;
constexpr std::int64_t kSimtSplitVariantWideMaxTiles = 40;

// Of those, long thin products (more than 26 such tiles, more than 32 rows and columns, one side
// at least 10 times the other) ran sm80_xmma's unsplit 32x32 tile instead (sets 3-22, H100: 7 of
// 8, 96x1040x32 to 3593x62x5, 2.7-3.5 us; 144x1120x32 ran it too, 125x1273x2 the 128x64 variant:
// misses). Squarer ones ran the 128x64 variant or sm80_xmma's 64x64 split 5-6 ways (880x112x16,
// 825x193x16: 5.5-6.7 us). Issue 16's fourteenth round.
constexpr std::int64_t kSimtSplitVariantNarrowMaxDim = 32;
constexpr std::int64_t kSimtSplitVariantXmmaMinTiles = 26;
constexpr std::int64_t kSimtSplitVariantXmmaMinAspect = 10;

std::optional<Choice> shallow_simt_choice(const Problem& p) {
  const Config c64 = cutlass_simt_64x64();
  const std::int64_t tiles = units_of(p, c64, 1);
  if (p.K < 2 || p.K >= kSimtWideTileMinK || tiles > kSimtSplitVariantMaxTiles) return std::nullopt;
  const std::int64_t narrow = std::min(p.M, p.N);
  if (narrow > kSimtSplitVariantNarrowMaxDim && tiles > kSimtSplitVariantXmmaMinTiles &&
      std::max(p.M, p.N) >= kSimtSplitVariantXmmaMinAspect * narrow) {
    return Choice{sm80_xmma_simt(kSm80XmmaSimtTiles[0]), 1, 0};  // the 32x32 tile
  }
  const std::int64_t split =
      p.K <= kSimtSplitVariantFullSlicesMaxK ? ceil_div(p.K, kSimtSplitVariantSliceK)
      : p.K <= kSimtSplitVariantUnsplitMaxK
          ? 1
          : std::min(kSimtSplitVariantMaxSplit, ceil_div(p.K, kSimtSplitVariantSliceK));
  const std::int64_t row_tiles = ceil_div(p.M, c64.tile_m);
  const std::int64_t col_tiles = ceil_div(p.N, 2 * c64.tile_n);
  if (row_tiles >= kSimtSplitVariantWideMinRowTiles && tiles <= kSimtSplitVariantWideMaxTiles &&
      (col_tiles >= kSimtSplitVariantWideMinColTiles ||
       row_tiles == kSimtSplitVariantWideMinRowTiles)) {
    return reduced_split(cutlass_simt_128x64(), split);
  }
  return reduced_split(c64, split);
}

// cuBLAS splits an sm80_xmma SIMT product at most 33 ways (sets 3-19, H100: 5 to 12 tiles of
// 64x32 over K = 3104-9136 all took 33, none more). It splits fewer of them than the estimate
// does (K = 291 its shallowest split; 192x192x208 and 1215x27x195 unsplit on 36-38 tiles of
// 32x32), but holding the estimate to that (K >= 256, fewer tiles than SMs) fit worse: all rows
// of sets 3-19 8.650% with it, 8.625% without (H100), 9.805 and 9.794% (H200). The tiles cuBLAS
// split instead (64x128, 128x64) are not offered. Issue 16's thirteenth round.
constexpr std::int64_t kXmmaSimtMaxSplit = 33;

// What a split adds to an sm80_xmma SIMT product: its own reduce (xmma_splitk_chain_seconds).
double xmma_split_cost_seconds(const hw::HardwareSpec& hw, const Problem& p, const Config& c,
                               std::int64_t split) {
  return split_cost_seconds(
      hw, p, split,
      xmma_splitk_chain_seconds(hw, c, split) +
          static_cast<double>(kXmmaSplitKFixedRoundTrips) * hw.dram.latency.seconds());
}

// A single fp32 GEMM (and the tf32 products that run the SIMT kernels): outer products and tf32
// take the 128x32 kernel unsplit, shallow products of few tiles the 64x64 split-K variant (above);
// the rest choose among CUTLASS's 256x128 tile (K >= 64), sm80_xmma's 64x64 and 128x128 (K >=
// 2048) tiles and, for at most 32 rows, CUTLASS's 128x32, split along K (1 to 4, many more for
// the small tiles over few tiles) to fill the GPU. The choice minimizes waves x one CTA's SIMT
// time, with each tile's occupancy and FFMA share (see tile_launch); it reproduces the
// calibration set's choices (512^3: 64x64 split 4, 1536^3: 64x64 split 3, 2048^3 and
// 4096x1024x1024: 256x128, 3072^3: 256x128 split 4; validation/data/ops_h100.csv, ops2_h100.csv).
// fp32 products of K 100-240 over at most 140 tiles of 32x32, at least 24 rows and columns and
// 12,288 outputs run the 32x32 sm80_xmma tile unsplit (sets 3-29, H100: all 15, 80x240x128,
// 432x32x160, 192x192x208, 1215x27x195, 32x3040x128); fewer outputs split K on cutlass's tiles
// (16x16x160, 48x16x144, 500x2x103, 112x96x160) and products of few rows ran gemmSN (4x3325x189).
// The estimate had split those 15 on cutlass's 64x64 tile through cuBLASLt's reduce (21-33% fast).
constexpr std::int64_t kXmmaSmallUnsplitMinK = 100;
constexpr std::int64_t kXmmaSmallUnsplitMaxK = 240;
constexpr std::int64_t kXmmaSmallUnsplitMinSide = 24;
constexpr double kXmmaSmallUnsplitMinOutputs = 12288.0;
constexpr std::int64_t kXmmaSmallUnsplitMaxTiles = 140;

// Tall matmuls of 2-11 columns run CUTLASS's 128x32 kernel along their rows (32-row tiles, the
// 128 columns mostly idle), K split in slices of 4 up to 16 of them, through the reduce (sets
// 3-30, H100: 25 of the 26 of 150-3,122 rows on at most 98 tiles and K = 8-3,869: 189x4x9 in 3
// slices, 2963x6x21 in 6, 500x2x103 in 13, 3097x5x918 in 14, 2194x4x3869 in 17; their slices 9-31
// above K = 60, 16 the nearest single count; 1514x3x3717 ran sm80_xmma's 32x32); deeper ones
// (1950x4x14862, 833x6x14822) and taller ones (5021x6x5443, 7013x5x1354) ran sm80_xmma tiles, 12
// columns and more the 64x64 kernel. gpusim had run them on the 64x64 or sm80_xmma tiles, 30-67%
// fast. Issue 16's eighteenth round.
constexpr std::int64_t kTallSimtMaxColumns = 11;
constexpr std::int64_t kTallSimtMinRows = 150;
constexpr std::int64_t kTallSimtMaxTiles = 100;
constexpr std::int64_t kTallSimtMinK = 8;
constexpr std::int64_t kTallSimtMaxK = 4096;
constexpr std::int64_t kTallSimtSliceK = 4;
constexpr std::int64_t kTallSimtMaxSplit = 16;
// CUTLASS's 128x32 SIMT tile (128 threads, 32 outputs a thread) issues FFMA a smaller share of
// its time than the 256x128 tile's 0.77 (sm80_xmma's tiles measure 0.56 at 32 outputs a thread):
// with the rule above its rows still ran 41-43% fast, and its few-row rows (16x1696x13360,
// 16x720x15984) 18-33%. 0.25-0.77 tried on its 150 rows of sets 3-30: 0.4 best (H100 15.5 ->
// 12.5%, H200 19.0 -> 14.6%; all rows 7.812 -> 7.775%, 8.646 -> 8.584% with the rule).
constexpr double kFfmaShareCutlass128x32 = 0.4;

// cuBLAS's K split of an fp32 product on one tile of CUTLASS's 64x64 SIMT kernel (K >= 64; issue
// 16's twenty-second round, sets 3-39, both GPUs alike: 197 of 217 launches, where the estimate's
// choice had matched 18). The split is ceil(K / slice) with the smallest slice, a multiple of 32
// when K is one and of 4 otherwise, that keeps it at kOneTileSplitCap slices or fewer up to K =
// kOneTileDeepK (16x16x1,024 -> 32, 4x5x172 -> 22, 2x18x2,240 -> 35) and kOneTileDeepSplitCap
// from there (9x5x4,074 -> 128, 16x16x4,928 -> 77); products of more than 256 outputs on
// 4-multiple slices keep them at least kOneTileWideMinSlice deep (35x51x7,250 -> 107, 16x32x5,424
// -> 80); those of more than 16 rows split that way at every depth, but only 4 ways up to K =
// kOneTileTallShallowMaxK (48x16x352, 34x3x554; the estimate had split them 9-24 ways, 20-40%
// fast). Missed: 3 ways at K = 96 and 160, and the 64-row products (64x16x1,936 -> 16).
constexpr std::int64_t kOneTileSplitCap = 36;
constexpr std::int64_t kOneTileDeepSplitCap = 132;
constexpr std::int64_t kOneTileDeepK = 4000;
constexpr std::int64_t kOneTileWideMinSlice = 68;
constexpr double kOneTileWideMinOutputs = 256;
constexpr std::int64_t kOneTileTallRows = 16;
constexpr std::int64_t kOneTileTallShallowMaxK = 600;
constexpr std::int64_t kOneTileTallShallowSplit = 4;
// Each slice's CTA runs alone on its SM, its next stages' loads in flight while it computes: an
// 8-deep K step waits about 0.8 of a DRAM round trip (0.33 us a step on the H100 and the H200
// alike, least squares over those launches' main kernels; 0.7-1.0 tried, 0.8 best: their rows
// 6.2 -> 4.0% (H100), all rows of sets 3-39 7.709 -> 7.691% and 8.470 -> 8.450% (H200)).
constexpr double kOneTileStepRoundTrips = 0.8;

// The slices cuBLAS cuts K into where it keeps them whole multiples of `step` deep, at least
// `min_slice`, and as thin as `max_slices` slices allow.
std::int64_t capped_slices(std::int64_t K, std::int64_t step, std::int64_t max_slices,
                           std::int64_t min_slice = 0) {
  return ceil_div(K, round_up(std::max(min_slice, ceil_div(K, max_slices)), step));
}

std::int64_t one_tile_simt_split(const Problem& p) {
  if (p.M > kOneTileTallRows && p.K <= kOneTileTallShallowMaxK) return kOneTileTallShallowSplit;
  const std::int64_t unit = p.K % 32 == 0 ? 32 : 4;
  const bool deep = p.M > kOneTileTallRows || p.K >= kOneTileDeepK;
  const std::int64_t cap = deep ? kOneTileDeepSplitCap : kOneTileSplitCap;
  const bool wide =
      unit == 4 && static_cast<double>(p.M) * static_cast<double>(p.N) > kOneTileWideMinOutputs;
  return capped_slices(p.K, unit, cap, deep && wide ? kOneTileWideMinSlice : 0);
}

Choice choose_simt(const hw::HardwareSpec& hw, const Problem& p, bool b_transposed) {
  // cutlass_80_simt_sgemm_128x32_8x5 for few rows (ops3_h100.csv: M of 16-21, split 47-66), and
  // unsplit for every outer product and the tf32 products sent here (sets 3-13: all 7 fp32 and
  // 11 tf32 products of K = 1, 5x473 to 10573x4222; tf32 192x9463x14, 462x16278x3).
  Config skinny = cutlass_simt(128, 32, 5, 128, 80, 25600);
  skinny.ffma_share = kFfmaShareCutlass128x32;
  if (p.K == 1 || p.dtype == hw::DType::kTf32) return Choice{skinny, 1, 0};
  if (!b_transposed && p.batch == 1 && p.N >= 2 && p.N <= kTallSimtMaxColumns &&
      p.M >= kTallSimtMinRows && units_of(p, skinny, 1) <= kTallSimtMaxTiles &&
      p.K >= kTallSimtMinK && p.K <= kTallSimtMaxK) {
    return reduced_split(skinny, std::min(kTallSimtMaxSplit, ceil_div(p.K, kTallSimtSliceK)));
  }
  if (auto v = shallow_simt_choice(p)) return *v;
  if (p.K >= kXmmaSmallUnsplitMinK && p.K <= kXmmaSmallUnsplitMaxK &&
      std::min(p.M, p.N) >= kXmmaSmallUnsplitMinSide &&
      static_cast<double>(p.M) * static_cast<double>(p.N) >= kXmmaSmallUnsplitMinOutputs) {
    const Config small32 = sm80_xmma_simt(kSm80XmmaSimtTiles[0]);
    if (units_of(p, small32, 1) <= kXmmaSmallUnsplitMaxTiles) return Choice{small32, 1, 0};
  }
  const Config big = cutlass_simt_256x128();
  const Config small = sm80_xmma_simt(b_transposed ? SimtTile{64, 64, 128, 128, 13056}
                                                  : SimtTile{64, 64, 128, 121, 12672});
  Choice best{big, 1, std::numeric_limits<double>::infinity()};
  // A CTA's fixed cost (prologue and epilogue, as base_work charges it) makes splitting K pay
  // only while the slices are long; the split partials go out and back through L2 and the
  // reduce is one more kernel. cuBLAS splits skinny shapes with long K many ways (up to
  // 132 slices of 80 for 16x3x10508: ops3_h100.csv).
  const double cta_fixed = base_work(hw, p.dtype).fixed.seconds();
  // sm80_xmma's 128x128 tile (128 threads, 254 registers, 33 KiB: 4320x336x4240 split 7,
  // 1856x1312x5248 split 6 in sets 3-13).
  const Config square = sm80_xmma_simt({128, 128, 128, 254, 33792});
  std::vector<Config> tiles{small};
  // sm80_xmma's narrow tiles, as measured (name tilesize<M>x<N>; threads, registers, shared
  // memory from sets 3-14): 32x32 ran 44 of the 129 sm80_xmma rows, 64x32 13, 128x32 14, 32x64
  // 7. Issue 16's tenth round: offering them to the choice took the fp32 SIMT rows 14.6 -> 13.9%
  // (H100 sets 3-14) and 16.1 -> 15.3% (H200 sets 3-13). The oblong 128x64 and 64x128 tiles (6
  // and 8 rows) gained as much there but put cs336's fp32 forwards 3-5% fast: their FFMA share
  // is interpolated, not measured, so the choice is not offered them.
  for (const auto& t : kSm80XmmaSimtTiles) tiles.push_back(sm80_xmma_simt(t));
  // CUTLASS's 64x64 kernel, split through cuBLASLt's reduce, for products of few tiles: 146 of its
  // 161 launches in sets 3-19 (H100) were split, up to 107 ways (35x51x7250), 141 of them over
  // fewer than 33 tiles; the rest are the split-K variant above.
  const Config split_only = cutlass_simt_64x64();
  const auto is_split_only = [&](const Config& c) {
    return c.kind == split_only.kind && c.tile_m == split_only.tile_m &&
           c.tile_n == split_only.tile_n;
  };
  tiles.push_back(split_only);
  if (p.K >= kSimtWideTileMinK) tiles.push_back(big);
  if (p.K >= kSimtSquareTileMinK) tiles.push_back(square);
  if (p.M <= 32) tiles.push_back(skinny);
  for (const Config& c : tiles) {
    const double efficiency = simt_ffma_share(c);
    const int occ = ctas_per_sm(hw, c);
    const double full_rate = hw.throughput.fp32 * hw.clocks.sustained_other_hz * efficiency;
    // Up to 4 slices, as the square calibration shapes chose; many more only for the small
    // tiles, when they alone would fill less than a quarter of the SMs.
    const bool few_tiles = c.tile_m * c.tile_n < 256 * 128 && units_of(p, c, 1) * 4 < hw.sm_count;
    const std::int64_t max_split =
        few_tiles ? std::min<std::int64_t>(256, std::max<std::int64_t>(1, p.K / 16)) : 4;
    const double fixed = few_tiles ? cta_fixed : 0.0;
    const bool xmma = c.kind == GemmKind::kSimtBatched;
    for (std::int64_t split = 1; split <= max_split; ++split) {
      if (last_slice_empty(p, c, split)) continue;
      if (xmma && split > kXmmaSimtMaxSplit) break;
      if (is_split_only(c) && (split == 1 || !few_tiles)) continue;
      const double ctas = static_cast<double>(units_of(p, c, split));
      const double waves = std::ceil(ctas / (static_cast<double>(hw.sm_count) * occ));
      // The CTAs an SM actually holds share its FP32 pipes: a launch of few CTAs leaves each
      // more than 1 / occupancy of them. (Issue 16's eleventh round: charging every CTA 1 /
      // occupancy made unsplit launches of a few CTAs an SM look slow, and the choice split K
      // where cuBLAS does not: 11909x16x875 on 373 CTAs of the 32x32 tile, simulated split 4
      // ways at 27 us against 48 measured. The fp32 SIMT rows of sets 3-16: 14.0 -> 12.8%
      // (H100), 15.7 -> 14.6% (H200). The tensor-core estimate did no better for it.)
      const double rate = full_rate / ctas_sharing_an_sm(hw, occ, ctas);
      const double kk = static_cast<double>(k_per_split(p, c, split));
      const double t =
          waves * (fixed + std::max(2.0 * static_cast<double>(c.tile_m * c.tile_n) * kk / rate,
                                    simt_k_step_path(hw, kk, c))) +
          (reduces_in_own_kernel(c) ? xmma_split_cost_seconds(hw, p, c, split)
                                    : split_cost_seconds(hw, p, split));
      if (t < best.est_seconds * 0.97) best = Choice{c, split, t, split > 1};
    }
  }
  // fp32 products the estimate puts on one 64x64 tile split K as cuBLAS does (above).
  if (is_split_only(best.cfg) && units_of(p, split_only, 1) == 1 && p.batch == 1 &&
      p.K >= kSimtWideTileMinK && p.dtype == hw::DType::kFp32) {
    Config lone = split_only;
    lone.simt_step_round_trips = kOneTileStepRoundTrips;
    return reduced_split(lone, one_tile_simt_split(p));
  }
  return best;
}

}  // namespace

// cuBLAS's small-M kernel (gemmSN) on sm_90, for 2..16 rows: fp32 products at least 256
// columns wide, and 16-bit products whose rows allow only single-element loads (ops3_h100.csv;
// GPT-2's 50257-wide lm_head in hf_models_h100.json.gz). Each thread keeps a few bytes of loads
// in flight (gemm_model.cpp): the kernels stream 0.5-1.4 TB/s. The launch shapes as measured
// (sets 3-16, H100; the kernels' template arguments give the rows per CTA and the K groups):
//  * columns per CTA: 64 for NN, 8 for TN (F.linear);
//  * grid y splits the rows: NN 1 CTA up to 5 rows, 2 up to 14, 4 above (2 x 7 rows for 14,
//    4 x 4 for 16); TN one group of 2, 4, 6, 8, 10 or 14 rows, two of 6 for 11-12 rows and two
//    of 8 for 15-16 (sets 3-40: 10x10x7 and 13x25x1184 on one, 11x5x13 and 15x3x2 on two);
//  * threads: the 16-bit NN kernel 256 (98 of 103 launches; fp16 128 when wide, below); fp32 NN
//    256 from 3,072 columns or K = 128 (16x6016x32, 14x5165x144), else 128 (10x2101x4,
//    16x1456x64); TN 128;
//  * K groups (threads walking K side by side): threads / 64 for NN, 16 for TN.
// fp16's wide, shallow NN products run the 128-thread instance (sets 3-40: 2x13817x26, 2x3585x14,
// 3x5149x25, 4x2228x21, 4x6757x19 and four more; 6x4439x136 the 256-thread one; bf16's ran 256).
constexpr std::int64_t kGemmsnFp16WideMinN = 2048;
constexpr std::int64_t kGemmsnFp16WideMaxK = 32;

GemmsnShape gemmsn_shape(const Problem& p, bool linear) {
  GemmsnShape g;
  if (linear) {
    g.cols = 8;
    g.row_groups = (p.M == 11 || p.M == 12 || p.M >= 15) ? 2 : 1;
    const std::int64_t share = ceil_div(p.M, g.row_groups);
    g.rows = share <= 10 ? share + share % 2 : 14;
    g.threads = 128;
    g.k_groups = 16;
    return g;
  }
  g.cols = 64;
  g.row_groups = p.M <= 5 ? 1 : (p.M <= 14 ? 2 : 4);
  g.vector_loads = p.dtype != hw::DType::kFp32 && two_or_four_element_rows(p);
  if (p.dtype == hw::DType::kFp32) {
    g.threads = p.N >= 3072 || p.K >= 128 ? 256 : 128;
  } else {
    g.threads =
        p.dtype == hw::DType::kFp16 && p.N >= kGemmsnFp16WideMinN && p.K <= kGemmsnFp16WideMaxK
            ? 128
            : 256;
  }
  g.k_groups = g.threads / 64;
  return g;
}

namespace {

// K up to which gemmSN runs however few CTAs it has; deeper products need its grid to fill half
// the SMs, else cuBLAS splits K over a tiled kernel instead (16x1008x3136 fp32, 12x19x5802 bf16,
// 6x25x1360 tf32: 16, 2 and 2 gemmSN CTAs, run as 14- to 242-way split-K in ops4_h100.csv.gz, seen
// at the first evaluation of that set).
constexpr std::int64_t kGemmsnAnyGridMaxK = 128;
constexpr std::int64_t kGemmsnNarrowFp32MaxK = 96;
constexpr std::int64_t kGemmsnDeepFp32MinN = 4096;
constexpr std::int64_t kGemmsn16BitAnyGridMaxK = 512;
constexpr std::int64_t kGemmsnFp16MaxK = 352;
constexpr std::int64_t kGemmsn16BitDeepMaxRows = 13;
constexpr std::int64_t kGemmsn16BitWideMinN = 4096;
constexpr std::int64_t kGemmsn16BitWideMaxK = 4096;
constexpr std::int64_t kGemmsnTnShallowMaxN = 16;
constexpr std::int64_t kGemmsnTnShallowWideMaxN = 64;
constexpr std::int64_t kGemmsnTnShallowWideMinRows = 6;

// Deep 16-bit F.linear (TN) narrower than K / 2 still runs gemmSN in two windows (issue 16's
// twenty-third round, sets 3-40, every shape alike on both chips):
//  * the 2- and 4-row instances with at least 12 CTAs whose weights stay under 1.5 M elements
//    (2x109x6072, 2x620x1693, 3x156x2707, 4x95x1528, 4x101x255 ran gemmSN; 3x59x9591 on 8 CTAs,
//    2x433x6085 and 4x819x2776 of 2.6 and 2.3 M elements cutlass_75's split-K);
//  * 6 rows or more on at most 8 CTAs up to K = 4,500 (6x6x2899, 7x28x4411, 7x63x3472, 11x7x754,
//    13x25x1184, 14x43x1064 ran gemmSN; 14x21x7414, and 8x111x241 and 11x196x1129 on 14 and 50
//    CTAs, the tiled kernels).
// Misses: 5 rows ran the tiled kernels on few CTAs (5x42x4011, 5x31x10305), and 8x8x819 cutlass_75
// unsplit on one CTA (22.5 us; gemmSN's chain gives 11, split-K 6).
constexpr std::int64_t kGemmsnTnFewRowsMax = 4;
constexpr std::int64_t kGemmsnTnFewRowsMinCtas = 12;
constexpr std::int64_t kGemmsnTnFewRowsMaxWeights = 1'500'000;
constexpr std::int64_t kGemmsnTnManyRowsMin = 6;
constexpr std::int64_t kGemmsnTnManyRowsMaxCtas = 8;
constexpr std::int64_t kGemmsnTnManyRowsMaxK = 4500;

bool few_cta_gemmsn_tn(const Problem& p, const GemmsnShape& g) {
  const std::int64_t ctas = ceil_div(p.N, g.cols) * g.row_groups;
  if (p.M <= kGemmsnTnFewRowsMax) {
    return ctas >= kGemmsnTnFewRowsMinCtas && p.N * p.K <= kGemmsnTnFewRowsMaxWeights;
  }
  return p.M >= kGemmsnTnManyRowsMin && ctas <= kGemmsnTnManyRowsMaxCtas &&
         p.K <= kGemmsnTnManyRowsMaxK;
}

// bf16 matmuls (NN) of 2-5 rows whose rows allow 2- or 4-element loads, within 2^21
// multiply-adds: cuBLAS runs them unsplit on one kernel however deep K (the few-row probe,
// small_gemm_h200.json.gz, 200 launches of 2-6 rows, N 4-402, K 412-9468, and sets 3-41: 2-3
// rows the wmma 32x32 kernel, 4-5 rows gemmSN, on 1-8 CTAs: 2x12x9468 in 150 us, 4x100x4012 in
// 69; beyond 2^21, 2x172x9468, 3x402x2002 and 5x228x2002, split K). gpusim had split them,
// 60-95% fast. 4-5 rows of K above 8,192 ran cutlass_80's serial split instead (4x4x9468; 5x26x6232
// ran gemmSN), fp16's the wmma kernel (5x2x1636, 5x122x170).
constexpr double kFewRowUnsplitMaxWork = 2097152.0;  // M x N x K
constexpr std::int64_t kFewRowWmmaMaxRows = 3;
constexpr std::int64_t kFewRowGemmsnMaxRows = 5;
constexpr std::int64_t kFewRowGemmsnMaxK = 8192;

bool few_row_unsplit(const Problem& p, bool linear) {
  return !linear && p.dtype == hw::DType::kBf16 && p.batch == 1 && p.M >= 2 &&
         p.M <= kFewRowGemmsnMaxRows && two_or_four_element_rows(p) &&
         static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K) <=
             kFewRowUnsplitMaxWork;
}

bool uses_gemmsn(const hw::HardwareSpec& hw, const Problem& p, bool linear) {
  // Not tf32: its few-row products ran sm80_xmma's 32x32x64 kernel or split-K (sets 3-5:
  // 13x64x55, 10x909x38, 6x2327x17; 5x9x10154 split 58).
  if (!detail::is_hopper(hw) || p.batch != 1 || p.M < 2 || p.M > 16 || p.dtype == hw::DType::kTf32) return false;
  // Not outer products (K = 1): every dtype ran the tiled kernels (sets 3-13: 5x3x1, 3x13698x1,
  // 16x7378x1 bf16, 2x4449x1 fp16 on cutlass_75 64x64; 5x473x1 fp32 on the SIMT kernel).
  if (p.K == 1) return false;
  if (few_row_unsplit(p, linear) && p.M > kFewRowWmmaMaxRows) return p.K <= kFewRowGemmsnMaxK;
  // fp32: wide products, or narrow ones of short K (sets 3-13: 7x5x8, 16x16x64, 2x83x66 and 3x3x85
  // ran gemmSN; 2x64x105, 16x16x112 and 16x64x112 the SIMT kernels).
  if (p.dtype == hw::DType::kFp32 ? p.N < 256 && p.K > kGemmsnNarrowFp32MaxK : operand_align(p) != 1) return false;
  // Deeper fp32 products stay on gemmSN only when wide and at least as wide as deep (sets 3-10:
  // 8x4732x364, 16x8128x256, 16x7968x2608, 16x10624x2528 ran it; 16x1664x576, 16x2960x1760,
  // 16x5120x9552, 16x3072x12576 the SIMT kernels, 5x5189x3859 sgemm_largek).
  if (p.dtype == hw::DType::kFp32 && p.K > kGemmsnAnyGridMaxK && (p.N < kGemmsnDeepFp32MinN || p.N < p.K)) {
    return false;
  }
  const GemmsnShape g = gemmsn_shape(p, linear);
  // 16-bit NN products: gemmSN however few CTAs up to K = 512; deeper, only up to 13 rows, wider
  // than 4,096 columns and up to K = 4,096 (sets 3-12: 8x1160x185, 14x2x359, 5x256x405 ran gemmSN;
  // 13x5340x1137 and 12x5831x2533 too, 8x2190x2539, 5x3857x2512 and 3x3096x5393 the tiled kernels;
  // issue 16's twenty-third round, sets 3-40: 2x4807x655, 2x8021x1793, 3x13379x629 and
  // 4x11085x3938 ran gemmSN, 7x4014x1537, 4x12785x4286 and 3x13473x6818 the tiled kernels; its
  // twenty-fourth, sets 3-42: 9x5737x2557 and 9x11827x553 ran gemmSN, 11x2375x1580,
  // 12x7492x11233 and every deep product of 14-16 rows (15x2401x1810, 15x7791x2437,
  // 16x1195x6675, 16x7973x515) cutlass_75's split-K, where gpusim had run gemmSN, 16-480% slow).
  if (p.dtype != hw::DType::kFp32 && !linear) {
    // fp16's leave it from K = 352 unless wider than 4,096 columns (the shallow probe: 3xNx362
    // and 15xNx426 ran the sm_75 wmma kernel, split; op sets 2x539x299 and 9x13119x381 gemmSN).
    if (p.dtype == hw::DType::kFp16 && p.K > kGemmsnFp16MaxK && p.N <= kGemmsn16BitWideMinN) {
      return false;
    }
    if (p.K <= kGemmsn16BitAnyGridMaxK) return true;
    return p.M <= kGemmsn16BitDeepMaxRows && p.N > kGemmsn16BitWideMinN &&
           p.K <= kGemmsn16BitWideMaxK;
  }
  // 16-bit F.linear (TN) of short K takes gemmSN only when at most 16 columns wide, or 64 from 6
  // rows on; wider ones ran the tiled kernels (sets 3-13: 6x15x6, 7x14x7, 11x5x13 and 6x11x124
  // ran gemmSN; 2x285x14, 7x460x5, 10x119x34, 15x1909x81 and 2x7529x68 cutlass_75, 2x9908x20 and
  // 6x1070x66 wmma; issue 16's twenty-fourth round: 7x29x2, 10x35x14 and the shallow probe's
  // 7x51 and 16x51 ran gemmSN, 5x21x5, 5x63x15, 3x28x39 and 2x19x65 cutlass_75).
  if (p.dtype != hw::DType::kFp32 && linear && p.K <= kGemmsnAnyGridMaxK) {
    return p.N <= kGemmsnTnShallowMaxN ||
           (p.M >= kGemmsnTnShallowWideMinRows && p.N <= kGemmsnTnShallowWideMaxN);
  }
  // Deeper 16-bit F.linear (TN) stays on gemmSN only while it has at least as many CTAs (8
  // columns each) as a thread walks K steps (16 K groups): N >= K / 2. Longer chains over fewer
  // CTAs ran cutlass_75's split-K kernels (issue 16's fifteenth round, sets 3-23: 11x453x9287,
  // 7x751x2089, 4x893x9325, 3x1292x4257, 12x1428x4161 on cutlass_75; 2x1016x957, 4x3920x4031,
  // 3x4526x2325, 4x8046x10165 on gemmSN; 2x620x1693 a miss; 0.3-1.0 tried).
  if (p.dtype != hw::DType::kFp32 && linear && 2 * p.N < p.K) return few_cta_gemmsn_tn(p, g);
  // fp32, and 16-bit F.linear (TN): K up to 128, or a grid that fills half the SMs. The TN kernel
  // also ran with one CTA (11x7x754 in ops4_h100.csv.gz), which this sends to the tiled kernels: a
  // known miss.
  return p.K <= kGemmsnAnyGridMaxK || 2 * ceil_div(p.N, g.cols) * g.row_groups >= hw.sm_count;
}

// tf32 products too small to fill the GPU with tiles, on the sm_80-style kernels: cuBLAS splits
// K to fill the SMs, down to 4-deep slices, and reduces through splitKreduce_kernel even when it
// does not split (ops3_h100.csv: 1872x16x16 -> 30 tiles x 4, 16x224x16 -> 4 x 4, 16x16x48 ->
// 1 x 12, 304x16x13216 -> 5 x 26; 16x16x32 unsplit, every one with the reduce kernel), for
// rows that allow 16-byte loads. Only for a handful of tiles: from 9 tiles up the sets 4 and 5
// (ops4_h100.csv.gz, ops5_h100.csv.gz) ran unsplit without the reduce (544x48x16, 944x16x240,
// 1696x16x96, 16x1744x32, 7504x80x16) or split long K as the estimate does (704x16x544 -> 6,
// 2544x16x992 -> 6); 1872x16x16 (30 tiles, split 4) was a miss until the column rule below.
constexpr std::int64_t kTf32SmallSplitMaxTiles = 8;
// Products of more than one column of tiles split up to 24 tiles when K is at most 32 (sets 3-12:
// 16x752x16, 64x624x16, 32x1120x16, 16x1168x16, 32x1280x16, 336x224x16 split 4 ways; one column
// of 10-21 tiles ran unsplit: 592x16x16, 1168x16x16, 1344x16x16; as did 32 tiles, 16x2032x16).
constexpr std::int64_t kTf32WideSplitMaxTiles = 24;
constexpr std::int64_t kTf32WideSplitMaxK = 32;
// At most this many slices (16x16x1936 -> 24, 32x160x3152 -> 24, 304x16x13216 -> 26).
constexpr std::int64_t kTf32MaxSmallSplit = 24;
// One column of 22-34 tiles at K = 16 splits after all: 4 ways while the slices fit the SMs, else 2,
// with the reduce (sets 3-30, H100: 1376x48x16, 1584x16x16, 1664x16x16, 1744x16x16 and 1872x16x16 4
// ways, 2128x16x16 twice 2 ways, on s1688gemm_64x64_16x10; 38-40% fast unsplit); 10-21 tiles
// (592x16x16 to 1344x16x16) and 35 or more (2224x64x16, 4480x16x16) ran unsplit. Issue 16's
// eighteenth round.
constexpr std::int64_t kTf32ColumnSplitMinTiles = 22;
constexpr std::int64_t kTf32ColumnSplitMaxTiles = 34;
constexpr std::int64_t kTf32ColumnSplitMaxK = 16;
constexpr std::int64_t kTf32ColumnMaxSplit = 4;
// More than 8 tiles (and K above 32): split as the estimate has it only from K = 480 over at most
// 80 tiles, else unsplit (sets 3-28, H100, 64x64 tiles: all 7 of K >= 480 over 21-77 tiles split
// 3-6 ways, 144x432x496 to 16x4928x832; 37 of 41 others unsplit, among them 16x7904x128,
// 1696x16x96, 3200x96x800 over 100 tiles; 16x624x80, 16x768x64, 16x912x96 and 16x1504x288 split,
// misses). gpusim's estimate had split most of them: those rows 15-67% slow.
constexpr std::int64_t kTf32SplitMinK = 480;
constexpr std::int64_t kTf32SplitMaxTiles = 80;

Choice tf32_small_split(const hw::HardwareSpec& hw, const Problem& p, Choice ch) {
  const std::int64_t tiles = units_of(p, ch.cfg, 1);
  // Narrower rows mostly ran sm80_xmma's unsplit 32x32x64 kernel instead (43x930x20, 583x240x19).
  if (p.dtype != hw::DType::kTf32 || operand_align(p) != 4) return ch;
  const bool wide = ceil_div(p.N, ch.cfg.tile_n) > 1 && p.K <= kTf32WideSplitMaxK;
  if (ceil_div(p.N, ch.cfg.tile_n) == 1 && p.K <= kTf32ColumnSplitMaxK &&
      tiles >= kTf32ColumnSplitMinTiles && tiles <= kTf32ColumnSplitMaxTiles) {
    // Halved until the slices fit the SMs, so that they stay a multiple of 4 deep.
    ch.split = kTf32ColumnMaxSplit;
    while (ch.split > 1 && tiles * ch.split > hw.sm_count) ch.split /= 2;
    ch.reduce = true;
    return ch;
  }
  if (tiles > (wide ? kTf32WideSplitMaxTiles : kTf32SmallSplitMaxTiles)) {
    // Beyond them cuBLAS splits only deep products of few tiles; the rest run unsplit, without
    // the reduce.
    if (!wide && !(p.K >= kTf32SplitMinK && tiles <= kTf32SplitMaxTiles)) {
      ch.split = 1;
      ch.reduce = false;
    }
    return ch;
  }
  ch.split = std::max<std::int64_t>(
      1, std::min({hw.sm_count / tiles, ceil_div(p.K, 4), kTf32MaxSmallSplit}));
  while (last_slice_empty(p, ch.cfg, ch.split)) --ch.split;
  ch.reduce = true;
  return ch;
}

// Splits the mma.sync kernels may take: cuBLAS splits their few-tile products deeply
// (ops4_h100.csv.gz: 104 ways for 24x274x8287, 175 for 4x3x2800, 242 for 12x19x5802; ops3_h100.csv:
// 123 for 17x2x12716); nvjet kernels up to 16.
constexpr std::int64_t kMmaSyncMaxSplit = 256;
constexpr std::int64_t kNvjetMaxSplit = 16;

// cuBLAS's split of a product of few nvjet tiles: K slices at least this deep (20 steps of 64),
// at most kNvjetMaxSplit, and no more slices than the SMs hold (random sets 3-8 on the H100:
// 16x16x2096 unsplit, 16x16x3568 -> 2, 16x16x6752 -> 5, 16x16x15344 -> 11, 7 tiles of
// 16x432x7456 -> 5, 40 tiles of 160x2512x11168 -> 3, 71 tiles of 16x4528x3440 unsplit).
constexpr std::int64_t kNvjetMinSliceK = 1280;

// K cut into slices at least `slice_k` deep, at most `max_split` of them, and no more slices than
// `max_ctas` CTAs hold, none left empty: the form of cuBLAS's split rules below.
std::int64_t split_by_slices(const Problem& p, const Config& c, std::int64_t slice_k, std::int64_t max_split,
                             std::int64_t max_ctas) {
  const std::int64_t tiles = units_of(p, c, 1);
  std::int64_t s = std::clamp<std::int64_t>(p.K / slice_k, 1, max_split);
  while (s > 1 && (tiles * s > max_ctas || last_slice_empty(p, c, s))) --s;
  return s;
}

std::int64_t nvjet_split(const hw::HardwareSpec& hw, const Problem& p, const Config& c) {
  return split_by_slices(p, c, kNvjetMinSliceK, kNvjetMaxSplit, hw.sm_count);
}


// The tiled (nvjet or mma.sync) kernel and split for a 16-bit, fp8 or tf32 product.
// Small tf32 products with rows that are not 16-byte multiples run sm80_xmma's 32x32x64 kernel
// on sm_90, unsplit (sets 3-5: 253x18x443, 567x204x161, 13x64x55; 128 threads, 72 registers, 48
// KiB); deeper or larger ones the cutlass align1/align2 kernels
// (6x25x1360 split 114, 1226x7783x107, 58x2047x2591). Up to K = 640 since issue 16's twelfth
// round (was 1024): sets 3-17 (H100) ran it up to K = 597 (17x2x597, 57x12x563) and cutlass_80
// for all 10 products of K = 682 to 1023 (4x110x763, 12x527x756, 907x2x682 split; 326x103x609
// too, below the bound: a miss); the tf32 cutlass_80 and xmma rows 12.2 -> 11.8% (H100), 13.3 ->
// 13.0% (H200).
constexpr std::int64_t kXmmaTf32MaxK = 640;
constexpr double kXmmaTf32MaxWork = 1e8;  // M x N x K

// Tall products of at most 9 columns and K up to 16 from 2,400 rows on run cuBLAS's sm_80
// align1 kernel of 256-row tiles instead (128x256_32x3), K in 4-deep slices and the reduce (sets
// 3-28, H100: 6 of 7, 2414x3x11 -> 3 slices, 3944x3x13 -> 4, 3127x3x3 -> 1; 6366x8x2 ran 64x128).
constexpr std::int64_t kTf32TallMinRows = 2400;
constexpr std::int64_t kTf32TallMaxCols = 9;
constexpr std::int64_t kTf32TallMaxK = 16;
constexpr std::int64_t kTf32TallSliceK = 4;

std::optional<Choice> tf32_tall_shallow(const hw::HardwareSpec& hw, const Problem& p) {
  if (p.M < kTf32TallMinRows || p.N > kTf32TallMaxCols || p.K > kTf32TallMaxK) return std::nullopt;
  const auto c = mma_sync_tile(hw, p, 128, 256);
  if (!c) return std::nullopt;
  return reduced_split(*c, ceil_div(p.K, kTf32TallSliceK));
}

std::optional<Choice> xmma_tf32_small(const hw::HardwareSpec& hw, const Problem& p) {
  if (p.dtype != hw::DType::kTf32 || hw.throughput.mma_sync_share >= 1.0 || operand_align(p) >= 4 ||
      p.K >= kXmmaTf32MaxK ||
      static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K) >= kXmmaTf32MaxWork) {
    return std::nullopt;
  }
  if (auto t = tf32_tall_shallow(hw, p)) return t;
  auto c = mma_sync_config(hw, p.dtype, 32, 32);
  if (!c) return std::nullopt;
  c->tile_k = 64;
  c->stages = 3;
  c->smem = c->stages * (c->tile_n + c->tile_m) * c->tile_k * 4;  // 48 KiB, as measured
  c->threads = 128;
  c->regs = 72;
  c->align = operand_align(p);
  c->xmma_tf32_small = true;
  c->k_step_round_trips = kXmmaTf32StepRoundTrips;
  return Choice{*c, 1, 0};
}

// Small 16-bit products whose rows allow only 4-byte loads run CUTLASS's wmma kernel on sm_90:
// 32x32 tiles, 128 threads, 64-deep K steps two stages deep (as most of them measured: 80-94
// registers, 18-37 KiB), for products below 2^24 multiply-adds (random sets 3-8 on the H100:
// 1.9M to 16M of them ran wmma, 2176x10476x10 (228M) and 864x64x822 (45M) the s16816 kernels;
// 7 of the 100 align2 rows break the rule, 46 of them ran wmma where the s16816 kernels were
// modeled).
constexpr double kWmmaMaxWork = 16777216.0;  // M x N x K
// Nor more than 2^20 outputs: shallow products beyond it ran the s16816 kernels' large tiles (sets
// 3-42, H100 and H200: 3420x362x2 (1.24M outputs), 1166x2008x2, 1400x3062x2, 9272x320x2,
// 6107x1220x2, 1072x2500x6, against 100x15810x4 and 3395x334x14 on wmma; below it 7213x132x2
// and 569x982x4 ran s16816 too). Issue 16's twenty-fourth round.
constexpr double kWmmaMaxOutputs = 1048576.0;
// Its K steps wait for their loads, then walk the step 16 deep (load_matrix_sync and mma_sync in
// a chain): a step is one DRAM round trip plus about 150 cycles a 16-deep sub-step, so a
// one-step kernel's time grows with its K tile whatever K is (sets 3-28, H100, one-step launches
// of at most 132 CTAs: 2.05 us for 32-deep steps, 2.3-2.65 for 64, 2.9-3.0 for 128; 128-deep
// single-stage steps of one CTA 1.1-1.3 us). Its first loads wait in that chain: the prologue
// waits 2.5 round trips fewer. Issue 16's seventeenth round, with the kernel choice above: 0.75-
// 1.25 round trips x 100-200 cycles x 2-6 half round trips tried on all rows of sets 3-28;
// cutlass_80 wmma rows 16.4 -> 14.0% (H100), 18.0 -> 15.5% (H200). (Was 1.5 round trips a 64-deep
// step, fitted on sets 3-13.)
constexpr double kWmmaStepRoundTrips = 1.0;
constexpr double kWmmaSubStepCycles = 150.0;
constexpr double kWmmaSubStepK = 16.0;
constexpr std::int64_t kWmmaPrologueSavedHalfRoundTrips = 5;

// fp16 products whose rows allow only 2-byte loads run the sm_75 build of that kernel, up to far
// larger products: every fp16 align1 product of sets 3-10 (H100) with K >= 2, fewer than 2^20
// outputs and fewer than 4e8 multiply-adds ran it (31 of them, up to 2382x163x9, 3x13473x6818 and
// 4101x7x12203); 177x469x6243 (5.2e8) and those of 1.6M outputs or more ran the s1688 kernels.
// bf16's align1 products never ran it. The outputs' bound is 2^19 since issue 16's twenty-fourth
// round (the shallow probe: 1542x385x362 (594K outputs), 1883x385 and 5486x173 ran cutlass_75's
// tiles, 1883x173x362 (326K) wmma; op sets 148x6190x167 and 95x7145x152 the tiles, where gpusim's
// wmma had run them 25-39% fast; 2^20 before).
constexpr double kWmma75MaxWork = 4e8;
constexpr double kWmma75MaxOutputs = 524288.0;

bool runs_wmma(const hw::HardwareSpec& hw, const Problem& p) {
  if (detail::elt_bytes(p.dtype) != 2 || hw.throughput.mma_sync_share >= 1.0) return false;
  const double outputs = static_cast<double>(p.M) * static_cast<double>(p.N) * p.batch;
  const double work = outputs * static_cast<double>(p.K);
  const std::int64_t align = operand_align(p);
  // Few rows take wmma unsplit (wmma_choice); F.linear's alike, its unsplit rule aside (2x8x860
  // ran the 16x16 kernel, 2x4x2104 split 2 ways).
  if (few_row_unsplit(p, false) && p.M <= kFewRowWmmaMaxRows) return true;
  if (align == 2) return work < kWmmaMaxWork && outputs < kWmmaMaxOutputs;
  return align == 1 && p.dtype == hw::DType::kFp16 && p.K >= 2 && outputs < kWmma75MaxOutputs &&
         work < kWmma75MaxWork;
}

// cuBLAS's split of a wmma product: none up to K = 1024, then slices of about 128 (at most 32,
// and at most two CTAs per SM) (sets 3-8: 62x14x692 and 15x2x1804 unsplit, 130x22x3688 -> 31,
// 108x20x4842 -> 25, 272x8x7386 -> 28, 21x394x1386 -> 12, 2069x2x1562 -> 6).
constexpr std::int64_t kWmmaUnsplitMaxK = 1024;
// Its slices are whole 16-byte groups of K, not whole K steps (CUTLASS's split-K rounding):
// 130x22x3688 ran 31 slices of 119 on 128-deep steps (with whole steps gpusim cut 15; sets 3-28
// 8.017 -> 8.012% H100, 8.855 -> 8.851% H200).
constexpr std::int64_t kWmmaSplitKAlign = 8;
constexpr std::int64_t kWmmaSliceK = 128;
constexpr std::int64_t kWmmaMaxSplit = 32;

// Which of cuBLAS's wmma kernels a product runs (cutlass_80_wmma_..._<tile>_<K tile>x<stages>,
// sets 3-28, H100): most run 32x32 tiles over 128-deep K steps, two stages ("32x32_128x2", 128
// threads). F.linear (TN) of at most 16 rows, unsplit, runs 16x16 tiles of one warp in one stage,
// their K step as deep as K needs: 32 up to K = 48, 64 up to 300, else 128 (40 of 41 launches of
// K <= 1024); a bf16 matmul (NN) of at most 3 rows 32-deep steps (13 of 15, the others split);
// fp16 NN of K up to 256 64-deep steps in one stage (22 of 29).
constexpr std::int64_t kWmmaSmallTile = 16;
constexpr std::int64_t kWmmaSmallTileMaxRows = 16;
constexpr std::int64_t kWmmaSmallTileStep32MaxK = 48;
constexpr std::int64_t kWmmaSmallTileStep64MaxK = 300;
constexpr std::int64_t kWmmaFewRowsMaxRows = 3;
constexpr std::int64_t kWmmaFp16ShallowMaxK = 256;

// bf16 matmuls (NN) of 4-16 rows and at most 10 columns run the 16x16 tiles' split-K variant,
// two stages of 128-deep steps, K in slices of 8 however deep, bf16 partials and their reduce (sets
// 3-28, H100: 10 of 10, 10x2x4 and 14x2x8 unsplit with the reduce, 9x2x14 -> 2 slices, 8x8x292
// -> 37, 14x2x3658 -> 458; 9x20x12 and 15x34x4 ran 32x32 tiles).
constexpr std::int64_t kWmmaNarrowMinRows = 4;
constexpr std::int64_t kWmmaNarrowMaxCols = 10;
constexpr std::int64_t kWmmaNarrowSliceK = 8;

bool narrow_wmma_split(const Problem& p, bool linear) {
  return !linear && p.dtype == hw::DType::kBf16 && p.M >= kWmmaNarrowMinRows &&
         p.M <= kWmmaSmallTileMaxRows && p.N <= kWmmaNarrowMaxCols && operand_align(p) == 2;
}

std::optional<Config> wmma_small(const hw::HardwareSpec& hw, const Problem& p, bool linear) {
  if (!runs_wmma(hw, p)) return std::nullopt;
  auto c = mma_sync_config(hw, p.dtype, 32, 32);
  if (!c) return std::nullopt;
  c->align = operand_align(p);
  c->threads = 128;
  c->regs = 88;
  c->stages = 2;
  c->tile_k = 128;
  if (c->align == 1) {  // the sm_75 build (fp16 align1): 64-deep steps, as most of its launches
    c->tile_k = 64;
  } else if (linear && p.M <= kWmmaSmallTileMaxRows && p.K <= kWmmaUnsplitMaxK) {
    c->tile_m = c->tile_n = kWmmaSmallTile;
    c->threads = 32;
    c->stages = 1;
    c->tile_k = p.K <= kWmmaSmallTileStep32MaxK ? 32 : (p.K <= kWmmaSmallTileStep64MaxK ? 64 : 128);
  } else if (!linear && p.dtype == hw::DType::kBf16 && p.M <= kWmmaFewRowsMaxRows) {
    c->tile_k = 32;
  } else if (narrow_wmma_split(p, linear)) {
    c->tile_m = c->tile_n = kWmmaSmallTile;
    c->threads = 32;
  } else if (!linear && p.dtype == hw::DType::kFp16 && p.K <= kWmmaFp16ShallowMaxK) {
    c->tile_k = 64;
    c->stages = 1;
  }
  c->smem = c->stages * (c->tile_n + c->tile_m) * c->tile_k * 2;
  c->wmma = true;
  c->split_k_align = kWmmaSplitKAlign;
  c->k_step_round_trips = kWmmaStepRoundTrips;
  c->k_step_chain_cycles = kWmmaSubStepCycles * static_cast<double>(c->tile_k) / kWmmaSubStepK;
  c->prologue_saved_half_round_trips = kWmmaPrologueSavedHalfRoundTrips;
  return c;
}

// The sm_75 build (fp16 align1) splits shallower products too, from K = 512, when they fill few
// SMs: 8 slices over 3-16 tiles, 4 over up to a wave and a quarter (sets 3-42, H100 and H200:
// 3x161x623, 448x11x820, 163x11x912 -> 8, 734x7x587 -> 5, 1883x3x737 -> 6, 1542x35x926 and
// 75x1463x559 (138 tiles) -> 4; 6279x4x803 (197 tiles) unsplit; the shallow probe's K = 560
// alike, 67x5, 163x5, 448x5 -> 8). gpusim had run them unsplit, 15-130% slow. Shallower, most
// ran unsplit (the probe's 67x5x426 to 448x5x426 and K = 362; 30x385x362 -> 4 and 207x49x452 ->
// 7 are misses): a first version split from K = 360 and did worse on the probe.
constexpr std::int64_t kWmma75SplitMinK = 512;
constexpr std::int64_t kWmma75FewTiles = 16;
// One or two tiles run the 16x16 kernel split 45-100 ways (2x2x613, 11x45x819), which gpusim does
// not model; unsplit 32x32 tiles take about their time.
constexpr std::int64_t kWmma75FewTilesMin = 3;
constexpr double kWmma75SplitMaxWaves = 1.25;
constexpr std::int64_t kWmma75FewTileSplit = 8;
constexpr std::int64_t kWmma75ManyTileSplit = 4;

std::int64_t wmma75_mid_split(const hw::HardwareSpec& hw, const Problem& p, const Config& c) {
  if (c.align != 1 || p.K < kWmma75SplitMinK || p.K > kWmmaUnsplitMaxK) return 1;
  const std::int64_t tiles = units_of(p, c, 1);
  if (tiles < kWmma75FewTilesMin ||
      static_cast<double>(tiles) > kWmma75SplitMaxWaves * hw.sm_count) {
    return 1;
  }
  std::int64_t s = tiles <= kWmma75FewTiles ? kWmma75FewTileSplit : kWmma75ManyTileSplit;
  while (s > 1 && last_slice_empty(p, c, s)) --s;
  return s;
}

Choice wmma_choice(const hw::HardwareSpec& hw, const Problem& p, const Config& c, bool linear) {
  if (narrow_wmma_split(p, linear)) {
    return reduced_split(c, ceil_div(p.K, kWmmaNarrowSliceK), true);
  }
  const bool unsplit =
      p.K <= kWmmaUnsplitMaxK || (few_row_unsplit(p, linear) && p.M <= kFewRowWmmaMaxRows);
  const std::int64_t s =
      unsplit ? wmma75_mid_split(hw, p, c)
              : split_by_slices(p, c, kWmmaSliceK, kWmmaMaxSplit, 2 * hw.sm_count);
  Choice ch{c, s, 0};
  ch.reduce = s > 1;
  return ch;
}

Choice choose_tiled(const hw::HardwareSpec& hw, const Problem& p, bool linear) {
  if (runs_sm90_kernels(hw, p)) {
    const auto candidates =
        p.dtype == hw::DType::kTf32 ? tf32_sm90_candidates(hw, p) : hopper_candidates(hw, p);
    return choose(hw, p, candidates, kNvjetMaxSplit, nvjet_split);
  }
  if (auto x = xmma_tf32_small(hw, p)) return *x;
  if (auto w = wmma_small(hw, p, linear)) return wmma_choice(hw, p, *w, linear);
  return tf32_small_split(hw, p, choose(hw, p, mma_sync_candidates(hw, p), kMmaSyncMaxSplit));
}

// A bias on single-element rows over several tiles: cuBLAS keeps the bias in the kernel's
// epilogue and splits K serially, few ways (ops3_h100.csv, ops4_h100.csv.gz: a memset, then 2-15
// slices, about one per 768 of K, no reduce kernel: 769x2x975 -> 3, 1917x71x547 -> 2,
// 149x21x11486 -> 15); a single tile keeps the parallel split (3x2x857 -> 27 and the reduce).
constexpr std::int64_t kSerialSplitK = 768;
constexpr std::int64_t kSerialSplitMax = 16;
// Fewer tiles keep the parallel split and its reduce kernel (which adds the bias), unless the
// output is a single column of tiles over a deep K: then slices of about 256 run serially (sets
// 3-10, 27 bias rows split on the align1 kernels: 5x83x6104 -> 64 ways and the reduce, 259x179x3186
// (20 tiles) -> 8 and the reduce, 376x58x185 -> 3 and the reduce; 6607x88x15022 (26 tiles),
// 769x2x975 -> 3 serial, 157x2x735 -> 3, 149x21x11486 -> 15).
constexpr std::int64_t kSerialMinTiles = 24;
constexpr std::int64_t kSerialColumnMinK = 256;
constexpr std::int64_t kSerialColumnSplitK = 256;
// Where the parallel split stays, products of more than 8 rows cut about 0.4 as many slices as the
// estimate weighs best, at most 21 (issue 16's twenty-third round, sets 3-40: 60x177x746,
// 25x187x891, 32x98x1251 -> 7 slices, 43x43x4415, 56x135x4591, 40x595x4904, 39x11x7772 -> 21,
// 259x179x3186 -> 8, where the estimate split 9-81 ways; those rows ran 30-50% fast). Fewer rows
// split finely (3x2x857 -> 27, 4x4x5359 -> 32, 7x244x9061 -> 71). 0.25-0.5 and caps of 8-21
// tried: the op sets 7.610 -> 7.580% (H100), 8.339 -> 8.310% (H200).
constexpr std::int64_t kBiasParallelFewerSlicesMinRows = 8;
constexpr double kBiasParallelSliceShare = 0.4;
constexpr std::int64_t kBiasParallelMaxSlices = 21;

// Shallow products on the register-staged (align1) kernels: cuBLAS takes its split-K variant,
// which writes fp32 partials that cublasLt::splitKreduce_kernel sums and converts, with K cut
// into slices of about 8 (sets 3-7 on the H100, no bias):
//  * K of 2 to 8, a grid of one wave or less: unsplit, fp32 out and the reduce (16 of 17
//    launches: 8314x13x2, 219x215x4, 5904x2x7, 49x16139x2 on 128x128 tiles);
//  * K of 9 to 80, few tiles (a fifth of the SMs or fewer): ceil(K / 8) slices (14 of 15
//    launches: 29x93x14 -> 2, 1029x6x17 -> 3, 712x12x29 -> 4, 57x14x47 -> 6, 23x36x75 -> 10);
//    with more tiles, one slice and bf16 out (1901x63x23, 753x384x11, 1373x247x60).
// K = 1 and deeper products keep the choice above. bf16 only: fp16's shallow products ran other
// kernels (cutlass wmma, sm80 align2) without the split-K variant. Nor products of 5 rows or
// fewer (sets 3-13: 3x138x3, 5x206x3, 2x285x14, 2x1115x14, 2x66x37 and 2x19x65 unsplit with
// bf16 out; 7x460x5 and 10x119x34 took the variant).
constexpr std::int64_t kShallowSliceK = 8;
constexpr std::int64_t kShallowEstimateMaxK = 80;
// Deeper products of few tiles, K of 81 to 264, take the same slices of 8 where the estimate had
// split them a few ways (sets 3-33, H100: 31x23x97 -> 13 slices, 37x23x105 -> 14, 40x259x115 -> 15,
// 19x172x125 -> 16, 2x22x173 -> 22, 3x4x259 -> 33; 127x179x98 -> 5 and 295x4x195 -> 13 the
// misses; from K = 276 on, slices of 24 and of 8 alike: 239x13x276 and 21x29x285 -> 12,
// 27x17x334 -> 14, 12x12x851 -> 107). Issue 16's nineteenth round: 81-1,024 tried, 264 best;
// the bf16 align1 rows 10.76 -> 10.61% (H100), 11.17 -> 10.96% (H200).
constexpr std::int64_t kShallowMaxK = 264;
constexpr std::int64_t kShallowSplitSmsPerTile = 5;
constexpr std::int64_t kShallowSplitMinRows = 6;
// Tall products of at most 19 columns take those slices over more tiles too, while the split
// launch stays within about 4.5 waves of CTAs (sets 3-28, H100: 7215x3x9 -> 2 slices over 113
// tiles, 5829x13x20 -> 3, 3425x11x50 -> 7, 2454x7x79 -> 5 (10 here); unsplit 13086x11x22, whose
// 3 slices would make 615 CTAs, 9653x9x33 and 15459x4x47; 11925x2x55 split 3 ways, a miss).
constexpr std::int64_t kShallowTallMaxCols = 19;
constexpr double kShallowTallMaxWaves = 4.5;
// K of 2 or 3 over more 64x64 tiles than SMs and fewer than 2^21 outputs: the 128x128 kernel's
// split-K variant, unsplit, writing bf16 partials ("bf16_s1688gemm") that a splitKreduce_kernel
// of bf16 partials sums (sets 3-27, H100: 9 of 10 such products, 2255x103x2 through 223x9310x3 =
// 2.08M outputs; 19x10387x2 ran 64x64 tiles and fp32 partials); from 2^21 outputs on the same
// kernel without the reduce (698x3082x3 = 2.15M and all 14 larger ones). Deeper K of up to 8
// kept one or the other (77x4617x5 the variant, 94x10709x4 and 13040x122x5 not).
constexpr std::int64_t kWideShallowMaxK = 3;
constexpr double kWideShallowMaxOutputs = 2097152.0;
// Shallow products of at least 200 rows and 129-200 columns run the 128x128 split-K variant, K in
// slices of 8 (one up to K = 8), fp32 partials and the reduce (sets 3-28, H100: all 7, 236x148x3,
// 997x139x5, 540x195x7, 993x192x11 -> 2 slices, 1059x165x17 and 1121x152x19 -> 3; gpusim had 64x64
// tiles, those rows 20-57% fast; 150x151x5 and 189x184x5 ran 64x64 tiles). Wider products of K
// above 3 keep the rules below (846x266x9, 753x384x11 and 878x381x12 ran 64x64 tiles, bf16 out).
constexpr std::int64_t kSquareShallowMinRows = 200;
constexpr std::int64_t kSquareShallowMaxCols = 200;
constexpr std::int64_t kSquareShallowMaxK = 19;
// Shallow products of 40-64 rows and 139-8,192 columns run the split-K variant of 128-column
// tiles one tile high (128x64), K in slices of 8, bf16 partials and their reduce (sets 3-28,
// H100: 10 of 11, 63x139x2, 40x499x5, 53x591x12 -> 2 slices, 49x867x25 -> 4, 58x6054x5; 40x876x11
// ran 64x64 tiles; fewer rows ran 64x64 tiles with fp32 partials: 19x488x23, 35x573x35; wider,
// 49x16139x2 ran the 128x128 variant above).
constexpr std::int64_t kWideRowShallowMinRows = 40;
constexpr std::int64_t kWideRowShallowMaxRows = 64;
constexpr std::int64_t kWideRowShallowMinCols = 139;
constexpr std::int64_t kWideRowShallowMaxCols = 8192;
constexpr std::int64_t kWideRowShallowMaxK = 25;

// The register-staged kernel of tile_n x tile_m in its split-K variant: `split` slices, the reduce,
// partials in bf16 or fp32. `ch` unchanged where the candidates hold no such tile.
Choice register_staged_variant(const hw::HardwareSpec& hw, const Problem& p, Choice ch,
                               std::int64_t tile_n, std::int64_t tile_m, std::int64_t split,
                               bool partials_16bit) {
  const auto c = mma_sync_tile(hw, p, tile_n, tile_m);
  if (!c) return ch;
  ch.cfg = *c;
  ch.split = split;
  ch.reduce = true;
  ch.partials_16bit = partials_16bit;
  return ch;
}

// Products of more rows (17-64) on one align1 tile split fewer ways, in slices of 8: at most 16 up
// to K = 2,400, 42 deeper (sets 3-39, H100 and H200 alike: 66 of the 89 such launches without a
// serial split, where the estimate's choice had matched 5: 19x51x197 -> 13, 23x15x258 -> 11,
// 22x29x522 -> 14, 45x2x1871 -> 16, 61x11x2726 -> 38, 25x2x5699 -> 42). Taken up to K =
// kAlign1MidMaxK only (also in with_shallow_split, whose slices of 8 had run up to 33): there
// gpusim had split 5-33 ways and ran 14-17% slow (those 19 and 20 rows of K 129-600: 13.9 -> 8.0%
// on the H100, 16.6 -> 5.8% on the H200; all rows of sets 3-39 7.691 -> 7.683%, 8.450 -> 8.436%).
// Deeper, with cuBLAS's splits its lone CTAs' K steps (kAlign1StepRoundTrips, fitted on full SMs)
// ran 19% slow, where the estimate's finer splits run 12% fast. Issue 16's twenty-second round.
constexpr std::int64_t kAlign1MidMinRows = 17;
constexpr std::int64_t kAlign1MidMinK = 170;
constexpr std::int64_t kAlign1MidMaxK = 600;
constexpr std::int64_t kAlign1MidSlices = 16;

// K of 2 to 8 (the shallow probe, validation/data/shallow_gemm_h200.json.gz: a grid of 880
// launches, issue 16's twenty-fourth round; the op sets' launches agree). Beside the rules above,
// cuBLAS picks by rows, columns and 64x64 tiles:
//  * the plain 64x64 kernel (bf16 out, no reduce) over at most 1.1 waves of tiles for products of
//    at least 200 rows and 400 columns (F.linear: 128 rows, 200 columns): 222x419 through
//    376x1501 and 1000x419 (matmul), 145x259 through 500x957 and 2000x259 (F.linear);
//    op sets 222x897x2, 376x957x5, 496x454x3, 371x259x3, 339x373x3, 145x419x7; and for F.linear
//    of at most 16 rows at least 512 columns wide (7x721, 16x568, 6x8469). gpusim had cut them the
//    split-K variant and its reduce, 50-100% slow;
//  * the 128x128 split-K variant with fp32 partials, unsplit, for 200-400 columns (matmul, at
//    least 200 rows, at most 1.5 waves of 64x64 tiles: 222x259 through 2000x259), for F.linear of
//    65-127 rows at least 200 columns wide (100x259 through 100x3001, op set 102x455x2) and of
//    128-199 rows and 129-199 columns (145x151);
//  * the same variant with bf16 partials over more tiles, fewer than 2^21 outputs: from K = 4 only
//    for at least 200 rows and 256 columns on at most 500 tiles (2000x419x4, 1000x721x7,
//    4000x259x4; op sets 8193x232x5, 13040x122x5, 294x6641x8 and 94x10709x4 ran the plain
//    64x64 kernel), every K up to 3 as before.
// Misses left: 219x215x4 ran 64x64 tiles and the reduce, 2255x103x2 (F.linear) the bf16 variant.
constexpr std::int64_t kShallowestPlainMinRows = 200;
constexpr std::int64_t kShallowestPlainMinCols = 400;
constexpr std::int64_t kShallowestTnPlainMinRows = 128;
constexpr std::int64_t kShallowestTnPlainMinCols = 200;
constexpr std::int64_t kShallowestTnFewRows = 16;
constexpr std::int64_t kShallowestTnFewRowPlainMinCols = 512;
constexpr double kShallowestPlainMaxWaves = 1.1;
constexpr double kShallowestFp32PartialsMaxWaves = 1.5;
constexpr std::int64_t kShallowestTnMidMinRows = 65;
constexpr std::int64_t kShallowestBf16PartialsMinCols = 256;
constexpr std::int64_t kShallowestBf16PartialsMaxTiles = 500;

// The K <= 8 choice (the rules above, then the reduce over at most a wave of tiles).
Choice shallowest_choice(const hw::HardwareSpec& hw, const Problem& p, Choice ch, bool linear) {
  const auto c64 = mma_sync_tile(hw, p, 64, 64);
  const std::int64_t t64 = c64 ? units_of(p, *c64, 1) : units_of(p, ch.cfg, 1);
  const double sms = static_cast<double>(hw.sm_count);
  const double outputs = static_cast<double>(p.M) * static_cast<double>(p.N);
  const std::int64_t plain_rows = linear ? kShallowestTnPlainMinRows : kShallowestPlainMinRows;
  const std::int64_t plain_cols = linear ? kShallowestTnPlainMinCols : kShallowestPlainMinCols;
  const bool few_row_wide = linear && p.M <= kShallowestTnFewRows &&
                            p.N >= kShallowestTnFewRowPlainMinCols;
  const bool pocket = p.M >= plain_rows && p.N >= plain_cols &&
                      static_cast<double>(t64) <= kShallowestPlainMaxWaves * sms;
  if (c64 && (few_row_wide || pocket)) return Choice{*c64, 1, 0};
  const bool fp32_variant =
      linear ? (p.M >= kShallowestTnMidMinRows && p.M < plain_rows && p.N >= plain_cols) ||
                   (p.M >= plain_rows && p.N > 128 && p.N < plain_cols)
             : p.M >= plain_rows && p.N > kSquareShallowMaxCols && p.N < plain_cols &&
                   static_cast<double>(t64) <= kShallowestFp32PartialsMaxWaves * sms;
  if (fp32_variant) return register_staged_variant(hw, p, ch, 128, 128, 1, false);
  const std::int64_t tiles = units_of(p, ch.cfg, 1);
  if (tiles <= hw.sm_count) {
    ch.reduce = true;
    return ch;
  }
  const bool bf16_variant =
      p.K <= kWideShallowMaxK || (p.M >= kShallowestPlainMinRows &&
                                  p.N >= kShallowestBf16PartialsMinCols &&
                                  t64 <= kShallowestBf16PartialsMaxTiles);
  if (bf16_variant && outputs < kWideShallowMaxOutputs) {
    return register_staged_variant(hw, p, ch, 128, 128, 1, true);
  }
  return ch;
}

Choice with_shallow_split(const hw::HardwareSpec& hw, const Problem& p, Choice ch, bool bias,
                          bool linear) {
  if (bias || p.dtype != hw::DType::kBf16 || !ch.cfg.register_staged ||
      (ch.split != 1 && p.K <= kShallowEstimateMaxK) || p.K < 2 || p.K > kShallowMaxK ||
      p.M < kShallowSplitMinRows) {
    return ch;
  }
  const std::int64_t slices = ceil_div(p.K, kShallowSliceK);
  if (p.M >= kWideRowShallowMinRows && p.M <= kWideRowShallowMaxRows &&
      p.N >= kWideRowShallowMinCols && p.N <= kWideRowShallowMaxCols &&
      p.K <= kWideRowShallowMaxK) {
    return register_staged_variant(hw, p, ch, 128, 64, slices, true);
  }
  if (p.M >= kSquareShallowMinRows && p.N > 128 && p.N <= kSquareShallowMaxCols &&
      p.K <= kSquareShallowMaxK) {
    return register_staged_variant(hw, p, ch, 128, 128, slices, false);
  }
  if (p.K <= kShallowSliceK) return shallowest_choice(hw, p, ch, linear);
  const std::int64_t tiles = units_of(p, ch.cfg, 1);
  const bool tall =
      p.N <= kShallowTallMaxCols && static_cast<double>(tiles * slices) <=
                                        kShallowTallMaxWaves * static_cast<double>(hw.sm_count);
  if (tiles * kShallowSplitSmsPerTile > hw.sm_count && !tall) return ch;
  ch.split = slices;
  // One tile of more rows: at most kAlign1MidSlices slices (with_deep_k_slices).
  if (tiles == 1 && p.M >= kAlign1MidMinRows) {
    ch.split = capped_slices(p.K, kShallowSliceK, kAlign1MidSlices);
  }
  ch.reduce = true;
  return ch;
}

Choice with_bias_epilogue(const Problem& p, Choice ch, bool bias) {
  const std::int64_t tiles = units_of(p, ch.cfg, 1);
  if (!bias || !ch.cfg.register_staged || ch.split <= 1) return ch;
  const bool one_column = ceil_div(p.N, ch.cfg.tile_n) == 1 && p.K > kSerialColumnMinK;
  if (tiles < 2 || (tiles < kSerialMinTiles && !one_column)) {
    // The parallel split with the bias: more than 8 rows cut fewer, deeper slices.
    if (p.M > kBiasParallelFewerSlicesMinRows) {
      ch.split = std::clamp<std::int64_t>(
          std::llround(kBiasParallelSliceShare * static_cast<double>(ch.split)), 2,
          kBiasParallelMaxSlices);
      while (last_slice_empty(p, ch.cfg, ch.split)) --ch.split;
      ch.reduce = ch.split > 1;
    }
    return ch;
  }
  const std::int64_t slice_k = tiles < kSerialMinTiles ? kSerialColumnSplitK : kSerialSplitK;
  ch.split = std::clamp<std::int64_t>(ceil_div(p.K, slice_k), 2, kSerialSplitMax);
  while (last_slice_empty(p, ch.cfg, ch.split)) --ch.split;
  ch.reduce = false;
  ch.serial = ch.split > 1;
  return ch;
}

// Deep products of a few tiles on the register-staged kernels: cuBLAS cuts K into slices of whole
// steps (4 deep for tf32, 8 for 16-bit), as thin as a number of slices allows, and the reduce sums
// them (its chain then dominates: 5-10 us for 100-260 partials). gpusim's estimate keeps slices
// of 48 and more (kRegisterStagedMinSliceK), so these rows ran 12-53% fast. Measured (sets 3-25,
// H100; the H200 chose the same):
//  * tf32 on the sm_80 s1688 kernels of one or two tiles, K of 512 to 8,400: as many slices as
//    fill the SMs once, K / (SMs / tiles) rounded up to 4 (36 of 45 launches of K 738-16139:
//    22x14x1038 -> 130, 2x2x1234 -> 103, 2x149x3741 -> 63 over 2 tiles; six 64x64 launches took
//    fewer, among them the deepest: 2x7x13495 and 5x9x10154 -> 58);
//  * bf16 on cutlass_75 (align1) for products of at most 12 rows and two tiles, K of 256 to 7,000:
//    K / (2 x SMs) rounded up to 8 for a matmul (NN; 16 of 17: 12x45x2084 -> 261, 4x3x2800 -> 175,
//    3x125x1669 over 2 tiles -> 209; 11x25x5184 took 81), K / 96 rounded up to 8 for F.linear
//    (TN; 8 of 8: 3x4x259 -> 33, 2x7x2194 -> 92, 5x42x4011 -> 84). Deeper K, more rows and more
//    tiles run other rules that the sets do not pin down (5x14x15861 -> 117, 17x26x6657 -> 65,
//    4x268x1749 over 5 tiles -> 219 but 11x344x4685 over 6 -> 66).
constexpr std::int64_t kTf32DeepFillMinK = 512;
constexpr std::int64_t kTf32DeepFillMaxK = 8400;
constexpr std::int64_t kTf32DeepFillMaxTiles = 2;
constexpr std::int64_t kTf32DeepSliceStep = 4;
constexpr std::int64_t kAlign1DeepMaxRows = 12;
constexpr std::int64_t kAlign1DeepMaxTiles = 2;
constexpr std::int64_t kAlign1DeepMinK = 256;
constexpr std::int64_t kAlign1DeepMaxK = 7000;
constexpr std::int64_t kAlign1DeepSliceStep = 8;
constexpr std::int64_t kAlign1DeepLinearSlices = 96;

Choice with_deep_k_slices(const hw::HardwareSpec& hw, const Problem& p, Choice ch, bool bias, bool linear) {
  if (bias || ch.cfg.kind != GemmKind::kMmaSync || p.batch != 1) return ch;
  const std::int64_t tiles = units_of(p, ch.cfg, 1);
  std::int64_t slices = 0;  // the most slices cuBLAS cuts; 0: the rule does not apply
  std::int64_t step = 0;
  if (p.dtype == hw::DType::kTf32 && operand_align(p) < 4 && tiles <= kTf32DeepFillMaxTiles &&
      p.K >= kTf32DeepFillMinK && p.K <= kTf32DeepFillMaxK) {
    slices = hw.sm_count / tiles;
    step = kTf32DeepSliceStep;
  } else if (p.dtype == hw::DType::kBf16 && ch.cfg.register_staged && p.M <= kAlign1DeepMaxRows &&
             tiles <= kAlign1DeepMaxTiles && p.K >= kAlign1DeepMinK && p.K <= kAlign1DeepMaxK) {
    slices = linear ? kAlign1DeepLinearSlices : 2 * hw.sm_count;
    step = kAlign1DeepSliceStep;
  } else if (p.dtype == hw::DType::kBf16 && ch.cfg.register_staged && p.M >= kAlign1MidMinRows &&
             tiles == 1 && p.K >= kAlign1MidMinK && p.K <= kAlign1MidMaxK) {
    slices = kAlign1MidSlices;
    step = kAlign1DeepSliceStep;
  }
  if (slices <= 0) return ch;
  ch.split = capped_slices(p.K, step, slices);
  ch.reduce = ch.split > 1;
  return ch;
}

// tf32 products of rows that allow no 16-byte loads run cuBLAS's fp32 SIMT kernels when they are
// one deep, or shallow with many outputs (sets 3-12, H100: all 11 of K = 1, 2 x 642 to
// 10573 x 4222, ran cutlass_80_simt_sgemm_128x32; 192x9463x14, 12849x422x21, 462x16278x3 too,
// 869x1295x25 an fp32 xmma kernel; fewer outputs the tf32 kernels, 5017x269x3 a miss).
constexpr std::int64_t kTf32SimtMaxK = 32;
constexpr double kTf32SimtMinOutputs = 1048576.0;

bool tf32_runs_simt(const hw::HardwareSpec& hw, const Problem& p) {
  if (p.dtype != hw::DType::kTf32 || !detail::is_hopper(hw) || p.batch != 1 || operand_align(p) >= 4) return false;
  return p.K == 1 || (p.K <= kTf32SimtMaxK && static_cast<double>(p.M) * static_cast<double>(p.N) >= kTf32SimtMinOutputs);
}

// tf32 products of rows that allow no 16-byte loads and of 2^17 to 2^20 outputs, 17 to 639 deep,
// run cuBLAS's fp32 sm80_xmma kernel (FFMA, 32x32 tiles, unsplit) rather than the tf32 xmma
// kernel below 2^17 outputs (sets 3-27, H100: 17 of 19 such products, 5165x14x136 through
// 73x12444x27; 583x240x19 ran the tf32 xmma kernel, 4630x47x257 cutlass_80 64x64). Shallower
// products of as many outputs ran the cutlass kernels.
constexpr std::int64_t kTf32FfmaMinK = 17;
constexpr std::int64_t kTf32FfmaMaxK = 256;
constexpr double kTf32FfmaMinOutputs = 131072.0;
constexpr double kTf32FfmaMaxOutputs = 1048576.0;

bool tf32_runs_ffma_xmma(const hw::HardwareSpec& hw, const Problem& p) {
  if (p.dtype != hw::DType::kTf32 || !detail::is_hopper(hw) || p.batch != 1 ||
      operand_align(p) >= 4 || p.K < kTf32FfmaMinK || p.K > kTf32FfmaMaxK) {
    return false;
  }
  const double outputs = static_cast<double>(p.M) * static_cast<double>(p.N);
  return outputs >= kTf32FfmaMinOutputs && outputs < kTf32FfmaMaxOutputs;
}

}  // namespace

bool single_dot(const Problem& p) {
  return p.M == 1 && p.N == 1 && p.batch == 1 &&
         (p.dtype == hw::DType::kBf16 || p.dtype == hw::DType::kFp16);
}

std::int64_t dot_chunks(const Problem& p) {
  return single_dot(p) ? kSingleDotCtas : std::min(kDotChunks, ceil_div(p.K, 128));
}

GemmPlan plan_gemm(const hw::HardwareSpec& hw, const Problem& p, bool bias, bool linear) {
  if (detail::is_hopper(hw) && single_dot(p)) return {GemmPath::kDot, {}};
  if (detail::is_hopper(hw) && p.batch == 1 && std::min(p.M, p.N) == 1 && p.K > 1 &&
      !runs_sm90_kernels(hw, p)) {
    const bool dot = std::max(p.M, p.N) <= kDotMaxProducts && p.K >= kDotMinK;
    return {dot ? GemmPath::kDot : GemmPath::kGemv, {}};
  }
  if (uses_gemmsn(hw, p, linear)) return {GemmPath::kGemmsn, {}};
  if (tf32_runs_ffma_xmma(hw, p))
    return {GemmPath::kTiled, Choice{sm80_xmma_simt(kSm80XmmaSimtTiles[0]), 1, 0}};
  if (p.dtype == hw::DType::kFp32 || tf32_runs_simt(hw, p)) {
    return {GemmPath::kTiled,
            p.batch == 1 ? choose_simt(hw, p, linear) : Choice{simt_config(hw, p, linear), 1, 0}};
  }
  // One-row products take the GEMV, but not outer products (K = 1): 16-bit 1xNx1 ran cutlass_75's
  // 64x64 tiles as Mx1x1 does (sets 3-40: 1x23x1, 1x808x1, 1x14304x1 linear, 1x2188x1 fp16).
  if (!runs_sm90_kernels(hw, p) && p.M == 1 && p.batch == 1 && p.K > 1)
    return {GemmPath::kGemv, {}};
  const Choice tiled = with_deep_k_slices(hw, p, choose_tiled(hw, p, linear), bias, linear);
  return {GemmPath::kTiled,
          with_shallow_split(hw, p, with_bias_epilogue(p, tiled, bias), bias, linear)};
}

}  // namespace gpusim::models::gemm_detail
