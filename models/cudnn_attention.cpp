// cuDNN's fused attention kernels, as PyTorch 2.11 (cuDNN 9.19) launches them on sm_90.
//
// PyTorch prefers cuDNN on compute capability 9.0 and 10.0 (sdp_utils.cpp,
// check_prefer_cudnn_attention); on H100 every default-backend sdpa in ops_h100.csv ran:
//  * prefill: a cudaMemsetAsync, then cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma
//    "64x128x{64,128,192,256}" (D padded up), persistent: grid = SM count or the work units if
//    fewer, 384 threads (a producer and two consumer warpgroups), 168 registers, 134144 B
//    (D = 64) or 232448 B (D = 96 to 256) of shared memory. The
//    shared memory is a 128-row Q tile plus three 128-key K and V stages (D = 128: 7 x 32 KiB),
//    so a work unit is a 128-query tile of one (batch, head), streamed against 128-key tiles.
//  * decode (one query): cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma "16x128x128"
//    ("16x128x256" above D = 128, with 64-key tiles),
//    128 threads, 183 registers, 86336 B, grid (splits, KV heads, batch): a 16-row query tile
//    holds the Hq/Hkv query heads sharing a KV head; when it splits the keys,
//    cudnn::fusion::lean_reduction_kernel (grid (1, Hq, B), 256 threads, 32 registers,
//    splits * (D + 2) * 4 bytes of shared memory) merges the partial results.
#include <algorithm>
#include <numeric>
#include <queue>

#include <fmt/format.h>

#include "hw/occupancy.h"
#include "models/common.h"
#include "models/flash_common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
// The decode CTA's dependent chain, in DRAM round trips: its first 64 KiB of K and V arrive
// as one burst behind the pipeline fill (Q, first QK^T -> softmax -> PV): kDecodeFillRoundTrips;
// after that it streams at kDecodeRoundTripsPer64KiB per further 64 KiB (one 128-key tile of
// K and V at D = 128). Keys are split evenly, so a 129-key split pays the fill and a sliver.
// Calibrated on the op calibration rows and the decode steps of the calibration cases in
// validation/data/hf_models_h100.json.gz. It replaced 12 round trips per whole tile (same cap),
// which charged a 129-key split as two full tiles. 8 per 64 KiB since the loads stopped counting
// against the SM's miss slots (issue 16's fifth round): 6-12 tried, sets 3-8 best at 6 (12.98%
// against 13.32% at 12, H100), the model suites' calibration cases best at 10-12 by a tenth or
// two; 8 takes most of the first (13.07%) at no cost to the second. Refitted in issue 16's
// seventh round on the 360 sdpa_decode rows of sets 3-11 (H100), whose short caches (L < 1024)
// ran 6% slow: fill 6, 8, 10 x 5, 6.5, 8 per 64 KiB tried, 8 and 6.5 best (9.4 -> 8.5% on those
// rows; the model suites' calibration cases within a tenth or two either way). Refitted in the
// eleventh round once short caches ran their own kernel (decode_kernel) and caches of 385-512
// keys stayed unsplit, on the 459 long-cache rows of sets 3-16 (H100) and 426 (H200): unsplit
// caches of 264 to 456 keys take 7 to 8.5 us on few CTAs, about 1 us a 128-key tile, where 6.5
// round trips per 64 KiB gave 2.3 (fill 6-10 x 3-6.5 per 64 KiB x cap 3-unbounded tried; 9, 4
// and 8 best, and the 256-wide kernel's cap 24 -> 48): the long-cache rows 7.4 -> 6.8% (H100),
// 9.1 -> 8.2% (H200); all decode rows, with the short-cache kernel, 7.6 -> 6.1% and 9.4 -> 7.3%.
constexpr double kDecodeFillRoundTrips = 9.0;
constexpr double kDecodeRoundTripsPer64KiB = 4.0;
constexpr double kDecodeChainCap64KiB = 8.0;
// The "16x128x256" kernel (head dimensions above 128): its fill takes 2.75 times the 128-deep
// kernel's (its first QK^T runs 256 deep, with twice the dependent MMA steps and Q and K loads
// behind them), and its chain keeps growing to 48 x 64 KiB (its longer MMA chain per key tile
// leaves the loads less to overlap). Fitted on the 69 D = 256 sdpa_decode rows of sets 3-13 (H100
// and H200; fill 2-3 x cap 3-unbounded tried): they ran 15% (H100) and 20% (H200) slow at the
// 128-deep kernel's cap and a fill of 2 (1 x 4 x 1 heads at 88 keys take 8.7 us, at 427 keys
// 19.1). Refitted in issue 16's thirteenth round with the split rule that counts its two halves
// as one CTA (below), on the 126 D = 256 rows of sets 3-20 (H100) and 119 (H200): fill 1.75-2.75
// x cap 24-96 tried, 2.5 and 48 best; those rows 9.3 -> 7.1% (H100), 10.1 -> 8.5% (H200).
// 2.25 since the issue turns below (issue 16's nineteenth round: 2.0-2.5 tried with them).
constexpr double kDecodeWideFillScale = 2.25;
constexpr double kDecodeWideChainCap64KiB = 48.0;
// The 16-row decode kernel's softmax and MMA issue for each 128-key tile of 128-deep rows (the
// 64-deep kernel half, the 256-wide kernel's 64-key tiles over half of D the same), which the
// CTAs sharing an SM take in turn (hw::CtaWork::issue_path), as the short-cache kernel's tiles
// do (kShortDecodeIssueCyclesPerTile): launches of 133-264 CTAs, two on an SM, ran 9-17% fast
// at short keys per CTA (sets 3-33, D = 128: 128-255 keys a split 12.7% fast, H100) where one
// CTA an SM ran within 3%. Issue 16's nineteenth round, fitted on the 1,240 (H100) and 1,200
// (H200) decode rows of sets 3-33 (500-2,000 cycles and a fixed 500-2,000 a CTA tried): 5.69 ->
// 5.13% (H100), 6.75 -> 5.73% (H200), with the wide fill at 2.25.
constexpr double kDecodeIssueCyclesPerTile = 1500.0;
// cuDNN leaves caches of up to four 128-key tiles unsplit: sets 3-16 split every cache of 513
// keys and more on few CTAs (513 keys, 16 CTAs: 4 splits) and none up to 506 (1 x 2 heads at 412
// keys, 8 x 2 at 399); GPT-2 at 257 keys with 48 CTAs ran one kernel (hf_models_h100.json.gz).
constexpr std::int64_t kDecodeMinTilesToSplit = 5;
constexpr std::int64_t kDecodeMaxSplits = 64;
// The short-cache decode kernel ("knob_3 64x64xD", decode_kernel below): its fill and its
// round trips per further 64-key tile, the 64-wide kernel's fill, and the 256-wide kernel's
// scales; and the issue cycles per tile that its CTAs sharing an SM take in turn. Issue 16's
// eleventh round, fitted on the 101 short-cache rows of sets 3-16 (H100) and 94 of sets 3-13,
// 15 and 16 (H200): a lone CTA takes 4.7 us at two 64-key tiles, 5.5 at three, 6.6 at four
// (D = 128), 3.9 / 5.0 / 5.8 (D = 64) and 8.7 / 13.2 / 15.5 (D = 256); 192 CTAs of two tiles,
// two on an SM, take 8.8 (fill 4-10, 1.5-3.5 per tile, 0-4,000 cycles tried): 8.5 -> 2.7%
// (H100), 10.6 -> 3.2% (H200) where they had run as the 16-row kernel.
constexpr double kShortDecodeFillRoundTrips = 6.0;
constexpr double kShortDecodeFillRoundTrips64 = 4.0;
constexpr double kShortDecodeRoundTripsPerTile = 2.5;
constexpr double kShortDecodeWideFillScale = 2.25;
constexpr double kShortDecodeWideTileScale = 3.5;
constexpr double kShortDecodeIssueCyclesPerTile = 1500.0;
// A persistent prefill CTA's own prologue and epilogue (descriptor and barrier setup, the Q tile
// and first K/V stage, the last O tile out), in DRAM round trips: short prefills of 1-2 key tiles
// per unit take 7-10 us (ops3_h100.csv). Fitted on the 23 sdpa calibration rows of ops3_h100.csv
// and ops_h100.csv (MAPE 10.6% at 1 round trip, 7.3% at 6; refitted to 10 when the workspace
// memset before the kernel came down to its measured 0.7-0.8 us).
constexpr double kPrefillCtaFixedRoundTrips = 10.0;
// Each further causal work unit of a persistent prefill CTA costs a few DRAM round trips beyond
// its tiles: its diagonal tile is masked element by element and its softmax rescaled before the
// O tile goes out, which the next unit's loads do not hide. The dynamic scheduler hands out units
// by when CTAs free up, so this cost also sets which CTA takes which unit. The tensor-core and
// softmax phases of the kernel's two consumer warpgroups overlap a share of the shorter one
// (ping-pong scheduling). Fitted together on the 330 sdpa rows of sets 3-13 (H100 and H200;
// overlap 0-0.5 x 0-6 round trips, causal or every unit, tried): causal prefills of 256-1023
// tokens over more units than SMs had run 11-14% fast (the greedy schedule had balanced units
// that, measured, leave the heavy CTAs a further unit), long ones 5-12% slow. 0.1 and 4.5 take the
// rows from 9.9% to 8.0% (H100) and 10.2% to 7.5% (H200); charging every unit, or overlapping
// more, did a little better there but put the hand-picked and Nsight suites' many short
// non-causal units (16 x 8-128 heads at 512 tokens) 5-20% slow. Refitted in issue 16's eleventh
// round with the scheduler's order (each (batch, head)'s tiles in turn, not the longest of all
// first: lower_cudnn_sdpa), on the 420 sdpa rows of sets 3-16 (H100) and 390 (H200): 1-4.5 round
// trips x overlap 0.1-0.4 per kernel tried; 2.5 round trips, and the overlaps below, take them
// from 7.2% to 5.7% (H100) and 7.4% to 6.0% (H200). The 64-wide kernel keeps 0.1: at 0.15-0.3
// seed 001's 16 x 8-128 heads of 512 tokens ran 10-14% fast (the suite 18 -> 20-26%).
constexpr double kPrefillCausalUnitRoundTrips = 2.5;
// The 64-wide kernel's causal units cost one round trip each (issue 16's fifteenth round: at 2.5
// its causal rows of sets 3-23 ran 5-15% slow at every length, 0-2.5 tried; its non-causal rows
// and the wider kernels do not move): its O tile is half as wide, its masking half as long.
constexpr double kPrefillCausalUnitRoundTrips64 = 1.0;
constexpr double kPrefillPipeOverlap = 0.1;
// The 192- and 256-wide kernels overlap 0.3 (eleventh round, as above).
constexpr double kPrefillPipeOverlapWide = 0.3;
// The 128-wide kernel ("64x128x128", D of 65-128) overlaps more: long D = 128 prefills ran
// 12-22% slow at 0.1 on both chips. Refitted per kernel in issue 16's tenth round, once the
// H200's tensor clock was the H100's (its 360 sdpa rows of sets 3-14, H100: 7.9 -> 7.1%; 330 of
// sets 3-13, H200: 7.8 -> 7.3%; 0.2-0.4 tried, and a share growing with D, which overlapped the
// 192- and 256-wide kernels too much); 0.4 since the eleventh round (0.3-0.45 tried).
constexpr double kPrefillPipeOverlapD128 = 0.4;
// With an explicit mask the same prefill kernel runs each score tile this many times slower
// than its tensor-core time alone (loading and adding the mask tile sits between QK^T and the
// softmax). Calibrated on the masked layers of the calibration cases in
// validation/data/hf_models3_h100.json.gz (Gemma 3's windowed layers, Mistral with a window).
constexpr double kMaskedTileSlowdown = 2.0;
// The split-KV combine kernel: dependent DRAM loads before the merge, and splits merged per L2
// round trip (calibration rows of ops3_h100.csv).
constexpr std::int64_t kCombineLoadRoundTrips = 2;
constexpr std::int64_t kCombineSplitsPerL2RoundTrip = 4;
}  // namespace

namespace {
using detail::ceil_div;

constexpr std::int64_t kTileM = 128;  // query rows per work unit (prefill)
constexpr std::int64_t kTileN = 128;  // keys per inner tile

// The prefill kernel's head dimension ("64x128x{64,128,192,256}"): D padded up to it.
std::int64_t prefill_d_tile(std::int64_t D) {
  return D <= 64 ? 64 : (D <= 128 ? 128 : (D <= 192 ? 192 : 256));
}

}  // namespace

bool cudnn_sdpa_applies(const hw::HardwareSpec& hw, std::int64_t D) {
  const int v = detail::sm_version(hw);
  // Measured on H100 at head dimensions 64, 96, 128, 192 and 256 (hf_models3_h100.json.gz: Phi-3,
  // DeepSeek's 192-wide MLA heads, Gemma's 256): cuDNN runs them all.
  return (v == 90 || v == 100) && D <= 256 && D % 8 == 0;
}

std::vector<hw::Launch> lower_cudnn_sdpa(const FlashFwdProblem& p, const hw::HardwareSpec& hw) {
  const double e = detail::elt_bytes(p.dtype);
  const std::int64_t d_tile = prefill_d_tile(p.D);
  const std::int64_t m_tiles = ceil_div(p.Sq, kTileM);
  const std::int64_t n_tiles_all = ceil_div(p.Sk, kTileN);

  hw::Launch l;
  l.name = fmt::format(
      "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x{}_4x1x1_"
      "cga1x1x1_kernel0_0",
      d_tile);
  l.family = "cudnn_sdpa_fwd";
  l.block = {384, 1, 1};
  l.regs_per_thread = 168;
  l.smem_per_cta = d_tile == 64 ? 134144 : 232448;

  // Work units: (m tile, batch, head). Key tiles per unit: all, or up to the diagonal.
  struct Unit {
    std::int64_t n_tiles, rows, keys;
  };
  std::vector<Unit> per_m;
  for (std::int64_t m = 0; m < m_tiles; ++m) {
    std::int64_t n = n_tiles_all;
    if (p.causal) {
      n = std::clamp<std::int64_t>(ceil_div((m + 1) * kTileM + p.Sk - p.Sq, kTileN), 0,
                                   n_tiles_all);
      // A sliding window skips the key tiles wholly before the tile's first query's window.
      if (p.window > 0) n -= std::max<std::int64_t>(0, (m * kTileM + p.Sk - p.Sq - p.window + 1) / kTileN);
      n = std::max<std::int64_t>(n, 0);
    }
    per_m.push_back({n, std::min(kTileM, p.Sq - m * kTileM), std::min(n * kTileN, p.Sk)});
  }
  const std::int64_t units = m_tiles * p.B * p.H;
  // Persistent: one CTA per SM, fewer when there are fewer work units (the measured grids of
  // 32, 64 and 128 CTAs for 32, 64 and 128 units).
  const std::int64_t ctas = std::min<std::int64_t>(units, hw.sm_count);
  l.grid = {ctas, 1, 1};

  // The memset zeroes the dynamic tile scheduler's state; CTAs take units in order from a
  // counter: the (batch, head) pairs one after another, each one's query tiles heaviest first
  // (FA3-style reversed m). We replay that greedy schedule to get each CTA's units. (Issue 16's
  // eleventh round: taking every pair's heaviest tile first, a longest-first schedule over all
  // units, balanced mid-length causal prefills too well: 5 x 8 heads of 558 keys at D = 256 ran
  // 36.7 us against 26.3 simulated.)
  std::vector<std::int64_t> order(static_cast<std::size_t>(m_tiles));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return per_m[static_cast<std::size_t>(a)].n_tiles > per_m[static_cast<std::size_t>(b)].n_tiles;
  });
  // The scheduler's view of a unit's cost, in picoseconds: its key tiles at the tensor cores'
  // rate, and a causal unit's round trips.
  const double tile_ps = 4.0 * static_cast<double>(kTileM * kTileN * d_tile) /
                         (hw.tensor_flops_per_cycle(p.dtype) * hw.clocks.sustained_tensor_hz) * 1e12;
  const double unit_round_trips =
      d_tile == 64 ? kPrefillCausalUnitRoundTrips64 : kPrefillCausalUnitRoundTrips;
  const auto unit_ps = static_cast<std::int64_t>((p.causal ? unit_round_trips : 0.0) *
                                                 static_cast<double>(hw.dram.latency.ps()));
  struct Load {
    std::int64_t cost, cta;
    bool operator>(const Load& o) const { return cost != o.cost ? cost > o.cost : cta > o.cta; }
  };
  std::priority_queue<Load, std::vector<Load>, std::greater<>> free_at;
  for (std::int64_t c = 0; c < ctas; ++c) free_at.push({0, c});
  struct Acc {
    double scores = 0, rows = 0, keys = 0, units = 0;
  };
  std::vector<Acc> acc(static_cast<std::size_t>(ctas));
  for (std::int64_t bh = 0; bh < p.B * p.H; ++bh) {
    for (const std::int64_t m : order) {
      const Unit& u = per_m[static_cast<std::size_t>(m)];
      Load slot = free_at.top();
      free_at.pop();
      Acc& a = acc[static_cast<std::size_t>(slot.cta)];
      a.scores += static_cast<double>(kTileM * u.n_tiles * kTileN);
      a.rows += static_cast<double>(u.rows);
      a.keys += static_cast<double>(u.keys);
      a.units += 1;
      slot.cost += static_cast<std::int64_t>(static_cast<double>(std::max<std::int64_t>(u.n_tiles, 1)) * tile_ps) + unit_ps;
      free_at.push(slot);
    }
  }
  const double unique_in =
      static_cast<double>(p.B * p.H * p.Sq * p.D) * e + 2.0 * static_cast<double>(p.B * p.Hk * p.Sk * p.D) * e;
  // K and V stages the shared memory holds beside the Q tile (3 at D = 64 and 128, one at 192
  // and 256, where the measured kernels use the same 232448 bytes).
  const double stages = std::max<std::int64_t>(
      1, (l.smem_per_cta - 3072 - kTileM * d_tile * static_cast<std::int64_t>(e)) /
             (2 * kTileN * d_tile * static_cast<std::int64_t>(e)));
  for (std::int64_t c = 0; c < ctas; ++c) {
    const Acc& a = acc[static_cast<std::size_t>(c)];
    hw::CtaWork w;
    w.tensor_dtype = p.dtype;
    if (a.units > 0) {
      // Padded 128 x 128 tiles through QK^T and PV, the head dimension padded to the kernel's;
      // softmax as in FlashAttention.
      w.tensor_flops = 4.0 * a.scores * static_cast<double>(d_tile) *
                       (p.masked ? kMaskedTileSlowdown : 1.0);
      w.fp32_flops = 4.0 * a.scores + a.scores / kTileN * static_cast<double>(p.D) +
                     (p.dropout ? kDropoutOpsPerScore * a.scores : 0.0);
      w.sfu_ops = a.scores + a.scores / kTileN;
      const double q = a.rows * static_cast<double>(p.D) * e;
      w.l2_bytes = 2.0 * q + 2.0 * a.keys * static_cast<double>(p.D) * e;  // Q in, O out, K and V
      if (p.masked) w.l2_bytes += a.scores * e;  // the mask's tile beside each score tile
      w.dram_read_bytes = unique_in / static_cast<double>(ctas);
      w.dram_write_bytes = q;
      w.max_inflight_bytes = stages * 2.0 * static_cast<double>(kTileN * p.D) * e;
      w.bulk_copies = true;  // the sm_90 kernel's K and V stages arrive by TMA
      // The CTA's prologue and epilogue, once: units after the first overlap their loads with
      // the previous unit's math (warp specialization).
      w.fixed = sim::Time::from_ps(static_cast<std::int64_t>(
                    kPrefillCtaFixedRoundTrips * static_cast<double>(hw.dram.latency.ps()))) +
                hw.l2.hit_latency + sim::Time::from_ps(static_cast<std::int64_t>(a.units - 1) * unit_ps);
      // QK^T, softmax and PV of a tile depend on each other: the tensor and SIMT phases mostly
      // add up.
      w.pipe_overlap = d_tile == 64    ? kPrefillPipeOverlap
                       : d_tile == 128 ? kPrefillPipeOverlapD128
                                       : kPrefillPipeOverlapWide;
    }
    detail::add_class(l, 1, w);
  }
  l.reads = {detail::tensor(p.tag, p.q, static_cast<double>(p.B * p.H * p.Sq * p.D) * e),
             detail::tensor(p.tag, p.k, static_cast<double>(p.B * p.Hk * p.Sk * p.D) * e),
             detail::tensor(p.tag, p.v, static_cast<double>(p.B * p.Hk * p.Sk * p.D) * e)};
  l.writes = {detail::tensor(p.tag, p.o, static_cast<double>(p.B * p.H * p.Sq * p.D) * e)};
  // Size not recorded: the scheduler's counter and flags, assumed 4 bytes per CTA.
  return {detail::memset_launch(p.tag, "cudnn_workspace", 4 * hw.sm_count), l};
}

// Which of cuDNN's two decode kernels runs (sets 3-16, H100: 223 short-cache rows). Caches of
// at most one 128-key tile, and of at most two when the batch holds at most 128 query heads,
// run "knob_3 64x64xD": a 64-row query tile (four warps down its rows) against 64-key tiles,
// 142 / 213 / 175 registers and 24 / 40 / 40 KiB of shared memory at D = 64 / 128 / 256. The
// rest run "knob_35 16x128xD" (one 16-row query tile, four warps across 128-key tiles).
struct DecodeKernel {
  bool short_cache;  // "knob_3 64x64xD", else "knob_35 16x128xD"
  std::int64_t rows, tile_keys, d_tile;
  int regs;
  std::int64_t smem;
};

DecodeKernel decode_kernel(std::int64_t B, std::int64_t Hq, std::int64_t L, std::int64_t D) {
  const std::int64_t d_tile = D <= 64 ? 64 : (D <= 128 ? 128 : 256);
  if (L <= kTileN || (L <= 2 * kTileN && B * Hq <= 128)) {
    return {true, 64, 64, d_tile, d_tile == 64 ? 142 : (d_tile == 128 ? 213 : 175),
            d_tile == 64 ? 24576 : 40960};
  }
  // Head dimensions above 128 run the "16x128x256" kernel in the same shared memory, so its key
  // tiles are half as long (Gemma 2 at 1,024 keys split 16 ways, hf_models3_h100.json.gz).
  // Measured at 86336 B for head dimensions 96 to 256; below 128 the K/V stages scale with D.
  return {false, 16, D <= 128 ? kTileN : kTileN / 2, d_tile, 183,
          d_tile >= 128 ? 86336 : 86336 * d_tile / 128};
}

std::vector<hw::Launch> lower_cudnn_decode(std::int64_t B, std::int64_t Hq, std::int64_t Hkv,
                                           std::int64_t L, std::int64_t D, hw::DType dtype,
                                           const hw::HardwareSpec& hw, const std::string& tag) {
  const double e = detail::elt_bytes(dtype);
  const DecodeKernel kk = decode_kernel(B, Hq, L, D);
  const std::int64_t g = Hq / Hkv;
  const std::int64_t head_tiles = Hkv * ceil_div(g, kk.rows);
  const std::int64_t base = B * head_tiles;
  const std::int64_t d_tile = kk.d_tile;
  const std::int64_t tile_keys = kk.tile_keys;

  hw::Launch k;
  k.name = fmt::format(
      "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_{}_{}x{}x{}_{}_"
      "cga1x1x1_kernel0_0",
      kk.short_cache ? 3 : 35, kk.rows, kk.short_cache ? tile_keys : kTileN, d_tile,
      kk.short_cache ? "4x1x1" : "1x4x1");
  k.family = "cudnn_sdpa_decode";
  k.block = {128, 1, 1};
  k.regs_per_thread = kk.regs;
  k.smem_per_cta = kk.smem;

  // Split rule read off the measured grids (splits 8, 32, 16, 16, 8 for 32, 8, 2, 12, 32
  // base CTAs; none for 128 and 512): split only when the unsplit CTAs fill at most half the
  // SMs, then into the largest power of two that fits one wave of resident CTAs, at most one
  // key tile per split.
  const auto occ = hw::compute_occupancy(
      hw.sm, hw::BlockResources{128, k.regs_per_thread, k.smem_per_cta});
  const std::int64_t slots = static_cast<std::int64_t>(hw.sm_count) * std::max(1, occ.ctas_per_sm);
  // Head dimensions above 128 split the output's 256 columns over two CTAs, each computing the
  // whole QK^T for its keys (reading all of K) and half of PV (ops3_h100.csv, ops4_h100.csv.gz:
  // grid x = 2 x splits for every D = 256 decode, e.g. 32 x 1 x 5 for 16 splits). The split rule
  // counts the pair as one CTA (issue 16's thirteenth round; sets 3-20, H100: 1 x 4 heads at
  // 13,706 keys ran 64 splits, 512 CTAs; 40 x 1 at 23,702 keys 4 splits; 22 x 4 unsplit).
  const std::int64_t d_halves = D > 128 ? 2 : 1;
  std::int64_t splits = 1;
  // Counted in whole 128-key tiles whatever the kernel's tile, at most 64 splits (sets 3-20,
  // H100: 936, 939 and 996 keys split 4 ways, 1,968 keys 8; no cache more than 64 ways, 2 heads
  // at 18,988 keys 64; D = 256: 3 x 1 heads at 299 keys ran unsplit, 4 x 4 at 535 split 4 ways).
  // Caches of up to four tiles stay unsplit (kDecodeMinTilesToSplit).
  const std::int64_t split_limit = std::min(L / kTileN, kDecodeMaxSplits);
  if (2 * base <= hw.sm_count && ceil_div(L, kTileN) >= kDecodeMinTilesToSplit) {
    while (splits * 2 * base <= slots && splits * 2 <= split_limit) splits *= 2;
  }
  k.grid = {splits * d_halves, head_tiles, B};

  // cuDNN splits the keys evenly (not by whole tiles): L = 513 in 4 splits is 129 keys each.
  const std::int64_t keys_per_split = ceil_div(L, splits);
  std::vector<hw::CtaWork> per_split;
  for (std::int64_t sp = 0; sp < splits; ++sp) {
    const std::int64_t keys = std::clamp<std::int64_t>(L - sp * keys_per_split, 0, keys_per_split);
    const std::int64_t tiles = ceil_div(keys, tile_keys);
    // Query rows per CTA: g spread over its ceil(g / rows) tiles (all g when g <= rows).
    const double rows = static_cast<double>(g) / static_cast<double>(ceil_div(g, kk.rows));
    hw::CtaWork w;
    w.tensor_dtype = dtype;
    // Query tiles are computed whole even when fewer query heads share the KV head.
    const double scores = static_cast<double>(kk.rows * tiles * tile_keys);
    const double halves = static_cast<double>(d_halves);
    w.tensor_flops = 2.0 * scores * static_cast<double>(d_tile) * (1.0 + 1.0 / halves);
    w.fp32_flops = 4.0 * scores + static_cast<double>(kk.rows * D * tiles) / halves;
    w.sfu_ops = scores + static_cast<double>(kk.rows * tiles);
    const double q = rows * static_cast<double>(D) * e;
    const double k_bytes = static_cast<double>(keys * D) * e;
    // Partial results in fp32 (O row plus max and sum) when split, else the output rows.
    const double out = (splits > 1 ? rows * static_cast<double>(D + 2) * 4.0 : q) / halves;
    // Each CTA loads all of K and its half of V; DRAM sees K once (the other half's CTA hits L2).
    w.l2_bytes = q + k_bytes * (1.0 + 1.0 / halves) + out;
    const double kv = 2.0 * k_bytes / halves;
    w.dram_read_bytes = q / static_cast<double>(splits * d_halves) + kv;
    w.dram_write_bytes = out;
    // K and V arrive by cp.async into shared memory: one tile in flight bounds them (at the
    // loaded latency, hw/gpu_engine.cpp), not the SM's miss slots. A CTA an SM streams 28-31 GB/s
    // over caches of 6,000-32,000 keys at D = 64 on the H100 and the H200 alike (sets 3-17: 72
    // CTAs at 2.0-2.3 TB/s), about 16 KiB per loaded round trip. Issue 16's twelfth round: it had
    // been two tiles at the idle latency, which ran those launches 20-36% fast; the decode rows
    // of sets 3-17 6.1 -> 5.9% (H100), 7.2 -> 6.7% (H200); the model suites unchanged.
    w.max_inflight_bytes = static_cast<double>(tile_keys * D) * e;
    w.bulk_copies = true;
    w.fixed = hw.dram.latency + hw.l2.hit_latency;
    if (kk.short_cache) {
      // The short-cache kernel's chain: the first 64-key tile behind its fill, then a fixed
      // number of round trips per further tile; the 256-wide kernel's, longer (its 40 KiB of
      // shared memory cannot hold a 256-deep Q and K tile at once).
      const double fill = d_tile == 64    ? kShortDecodeFillRoundTrips64
                          : d_tile == 128 ? kShortDecodeFillRoundTrips
                                          : kShortDecodeFillRoundTrips * kShortDecodeWideFillScale;
      const double tile_scale = d_tile > 128 ? kShortDecodeWideTileScale : 1.0;
      w.critical_path = sim::Time::from_seconds(
          (fill + kShortDecodeRoundTripsPerTile * tile_scale * static_cast<double>(tiles - 1)) *
          hw.dram.latency.seconds());
      // Its 64-row tiles' softmax and MMA issue (three quarters of the rows are padding when
      // fewer than 64 query heads share a KV head): two CTAs on an SM take turns at it.
      w.issue_path = sim::Time::from_seconds(kShortDecodeIssueCyclesPerTile * tile_scale *
                                             static_cast<double>(tiles) /
                                             hw.clocks.sustained_other_hz);
      per_split.push_back(w);
      continue;
    }
    // Beyond 4 tiles' worth the chain stops growing: longer CTAs pipeline their loads (the
    // unsplit 8-tile rows: with the chain unbounded they were +52..117%, docs/engine.md); the
    // 256-wide kernel's grows further (kDecodeWideChainCap64KiB).
    // This CTA's K and V, as the kernel's tile width steps through them (D = 96 pads to 128).
    const double loaded = static_cast<double>(keys * d_tile) * e * (1.0 + 1.0 / halves);
    const double cap = D > 128 ? kDecodeWideChainCap64KiB : kDecodeChainCap64KiB;
    const double streamed = std::clamp(loaded - 64.0 * 1024, 0.0, cap * 64.0 * 1024);
    const double fill_scale = D > 128 ? kDecodeWideFillScale : 1.0;
    w.critical_path = sim::Time::from_seconds(
        (kDecodeFillRoundTrips * fill_scale + kDecodeRoundTripsPer64KiB * streamed / (64.0 * 1024)) *
        hw.dram.latency.seconds());
    const double tile_work = static_cast<double>(tile_keys) / static_cast<double>(kTileN) *
                             static_cast<double>(d_tile) / 128.0 / halves;
    w.issue_path =
        sim::Time::from_seconds(kDecodeIssueCyclesPerTile * tile_work * static_cast<double>(tiles) /
                                hw.clocks.sustained_other_hz);
    per_split.push_back(w);
  }
  for (std::int64_t bh = 0; bh < base; ++bh) {
    for (const auto& w : per_split) detail::add_class(k, d_halves, w);
  }
  const double q_total = static_cast<double>(B * Hq * D) * e;
  const double kv_total = static_cast<double>(B * Hkv * L * D) * e;
  const double partial_total = static_cast<double>(splits * B * Hq * (D + 2)) * 4.0;
  k.reads = {detail::tensor(tag, "q", q_total), detail::tensor(tag, "k", kv_total),
             detail::tensor(tag, "v", kv_total)};
  if (splits == 1) {
    k.writes = {detail::tensor(tag, "o", q_total)};
    return {k};
  }
  k.writes = {detail::tensor(tag, "o_partial", partial_total)};

  hw::Launch r;
  r.name = "void cudnn::fusion::lean_reduction_kernel<false, false, false>";
  r.family = "cudnn_sdpa_reduce";
  r.grid = {1, Hq, B};
  r.block = {256, 1, 1};
  r.regs_per_thread = 32;
  r.smem_per_cta = splits * (D + 2) * 4;
  hw::CtaWork w;
  const double in = static_cast<double>(splits * (D + 2)) * 4.0;
  const double out = static_cast<double>(D) * e;
  w.sfu_ops = 2.0 * static_cast<double>(splits);  // rescale factor exp per split, one log
  w.fp32_flops = static_cast<double>(splits) * (2.0 * static_cast<double>(D) + 4.0);
  w.l2_bytes = in + out;
  w.dram_read_bytes = in;
  w.dram_write_bytes = out;
  w.max_inflight_bytes = in;  // the partials are staged in shared memory in one go
  // The splits' statistics, then their partial outputs, are two dependent loads; the merge walks
  // the splits a few at a time (ops3_h100.csv: 2.05 us at 4-8 splits, 3.3 at 32, 3.8 at 64).
  w.fixed = sim::Time::from_ps(kCombineLoadRoundTrips * hw.dram.latency.ps()) + hw.l2.hit_latency;
  w.critical_path = sim::Time::from_ps(ceil_div(splits, kCombineSplitsPerL2RoundTrip) * hw.l2.hit_latency.ps());
  detail::add_class(r, B * Hq, w);
  r.reads = {detail::tensor(tag, "o_partial", partial_total)};
  r.writes = {detail::tensor(tag, "o", q_total)};
  return {k, r};
}

}  // namespace gpusim::models
