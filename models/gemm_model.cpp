// matmul and linear: the GEMM kernels cuBLAS / cuBLASLt (13.x, as PyTorch 2.11 calls them)
// launch.
//
// Which kernel runs a product (gemmSN, the GEMV, dot_kernel, or a SIMT, mma.sync or nvjet tiled
// kernel) and with which tile and K split is cuBLAS's choice, reproduced in gemm_selection.cpp;
// this file builds the launches of that choice (the tiled kernel with cuBLAS's workspace and
// split-K semaphore memsets and splitKreduce_kernel, gemmSN, the GEMV, dot_kernel and
// reduce_1Block_kernel) and what each of their CTAs costs.
//
// Work per CTA. cuBLAS computes whole tiles: tensor FLOPs are charged for the padded tile
// (2 * tile_m * tile_n * k_padded per tile), so edge tiles and K padded to the tile depth
// inflate the count above 2MNK. Bytes use the real extents (TMA and predicated loads do not
// fetch past the matrix), spread evenly over the tiles.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "hw/occupancy.h"
#include "models/common.h"
#include "models/families.h"
#include "models/gemm_config.h"
#include "models/gemm_selection.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using gemm_detail::base_work;
using gemm_detail::Choice;
using gemm_detail::Config;
using gemm_detail::dot_chunks;
using gemm_detail::GemmKind;
using gemm_detail::GemmPath;
using gemm_detail::GemmPlan;
using gemm_detail::gemmsn_shape;
using gemm_detail::GemmsnShape;
using gemm_detail::grid_ctas;
using gemm_detail::k_per_split;
using gemm_detail::k_step_path;
using gemm_detail::kXmmaSplitKFixedRoundTrips;
using gemm_detail::partial_bytes;
using gemm_detail::plan_gemm;
using gemm_detail::Problem;
using gemm_detail::reduce_chain_seconds;
using gemm_detail::reduces_in_own_kernel;
using gemm_detail::runs_ffma;
using gemm_detail::simt_ffma_share;
using gemm_detail::simt_k_step_path;
using gemm_detail::units_of;
using gemm_detail::xmma_splitk_chain_seconds;
using gemm_detail::xmma_splitk_ctas_per_tile;

// SM cycles one K step of an nvjet mainloop takes at least: the consumer waits on its stage's
// barrier, runs its wgmma chain, and releases the stage to the TMA producer. A kernel of few CTAs
// runs at this pace however few bytes a step moves (random sets 3-8 on the H100: 1-16 CTAs of
// 64x8 and 64x16 tiles take 0.08-0.09 us more per 64-deep step from 1 to 35 steps, 4-10 KiB
// each; 150-210 tried, 180 best). The SM's L2 port (126 GB/s, validation/data/sm_port_h100.json)
// would move such a step in 0.03-0.08 us.
constexpr double kNvjetStepCycles = 180.0;

double nvjet_step_path(const hw::HardwareSpec& hw, const Config& c, double k_per_cta) {
  return std::ceil(k_per_cta / static_cast<double>(c.tile_k)) * kNvjetStepCycles / hw.clocks.boost_hz;
}

std::string dtype_code(hw::DType d) {
  switch (d) {
    case hw::DType::kBf16: return "tst";  // bf16 in, fp32 accumulate, bf16 out
    case hw::DType::kFp16: return "hsh";
    case hw::DType::kFp8: return "qqtst";  // not measured: fp8 in, bf16 out
    case hw::DType::kTf32: return "tf32";
    case hw::DType::kFp32: return "f32";
  }
  return "?";
}

// An sm80_xmma SIMT kernel's name; `part` is "execute_kernel" for the GEMM itself and
// "execute_split_k_kernel" for its split-K reduce.
std::string xmma_simt_name(const Config& c, bool linear, std::string_view part) {
  return fmt::format(
      "sm80_xmma_gemm_f32f32_f32f32_f32_{}_n_tilesize{}x{}x8_stage3_warpsize{}_ffma_aligna4_"
      "alignc4_{}__5x_cublas",
      linear ? "tn" : "nn", c.tile_m, c.tile_n,
      c.threads == 64 ? "1x2x1" : c.tile_m * c.tile_n >= 128 * 64 ? "2x2x1" : "1x4x1", part);
}

std::string kernel_name(const Config& c, std::int64_t split, hw::DType d, bool linear) {
  const char* layout = linear ? "TNT" : "NNT";  // F.linear reads W transposed
  switch (c.kind) {
    case GemmKind::kNvjet:
      return fmt::format("nvjet_sm90_{}_{}x{}_{}x{}_{}x{}_{}_bz{}_{}{}", dtype_code(d), c.tile_n,
                         c.tile_m, c.tile_k, c.stages, c.cluster_n, c.cluster_m, c.sched,
                         split > 1 ? "_splitK" : c.coop, std::string(layout).substr(0, 2),
                         c.out_layout);
    case GemmKind::kSm90Tf32:
      return fmt::format(
          "sm90_xmma_gemm_f32f32_tf32f32_f32_{}_n_tilesize{}x{}x{}_warpgroupsize{}x1x1_execute_"
          "segment_k_off_kernel__5x_cublas",
          linear ? "tn" : "nn", c.tile_m, c.tile_n, c.tile_k, c.consumer_warpgroups);
    case GemmKind::kSimtSingle:
      return fmt::format("cutlass_80_simt_sgemm_{}x{}_8x{}_{}_align1", c.tile_n, c.tile_m, c.stages,
                         linear ? "tn" : "nn");
    case GemmKind::kSimtBatched:
      return xmma_simt_name(c, linear, "execute_kernel");
    case GemmKind::kMmaSync:
      if (c.xmma_tf32_small) {
        return fmt::format(
            "sm80_xmma_gemm_f32f32_tf32f32_f32_{}_n_tilesize32x32x64_stage3_warpsize2x2x1_tensor16x8x8_"
            "aligna4_alignc4_execute_kernel__5x_cublas",
            linear ? "tn" : "nn");
      }
      if (c.wmma) {
        const std::string t = d == hw::DType::kBf16 ? "bf16" : "f16";
        return fmt::format("cutlass_{0}_wmma_tensorop_{1}_s161616gemm_{1}_{2}x{3}_{4}x{5}_{6}_align{7}",
                           c.align == 1 ? 75 : 80, t, c.tile_n, c.tile_m, c.tile_k, c.stages,
                           linear ? "tn" : "nn", c.align);
      }
      if (c.align < 8) {
        const bool sm75 = c.register_staged;
        return fmt::format("cutlass_{}_tensorop_{}gemm_{}_{}x{}_{}{}_align{}", sm75 ? 75 : 80,
                           sm75 || d == hw::DType::kTf32 ? "s1688" : "s16816",
                           d == hw::DType::kBf16 ? "bf16" : d == hw::DType::kFp16 ? "f16" : name(d),
                           c.tile_n, c.tile_m,
                           sm75 ? "" : fmt::format("{}x{}_", c.tile_k, c.stages),
                           linear ? "tn" : "nn", c.align);
      }
      return fmt::format(
          "sm80_xmma_gemm_{0}{0}_{0}f32_f32_{1}_n_tilesize{2}x{3}x{4}_stage{5}_warpsize{6}_"
          "tensor16x8x16_kernel",
          d == hw::DType::kBf16 ? "bf16" : d == hw::DType::kFp16 ? "f16" : name(d),
          linear ? "tn" : "nn", c.tile_n, c.tile_m, c.tile_k, c.stages,
          c.threads == 256 ? "4x2x1" : "2x2x1");
    case GemmKind::kGemv:
      return fmt::format("internal::gemvx::kernel<{}>", name(d));
  }
  return "gemm";
}

struct Names {
  std::string a, b, c, bias;
};

// The main GEMM launch of a choice.
hw::Launch tile_launch(const hw::HardwareSpec& hw, const Problem& p, const Choice& ch, bool bias,
                       bool linear, const Names& names, const std::string& tag) {
  const Config& c = ch.cfg;
  const double e = detail::elt_bytes(p.dtype);
  const std::int64_t s = ch.split;
  const std::int64_t units = units_of(p, c, s);
  const std::int64_t ctas = grid_ctas(hw, p, c, s);
  const double kk = static_cast<double>(k_per_split(p, c, s));

  hw::Launch l;
  l.name = kernel_name(c, s, p.dtype, linear);
  l.family = "gemm";
  if (c.kind == GemmKind::kSm90Tf32) {
    l.grid = {ctas / 2, 2, 1};  // 66x2 for 4096^3 tf32
  } else if (c.persistent) {
    const std::int64_t per_cluster = c.cluster_n * c.cluster_m;
    l.grid = {per_cluster, ctas / per_cluster, 1};  // 2x64, 4x29, 8x12, 2x66 in ops_h100.csv
  } else {
    l.grid = {ceil_div(p.M, c.tile_m) * s, ceil_div(p.N, c.tile_n), p.batch};
    // The CUTLASS SIMT kernel linearizes its tile grid (2048^3 fp32: grid 128x1x1).
    if (c.kind == GemmKind::kSimtSingle) l.grid = {units, 1, 1};
  }
  l.block = {c.threads, 1, 1};
  l.regs_per_thread = c.regs;
  l.smem_per_cta = c.smem;
  // cuBLAS launches its sm_90 kernels with cluster dimensions (nvjet's in its name).
  if (c.kind == GemmKind::kNvjet || c.kind == GemmKind::kSm90Tf32) {
    l.cluster_ctas = c.cluster_n * c.cluster_m;
  }
  l.prologue_loads = true;  // base_work's fixed time holds the first stages' loads

  // Per unit (one tile, one K split): padded math, real-extent bytes spread over the units.
  hw::CtaWork unit = base_work(hw, p.dtype);
  unit.fixed = unit.fixed - sim::Time::from_ps(c.prologue_saved_half_round_trips * hw.dram.latency.ps() / 2);
  if (c.kind == GemmKind::kNvjet) {
    unit.critical_path = sim::Time::from_seconds(nvjet_step_path(hw, c, kk));
  }
  // A bias epilogue loads the bias before its first store: one more DRAM round trip (sets 3-8:
  // small "_bias" nvjet kernels 0.3-0.5 us slower than the same shapes without; issue 16's
  // twelfth round, sets 3-17: one-step align1 kernels with the bias 18% slower than simulated
  // without it). A split with a reduce kernel adds the bias there instead.
  const bool bias_epilogue = c.kind == GemmKind::kNvjet || c.kind == GemmKind::kMmaSync;
  if (bias && bias_epilogue && !ch.reduce) unit.fixed = unit.fixed + hw.dram.latency;
  const double flops = 2.0 * static_cast<double>(c.tile_m * c.tile_n) * kk;
  // SIMT kernels run FFMA whatever the operand type (cuBLAS sends some tf32 products to them).
  if (p.dtype == hw::DType::kFp32 || runs_ffma(c)) {
    unit.fp32_flops = flops;
    unit.fp32_efficiency = simt_ffma_share(c);
  } else {
    unit.tensor_flops = flops;
  }
  const double a_bytes = static_cast<double>(p.batch * p.M * p.K) * e;
  const double b_bytes = static_cast<double>(p.batch * p.K * p.N) * e;
  const double c_elt = ch.reduce ? partial_bytes(p, ch.partials_16bit) : e;
  const double c_bytes = static_cast<double>(p.batch * p.M * p.N) * c_elt * static_cast<double>(s);
  const double bias_bytes = bias ? static_cast<double>(p.N) * e : 0.0;
  // Every tile reads a tile_m-row slab of A and a tile_n-column slab of B over its K range;
  // the tiles of one cluster multicast what they share (TMA multicast on sm_90): the cluster_n
  // tiles along N fetch their A slab from L2 once, the cluster_m tiles along M their B slab.
  const double slab_bytes = (static_cast<double>(p.batch * p.M) * static_cast<double>(p.K) *
                                 static_cast<double>(ceil_div(p.N, c.tile_n)) /
                                 static_cast<double>(c.cluster_n) +
                             static_cast<double>(p.batch * p.N) * static_cast<double>(p.K) *
                                 static_cast<double>(ceil_div(p.M, c.tile_m)) /
                                 static_cast<double>(c.cluster_m)) *
                            e;
  const double u = static_cast<double>(units);
  unit.dram_read_bytes = (a_bytes + b_bytes + bias_bytes) / u;
  unit.dram_write_bytes = c_bytes / u;
  // Everything from or to DRAM passes through L2 at least once (multicast cannot go below that).
  unit.l2_bytes = std::max((slab_bytes + c_bytes + bias_bytes * ceil_div(p.M, c.tile_m) * s) / u,
                           unit.dram_read_bytes + unit.dram_write_bytes);
  unit.max_inflight_bytes = static_cast<double>(c.stages * (c.tile_m + c.tile_n) * c.tile_k) * e;
  unit.bulk_copies = c.kind == GemmKind::kNvjet || c.kind == GemmKind::kSm90Tf32;  // TMA loads
  unit.tensor_efficiency = gemm_detail::tensor_efficiency(hw, p.dtype, c);
  // Chained K steps (align1 kernels, the small tf32 xmma kernel): every step waits for its loads.
  const double step_issue = gemm_detail::k_step_issue_seconds(hw, c, kk);
  if (c.k_step_round_trips > 0) {
    unit.critical_path = sim::Time::from_seconds(k_step_path(hw, c, kk) + step_issue);
  }
  // The epilogue's stores follow the mainloop whatever bounds it: serial, not overlapped (only
  // the mma.sync kernels have them, one tile a CTA).
  unit.fixed = unit.fixed + sim::Time::from_seconds(c.epilogue_chain_cycles /
                                                    hw.clocks.sustained_other_hz);
  unit.issue_path = sim::Time::from_seconds(c.epilogue_issue_cycles / hw.clocks.sustained_other_hz +
                                            step_issue);
  // Serial split-K: a slice reads what the slices before it added, adds its own and signals the
  // next; the fixups of one tile follow each other.
  if (ch.serial) {
    unit.critical_path = unit.critical_path + sim::Time::from_ps(2 * s * hw.dram.latency.ps());
    unit.l2_bytes += static_cast<double>(c.tile_m * c.tile_n) * 4.0;
  }
  if (runs_ffma(c)) {
    unit.critical_path = sim::Time::from_seconds(simt_k_step_path(hw, kk, c));
  }

  for (const auto& share : detail::split_evenly(units, ctas)) {
    hw::CtaWork w = unit;
    const double n = static_cast<double>(share.items);
    w.tensor_flops *= n;
    w.fp32_flops *= n;
    w.l2_bytes *= n;
    w.dram_read_bytes *= n;
    w.dram_write_bytes *= n;
    w.critical_path = sim::Time::from_ps(w.critical_path.ps() * share.items);
    w.issue_path = sim::Time::from_ps(w.issue_path.ps() * share.items);
    if (share.items == 0) w.fixed = sim::Time();
    detail::add_class(l, share.ctas, w);
  }
  l.reads = {detail::tensor(tag, names.a, a_bytes), detail::tensor(tag, names.b, b_bytes)};
  // An operand only one row (column) of tiles reads is streamed once: cuBLAS's TMA loads give it
  // an evict-first hint, so it does not push resident lines out of L2.
  l.reads[0].evict_first = ceil_div(p.N, c.tile_n) == 1;
  l.reads[1].evict_first = ceil_div(p.M, c.tile_m) == 1;
  if (bias) l.reads.push_back(detail::tensor(tag, names.bias, bias_bytes));
  l.writes = {detail::tensor(tag, ch.reduce ? "splitk_workspace" : names.c, c_bytes)};
  return l;
}

// The work every split-K reduce does, whichever kernel sums the partials: read `split` partials
// of the output (`partial_bytes` an element) (and the bias, `bias_reads` times through L2), add
// them and write the output, spread evenly over the launch's CTAs. `w` brings the kernel's own
// latency structure.
void add_reduce_work(hw::Launch& l, const Problem& p, std::int64_t split, double partial_bytes,
                     bool bias, std::int64_t bias_reads, hw::CtaWork w, const Names& names,
                     const std::string& tag) {
  const double e = detail::elt_bytes(p.dtype);
  const double ctas = static_cast<double>(l.grid.count());
  const double in = static_cast<double>(split * p.batch * p.M * p.N) * partial_bytes;
  const double out = static_cast<double>(p.batch * p.M * p.N) * e;
  const double bias_bytes = bias ? static_cast<double>(p.N) * e : 0.0;
  w.fp32_flops = static_cast<double>(split * p.batch * p.M * p.N) / ctas;  // one add per partial
  w.l2_bytes = (in + out + bias_bytes * static_cast<double>(bias_reads)) / ctas;
  w.dram_read_bytes = (in + bias_bytes) / ctas;
  w.dram_write_bytes = out / ctas;
  detail::add_class(l, l.grid.count(), w);
  l.reads = {detail::tensor(tag, "splitk_workspace", in)};
  if (bias) l.reads.push_back(detail::tensor(tag, names.bias, bias_bytes));
  l.writes = {detail::tensor(tag, names.c, out)};
}

// cublasLt::splitKreduce_kernel<32, 16, ...>: 32x16 threads, one output element each; grid
// (ceil(N / 32), ceil(M / 16)) (ops_h100.csv: 128 CTAs for N = 4096, 48 for N = 1536).
hw::Launch splitk_reduce(const hw::HardwareSpec& hw, const Problem& p, std::int64_t split,
                         bool partials_16bit, bool bias, const Names& names,
                         const std::string& tag) {
  hw::Launch l;
  // Template arguments as cuBLAS names them: the partials' type (float, or the output's for the
  // 16-bit-partial variants, as partial_bytes costs them), then the output type. fp16's reduces
  // take float partials too (88 of the 123 launches of sets 3-30 on the H100, after the tiled
  // kernels that name their inputs first: "s1688gemm_f16", nvjet "hsh"), __half only after the
  // "f16_s1688gemm"-style kernels, as bf16's.
  const char* out_type = p.dtype == hw::DType::kFp16  ? "__half"
                         : p.dtype == hw::DType::kBf16 ? "__nv_bfloat16"
                                                       : "float";
  l.name = fmt::format("cublasLt::splitKreduce_kernel<32, 16, int, {1}, {0}, float, {0}>", out_type,
                       partials_16bit ? out_type : "float");
  l.family = "gemm_splitk_reduce";
  l.grid = {ceil_div(p.N, 32), ceil_div(p.M, 16), p.batch};
  l.block = {32, 16, 1};
  l.regs_per_thread = 32;
  l.smem_per_cta = 0;
  hw::CtaWork w;
  const double bytes = partial_bytes(p, partials_16bit);
  w.max_inflight_bytes = 512.0 * bytes * static_cast<double>(split);  // each thread its partials
  w.critical_path = sim::Time::from_seconds(reduce_chain_seconds(hw, split));
  // Before that chain, one DRAM round trip (random sets 3-8 on the H100: the reduce of s
  // partials takes 1.37 + 0.032 s us, 36 to 257 partials; the chain alone gives 1 + 0.036 s).
  w.fixed = hw.dram.latency;
  add_reduce_work(l, p, split, bytes, bias, ceil_div(p.M, 16), w, names, tag);
  return l;
}

// The sm80_xmma SIMT kernels' own split-K reduce (gemm_config.h, xmma_splitk_chain_seconds):
// grid (tiles along M, tiles along N, CTAs a tile), the main kernel's threads, 72 registers and
// shared memory for its share of the tile (sets 3-19, H100: 4608 B for 64x32 tiles, 8704 for
// 64x64).
hw::Launch xmma_splitk_reduce(const hw::HardwareSpec& hw, const Problem& p, const Choice& ch,
                              bool linear, bool bias, const Names& names, const std::string& tag) {
  const Config& c = ch.cfg;
  const std::int64_t per_tile = xmma_splitk_ctas_per_tile(c);
  hw::Launch l;
  l.name = xmma_simt_name(c, linear, "execute_split_k_kernel");
  l.family = "gemm_splitk_reduce";
  l.grid = {ceil_div(p.M, c.tile_m), ceil_div(p.N, c.tile_n), p.batch * per_tile};
  l.block = {c.threads, 1, 1};
  l.regs_per_thread = 72;
  l.smem_per_cta = c.tile_m * c.tile_n * 4 / per_tile + 512;
  hw::CtaWork w;
  w.critical_path = sim::Time::from_seconds(xmma_splitk_chain_seconds(hw, c, ch.split));
  w.fixed = sim::Time::from_ps(kXmmaSplitKFixedRoundTrips * hw.dram.latency.ps());
  add_reduce_work(l, p, ch.split, partial_bytes(p, false), bias, l.grid.x, w, names, tag);
  return l;
}

// Dependent DRAM round trips a streaming GEMM CTA waits before its loads flow (the x rows, then
// the weights they index), fitted on the small gemmSN calibration rows of ops3_h100.csv.
constexpr std::int64_t kStreamingFixedRoundTrips = 2;
constexpr double kGemmsn16BitNnBytesInFlight = 6.0;
// With rows of 2- or 4-element loads, about 10 bytes from K = 256 on: its deep launches then
// follow the K chain (4x100x4012 in 69 us, 5x52x2002 in 35; at 6 bytes they ran 40-46% slow; the
// few-row probe, small_gemm_h200.json.gz; 10-16 alike).
constexpr double kGemmsn16BitVectorBytesInFlight = 10.0;
constexpr std::int64_t kGemmsnVectorMinK = 256;
// gemmSN TN's threads keep 10 bytes of weights in flight and walk K / 16 steps each (16 K groups,
// gemmsn_shape). Its template instances for exactly 2 and 4 rows (the eighth argument true) stream
// at that: 0.21 of a DRAM round trip a step on few CTAs (2x109x6072 on 14 CTAs, 4x95x1528), and
// GPT-2's 2x50257x768 lm_head at 1.9 TB/s. The others pad their rows (3 rows run the 4-row
// instance, 5 and 6 the 6-row one, 7 and 8 the 8-row one, ...), check each against M, and step at
// half a round trip, a chain that DRAM load stretches (issue 16's twenty-third round, the few-CTA
// launches of sets 3-40, alike on both chips: 3x99x2676 0.49, 13x25x1184 0.52, 14x15x596 0.59,
// 7x28x4411 0.53; the 6-row instance below). Fitted there: the bytes 4-12 (6-12 alike), the padded
// step 0.4-0.55 tried; with the selection windows (uses_gemmsn) and the 6-row step the rows that
// ran gemmSN TN 31 -> 14% (H100), 30 -> 15% (H200). (Until then 8 bytes for the exact instances and
// 4 for the padded ones, without the chain: tiny launches ran 15-25% fast, few-CTA deep ones 25-60%
// slow. The chain for the exact ones too, at 0.21, fits M = 2's widest launches of odd K
// (2x11321x3335 at 1.33 TB/s) but runs GPT-2's lm_head 40% slow.)
constexpr double kGemmsnTnBytesInFlight = 10.0;
constexpr double kGemmsnTnPaddedStepRoundTrips = 0.5;
// Its 6-row instance (5-6 rows, and 11-12 as two groups) steps at about a third of a round trip
// (6x6x2899 on one CTA 0.34, 11x7x754 0.33, 12x29x3705 on 8 CTAs 0.33, the last in set 41).
constexpr double kGemmsnTnSixRowStepRoundTrips = 0.35;
bool gemmsn_tn_exact_rows(const Problem& p) { return p.M == 2 || p.M == 4; }
// The TN instances' registers and shared memory as measured (sets 3-23, H100): 1.5 KiB of shared
// memory a row, one more for the padded instances (3, 6, 10.5, 13.5, 16.5 and 22.5 KiB for 2,
// exactly 4, 6, 8, 10 and 14 rows); 75 registers for 2 rows, 89 for exactly 4, 63 for the padded
// 4-row instance (3 rows), 83 for 8 rows, 90-92 for 6, 10 and 14.
int gemmsn_tn_regs(const Problem& p, const GemmsnShape& g) {
  if (g.rows <= 2) return 75;
  if (g.rows == 4) return gemmsn_tn_exact_rows(p) ? 89 : 63;
  return g.rows == 8 ? 83 : 91;
}
std::int64_t gemmsn_tn_smem(const Problem& p, const GemmsnShape& g) {
  return 1536 * (g.rows + (gemmsn_tn_exact_rows(p) ? 0 : 1));
}
constexpr double kGemmsnFp32NnBytesInFlight = 12.0;
// gemmSN's K loop: every thread walks K / k_groups steps in turn (kernel template arguments,
// gemmsn_shape), about 60-70 ns a step on the H100 wherever few CTAs run (4x4x287 in 6.6 us,
// 14x2x359 in 7.3, 16x16x64 fp32 in 4.1 against 2.5 at K = 16), a fifth of a DRAM round trip: its
// loads arrive a few steps ahead. One round trip before the first. Issue 16's eleventh round,
// with the row groups and their threads (gemmsn_shape), fitted on the 140 gemmSN NN rows of sets
// 3-16 (H100) and 132 (H200): 0.1-0.25 per step x 0-2 before tried (and 0-100 issue cycles per
// step shared on the SM, no better): 18.9 -> 12.5% (H100), 17.9 -> 14.0% (H200).
constexpr double kGemmsnStepRoundTrips = 0.2;
constexpr double kGemmsnChainFixedRoundTrips = 1.0;

// The GEMV (gemvx) waits one and a half DRAM round trips more than gemmSN: its warps' reduction
// and the stores behind it (sets 3-8 on the H100: one-row products of K = 2..30 take 2.3-2.8 us
// against 1.85 simulated with two; 3-4 tried, the GEMV rows 28 -> 16% (bf16), 20 -> 12% (tf32)).
constexpr double kGemvFixedRoundTrips = 3.5;
// gemvx's short variant serves rows of K up to 128 bytes (sets 3-21, H100: bf16 K <= 52 and
// fp32 K <= 31 ran it, 120x1x73 bf16 and 1213x1x70 fp32 the long one), with 32 registers a
// thread; the long variant holds 158-166 (issue 16's fourteenth round).
constexpr double kGemvShortMaxRowBytes = 128.0;
constexpr int kGemvShortRegs = 32;
constexpr int kGemvLongRegs = 160;
// A 16-bit matmul's one-row product of a short row (K within 128 bytes) runs gemv2N_kernel, not
// gemvx: 128 outputs a CTA of 128 threads, each thread walking K alone, a quarter of a DRAM round
// trip a step (sets 3-30, H100: 1x66x37 in 5.7 us, 1x1271x25 fp16 in 5.0, 1x1235x15 in 4.0,
// 1x538x10 in 3.6, K = 2-5 in 2.0-2.5; gpusim had run gemvx's short variant, 30-55% fast from
// K = 10). Its fixed part is half a round trip shorter than gemvx's (0.2-0.3 a step x 2.5-3.5
// tried: the 37 rows the change touches 21.4 -> 17.2% (H100), 23.8 -> 20.2% (H200)). fp32's
// short rows run gemvx on 32 outputs of 64 threads (32x2 blocks as measured). Issue 16's
// eighteenth round.
constexpr std::int64_t kGemv2NOutputsPerCta = 128;
constexpr double kGemv2NStepRoundTrips = 0.25;
// Narrow products step faster: a row of W of N outputs holds N x 2 bytes, so 1x2x25 and 1x3x45
// wait on a new sector every 8-5 steps (2.9 and 4.3 us measured on the H100, 0.10-0.14 of a round
// trip a step, where 1x66x37 and 1x1271x25 take 0.28-0.34), the rest hitting L1 at about a third
// of the full step. Issue 16's twenty-third round: floors of 0.25-0.5 alike; the op sets 7.554 ->
// 7.542% (H100), 8.276 -> 8.264% (H200).
constexpr double kSectorBytes = 32.0;
constexpr double kGemv2NMinStepShare = 0.35;
constexpr double kGemv2NFixedRoundTrips = 3.0;
constexpr std::int64_t kGemvShortFp32RowOutputsPerCta = 32;
constexpr int kGemvShortFp32RowThreads = 64;
// Outputs bounds of the long variant's grids (gemv_shape), and its 512-thread CTAs.
constexpr std::int64_t kGemvFewOutputs = 2048;
constexpr std::int64_t kGemvManyOutputs = 8192;
constexpr std::int64_t kGemvRowFewOutputs = 1024;
constexpr std::int64_t kGemvRowManyOutputs = 4096;
constexpr int kGemvWideThreads = 512;
constexpr int kGemvWideRegs = 128;
// A matmul's 16-bit row on the long variant: the threads of an output (its blocks are outputs x
// K-threads: 4x32, 16x32, 64x8, 32x4 as measured) load one element of W's rows a step, a tenth of
// a DRAM round trip apart (issue 16's twenty-third round, sets 3-40: 1x2x649 on one CTA 3.2 us,
// 1x2x1063 3.7, 1x11x1806 4.8, 1x4156x595 7.3; without the chain those rows ran 15-40% fast).
// 0.06-0.2 tried (0.1-0.12 alike), and for the 4- and 16-output variants only: the op sets
// 7.580 -> 7.560% (H100), 8.310 -> 8.281% (H200).
constexpr double kGemvRowStepRoundTrips = 0.1;
// fp32 (and tf32) matmul rows with two K-threads an output, as the few-row probe measured them
// (small_gemm_h200.json.gz: 64x2 blocks at K = 298 for every N, 32x2 for 1,002-3,002 outputs at
// K = 502-802; sets 3-41: 1x2938x296, 1x31x285, 1x9x328 tf32 on 64x2, 1x1068x770, 1x999x1123,
// 1x2434x429 on 32x2): each thread walks K / 2 steps at 0.07 of a round trip (1x999x1123 in 15.4
// us, 1x1002x802 in 12.3; gpusim's 4- and 16-output blocks had run them 36-66% fast).
constexpr std::int64_t kGemvFp32Row64x2MinK = 200;
constexpr std::int64_t kGemvFp32Row64x2MaxK = 340;
constexpr std::int64_t kGemvFp32Row32x2MinN = 600;
constexpr std::int64_t kGemvFp32Row32x2MaxN = 3500;
constexpr std::int64_t kGemvFp32Row32x2MaxK = 1150;
constexpr double kGemvFp32RowStepRoundTrips = 0.07;
// Its 4-byte loads, about 14 steps of them a round trip: 56 bytes a thread in flight.
constexpr double kGemvFp32RowBytesInFlight = 56.0;

// The CTAs of a kernel that streams the weights once from DRAM (GEMV, gemmSN): `mats` weight
// matrices of N x K, `rows` input rows of K per matrix, spread evenly over the launch's grid,
// each CTA keeping `inflight` bytes of loads outstanding and waiting `fixed_round_trips` DRAM
// round trips (and an L2 hit) beyond its streaming and `chain` of dependent steps; it ends with a
// reduction and the store. `slab_readers` CTAs read each column block's weights through L2.
// Split `split` ways along K (grid z), each CTA stores fp32 partials for a reduce kernel (which
// adds any bias: the caller passes `bias` only for an unsplit kernel).
struct StreamingCta {
  double inflight = 0;
  double fixed_round_trips = 0;
  std::int64_t slab_readers = 1;
  std::int64_t split = 1;
  sim::Time chain;
};

void fill_streaming_gemm(hw::Launch& l, const hw::HardwareSpec& hw, std::int64_t mats, std::int64_t N,
                         std::int64_t K, std::int64_t rows, bool bias, double e,
                         const StreamingCta& s, const Names& names, const std::string& tag) {
  const double ctas = static_cast<double>(l.grid.count());
  const double w_bytes = static_cast<double>(mats * N * K) * e;
  const double x_bytes = static_cast<double>(rows * K) * e;
  const bool partials = s.split > 1;
  const double out = static_cast<double>(rows * N) * (partials ? 4.0 * static_cast<double>(s.split) : e);
  const double bias_bytes = bias ? static_cast<double>(N) * e : 0.0;
  hw::CtaWork w;
  w.fp32_flops = 2.0 * static_cast<double>(rows * N * K) / ctas;
  const double slabs = w_bytes * static_cast<double>(s.slab_readers);
  w.l2_bytes = (slabs + x_bytes * static_cast<double>(l.grid.x) + out + bias_bytes) / ctas;
  w.dram_read_bytes = (w_bytes + x_bytes + bias_bytes) / ctas;
  w.dram_write_bytes = out / ctas;
  w.max_inflight_bytes = s.inflight;
  // The first loads, then the final reduction and the store behind them.
  w.fixed =
      sim::Time::from_seconds(s.fixed_round_trips * hw.dram.latency.seconds()) + hw.l2.hit_latency;
  w.critical_path = s.chain;
  detail::add_class(l, l.grid.count(), w);
  l.reads = {detail::tensor(tag, names.a, x_bytes), detail::tensor(tag, names.b, w_bytes)};
  if (bias) l.reads.push_back(detail::tensor(tag, names.bias, bias_bytes));
  l.writes = {detail::tensor(tag, partials ? "splitk_workspace" : names.c, out)};
}

// cuBLAS's GEMV kernels for one-row (one-column) products: gemvx, its CTAs' warps streaming W
// (gemv_shape gives the grids), and on Hopper gemv2T_kernel_val, where each output walks a
// contiguous row (a column over A's rows, or F.linear's one-row product over W's rows) and there
// are many outputs or K is deep: 8 outputs per CTA and 66 registers (sets 3-21, H100:
// 11777x1x210, 12946x1x607, 11422x1x2142, 12942x1x2579, 1x9384x1487 linear, 7548x1x4493 on
// outputs/8 CTAs; 6844x1x239 ran gemvx). Off Hopper gemvx (seed 003's RTX 5090 decode:
// 1x11008x4096 linear).
constexpr std::int64_t kGemv2TMinOutputs = 8192;
constexpr std::int64_t kGemv2TMinK = 4096;
constexpr std::int64_t kGemv2TOutputsPerCta = 8;
constexpr int kGemv2TThreads = 128;
constexpr int kGemv2TRegs = 66;
// gemv2T of fewer CTAs than four an SM splits K to about two waves of resident CTAs, at most 8
// ways, with splitKreduce_kernel after (2977x1x8286 on 373x1x5, 3654x1x6443 and 3725x1x9235 on
// 4 slices of 457 and 466, 979x1x9269 on 123x1x8, 127x1x7108 and 1x77x5869 linear 8 ways;
// 7548x1x4493 on 944 CTAs and 5997x1x4629 on 750 unsplit). Misses: 742x1x8298 and 1x2454x6496
// (linear) ran gemvx unsplit; 127x1x7108 and 1x77x5869 run the dot kernels here (at most 128
// outputs, kDotMaxProducts).
// Bytes a GEMV thread keeps in flight: two 16-byte loads; gemv2T's 16-bit instances stream
// at 1.2-1.6 TB/s where its tf32 ones reach 1.9-2.1 (sets 3-40, H100: 8547x1x7995 bf16 in 88 us,
// 12942x1x2579 fp16 in 42; 5997x1x4629 tf32 in 52), as about 10 bytes a thread would
// (issue 16's twenty-third round: 8-16 tried; the op sets 7.529 -> 7.521% (H100), 8.255 ->
// 8.245% (H200)).
constexpr double kGemvBytesInFlight = 32.0;
constexpr double kGemv2T16BitBytesInFlight = 10.0;
constexpr std::int64_t kGemv2TSplitMaxCtasPerSm = 4;
constexpr std::int64_t kGemv2TSplitWaves = 2;
constexpr std::int64_t kGemv2TMaxSplit = 8;

std::int64_t gemv2t_split(const hw::HardwareSpec& hw, std::int64_t ctas) {
  if (ctas >= kGemv2TSplitMaxCtasPerSm * hw.sm_count) return 1;
  const auto occ = hw::compute_occupancy(hw.sm, hw::BlockResources{kGemv2TThreads, kGemv2TRegs, 0});
  const std::int64_t target = kGemv2TSplitWaves * occ.ctas_per_sm * hw.sm_count;
  return std::clamp<std::int64_t>((target + ctas / 2) / ctas, 1, kGemv2TMaxSplit);
}

// One GEMV launch's shape: outputs per CTA, threads and registers, as the measured grids give
// them (sets 3-23, H100). The short-K variant (a row of K within 128 bytes) takes 64 outputs a CTA
// (1x2572x2 on 41 CTAs, 15111x1x13 on 237) with 32 registers a thread. The long variant's CTAs
// hold 158-166: three an SM, so the 1711 CTAs of 6844x1x239 run in four and a half waves (9.95 us
// measured, 5.85 simulated in one). Its outputs per CTA: 4 where each output walks a contiguous
// row (columns over A's rows, 6844x1x239; F.linear's rows below 2048 outputs, 1x902x234 on 226)
// and 16 above (1x3325x574); a matmul's 16-bit row, whose outputs are W's columns, 4 below 1024
// outputs (1x113x893 on 29 CTAs), 16 on 512 threads below 4096 (1x2581x787 on 162, 1x1201x3565 on
// 76), 64 on 512 threads below 8192 (1x5179x1097 on 81, 1x6512x647 on 102) and 32 above (1x9946x782
// on 311); the 512-thread CTAs hold 128 registers. fp32 rows keep 4, 16 and 32 by the linear
// rows' bounds (their measured grids vary more: 32x2, 4x32, 8x32, 64x2 and 64x8 blocks).
struct GemvShape {
  bool gemv2t = false;
  bool gemv2n = false;  // gemv2N_kernel: one thread an output, walking K alone
  std::int64_t outputs_per_cta = 4;
  int threads = 128;
  int regs = kGemvLongRegs;
  double fixed_round_trips = kGemvFixedRoundTrips;
  double step_round_trips = 0;  // a thread's chain along K, per element of K
  double bytes_in_flight = kGemvBytesInFlight;  // a thread's
};

// A thread's step along K when the threads of an output split K among themselves (threads /
// outputs of them an output) and walk their share a step after another.
double per_k_thread_step(const GemvShape& g, double step_round_trips) {
  return step_round_trips * static_cast<double>(g.outputs_per_cta) / static_cast<double>(g.threads);
}

GemvShape gemv_shape(const hw::HardwareSpec& hw, const Problem& p, bool linear, bool column) {
  const double e = detail::elt_bytes(p.dtype);
  GemvShape g;
  if (static_cast<double>(p.K) * e <= kGemvShortMaxRowBytes) {
    g.outputs_per_cta = 64;
    g.regs = kGemvShortRegs;
    if (!column && !linear) {  // a matmul's row: its outputs are W's columns
      if (e == 2.0) {
        g.gemv2n = true;
        g.outputs_per_cta = kGemv2NOutputsPerCta;
        g.fixed_round_trips = kGemv2NFixedRoundTrips;
        // A step waits on DRAM only where it enters a new 32-byte sector of W's row-major
        // rows: every step once a row holds 32 bytes of outputs, every few for narrower rows.
        const double sector_share = static_cast<double>(p.N) * e / kSectorBytes;
        g.step_round_trips =
            kGemv2NStepRoundTrips * std::clamp(sector_share, kGemv2NMinStepShare, 1.0);
      } else {
        g.outputs_per_cta = kGemvShortFp32RowOutputsPerCta;
        g.threads = kGemvShortFp32RowThreads;
      }
    }
    return g;
  }
  if (detail::is_hopper(hw) && (column || linear) && (p.N >= kGemv2TMinOutputs || p.K >= kGemv2TMinK)) {
    g.gemv2t = true;
    g.outputs_per_cta = kGemv2TOutputsPerCta;
    g.threads = kGemv2TThreads;
    g.regs = kGemv2TRegs;
    if (e == 2.0) g.bytes_in_flight = kGemv2T16BitBytesInFlight;
    return g;
  }
  const bool matmul_row_16bit = !column && !linear && e == 2.0;
  // fp32 and tf32 matmul rows of K just above the short variant's walk K with two threads an
  // output: 64x2 blocks around K = 300, 32x2 blocks for 600-3,500 outputs up to K = 1,150.
  if (!column && !linear && e == 4.0 && detail::is_hopper(hw)) {
    const bool two_k_threads =
        (p.K > kGemvFp32Row64x2MinK && p.K <= kGemvFp32Row64x2MaxK) ||
        (p.K <= kGemvFp32Row32x2MaxK && p.N >= kGemvFp32Row32x2MinN && p.N < kGemvFp32Row32x2MaxN);
    if (two_k_threads) {
      g.outputs_per_cta = p.K <= kGemvFp32Row64x2MaxK ? 64 : 32;
      g.threads = static_cast<int>(2 * g.outputs_per_cta);
      g.step_round_trips = per_k_thread_step(g, kGemvFp32RowStepRoundTrips);
      g.bytes_in_flight = kGemvFp32RowBytesInFlight;
      return g;
    }
  }
  if (!matmul_row_16bit) {
    g.outputs_per_cta = column || p.N < kGemvFewOutputs ? 4 : p.N < kGemvManyOutputs ? 16 : 32;
    return g;
  }
  g.outputs_per_cta = p.N < kGemvRowFewOutputs    ? 4
                      : p.N < kGemvRowManyOutputs ? 16
                      : p.N < kGemvManyOutputs    ? 64
                                                  : 32;
  if (g.outputs_per_cta == 16 || g.outputs_per_cta == 64) {
    g.threads = kGemvWideThreads;
    g.regs = kGemvWideRegs;
  }
  g.step_round_trips = per_k_thread_step(g, kGemvRowStepRoundTrips);
  return g;
}

std::vector<hw::Launch> gemv_launches(const hw::HardwareSpec& hw, const Problem& p, bool bias, bool linear,
                                      bool column, const Names& names, const std::string& tag) {
  const double e = detail::elt_bytes(p.dtype);
  Config c;
  c.kind = GemmKind::kGemv;
  hw::Launch l;
  l.family = "gemv";
  const GemvShape g = gemv_shape(hw, p, linear, column);
  l.name = g.gemv2t   ? fmt::format("gemv2T_kernel_val<{}>", name(p.dtype))
           : g.gemv2n ? fmt::format("gemv2N_kernel<{}>", name(p.dtype))
                      : kernel_name(c, 1, p.dtype, linear);
  const std::int64_t ctas = ceil_div(p.N, g.outputs_per_cta);
  const std::int64_t split = g.gemv2t ? gemv2t_split(hw, ctas * p.batch) : 1;
  l.grid = {ctas, p.batch, split};
  l.block = {g.threads, 1, 1};
  l.regs_per_thread = g.regs;
  l.smem_per_cta = 0;
  StreamingCta cta;
  cta.inflight = static_cast<double>(g.threads) * g.bytes_in_flight;
  // With a bias (beta = 1, lower_gemm) the kernel reads the output before it stores it: one DRAM
  // round trip more (sets 3-17, H100: one-row products with a bias 0.2-0.9 us slower than
  // without; issue 16's twelfth round, with the copy: the GEMV rows of sets 3-17 17.2 -> 16.0%
  // (H100), 20.8 -> 19.8% (H200); 2 round trips did no better).
  const bool bias_in_kernel = bias && split == 1;  // else the reduce adds it
  cta.fixed_round_trips = g.fixed_round_trips + (bias_in_kernel ? 1.0 : 0.0);
  cta.chain = sim::Time::from_seconds(g.step_round_trips * static_cast<double>(p.K) *
                                      hw.dram.latency.seconds());
  cta.split = split;
  fill_streaming_gemm(l, hw, p.batch, p.N, p.K, p.batch, bias_in_kernel, e, cta, names, tag);
  std::vector<hw::Launch> out{std::move(l)};
  // The reduce sees the outputs as a column (grid 1 x outputs/16: 1x187x1 for 2977 outputs).
  if (split > 1) {
    out.push_back(
        splitk_reduce(hw, Problem{p.N, 1, p.K, p.batch, p.dtype}, split, false, bias, names, tag));
  }
  return out;
}

// dot_kernel and reduce_1Block_kernel for one output row or column (which products run them,
// and dot_chunks: gemm_selection.h).
std::vector<hw::Launch> dot_launches(const hw::HardwareSpec& hw, const Problem& p, bool bias,
                                     const Names& names, const std::string& tag) {
  const double e = detail::elt_bytes(p.dtype);
  const std::int64_t dots = std::max(p.M, p.N);
  const std::int64_t chunks = dot_chunks(p);
  const double matrix = static_cast<double>(dots * p.K) * e;
  const double vec = static_cast<double>(p.K) * e;
  const double partials = static_cast<double>(dots * chunks) * 4.0;
  hw::Launch d;
  d.name = "void dot_kernel<float, 128, 0, cublasDotParams<cublasGemvTensorStridedBatched<const "
           "float>, cublasGemvTensorStridedBatched<float>>>";
  d.family = "gemv";
  d.grid = {chunks, 1, dots};
  d.block = {128, 1, 1};
  d.regs_per_thread = 32;
  d.smem_per_cta = 512;
  hw::CtaWork w;
  const double ctas = static_cast<double>(d.grid.count());
  w.fp32_flops = 2.0 * static_cast<double>(dots * p.K) / ctas;
  w.dram_read_bytes = (matrix + vec) / ctas;
  w.l2_bytes = (matrix + vec * static_cast<double>(dots) + partials) / ctas;
  w.dram_write_bytes = partials / ctas;
  w.max_inflight_bytes = 128.0 * e * 2.0;
  // The first loads, then the block's reduction and the partial's store.
  w.fixed = sim::Time::from_ps(kStreamingFixedRoundTrips * hw.dram.latency.ps()) + hw.l2.hit_latency;
  detail::add_class(d, d.grid.count(), w);
  d.reads = {detail::tensor(tag, p.M == 1 ? names.b : names.a, matrix),
             detail::tensor(tag, p.M == 1 ? names.a : names.b, vec)};
  d.writes = {detail::tensor(tag, "dot_partials", partials)};
  hw::Launch r;
  r.name = "void reduce_1Block_kernel<float, 128, 7, cublasGemvTensorStridedBatched<float>, "
           "cublasGemvTensorStridedBatched<float>>";
  r.family = "gemv";
  r.grid = {1, 1, dots};
  r.block = {128, 1, 1};
  r.regs_per_thread = 32;
  r.smem_per_cta = 512;
  hw::CtaWork rw;
  const double out = static_cast<double>(dots) * e;
  const double bias_bytes = bias ? out : 0.0;
  rw.fp32_flops = static_cast<double>(chunks);
  rw.l2_bytes = (partials + out + bias_bytes) / static_cast<double>(dots);
  rw.dram_read_bytes = bias_bytes / static_cast<double>(dots);
  rw.dram_write_bytes = out / static_cast<double>(dots);
  rw.fixed = sim::Time::from_ps(hw.dram.latency.ps()) + hw.l2.hit_latency;
  detail::add_class(r, dots, rw);
  r.reads = {detail::tensor(tag, "dot_partials", partials)};
  if (bias) r.reads.push_back(detail::tensor(tag, names.bias, bias_bytes));
  r.writes = {detail::tensor(tag, names.c, out)};
  return {d, r};
}

hw::Launch gemmsn_launch(const hw::HardwareSpec& hw, const Problem& p, bool bias, bool linear,
                         const Names& names, const std::string& tag) {
  const double e = detail::elt_bytes(p.dtype);
  hw::Launch l;
  l.family = "gemm";
  l.prologue_loads = true;  // the x rows and first weights wait in its fixed round trips
  const GemmsnShape g = gemmsn_shape(p, linear);
  l.name = fmt::format("void gemmSN_{}_kernel<float, {}, ...>", linear ? "TN" : "NN", g.threads);
  l.grid = {ceil_div(p.N, g.cols), g.row_groups, 1};
  l.block = {g.threads, 1, 1};
  // Registers and shared memory as measured (TN by its instance's rows, above; 64 and 12 KiB for
  // NN): they set how many CTAs an SM holds, and so the bandwidth.
  l.regs_per_thread = linear ? gemmsn_tn_regs(p, g) : 64;
  l.smem_per_cta = linear ? gemmsn_tn_smem(p, g) : 12288;
  // Bytes a thread keeps in flight: 10 for TN (above), 12 for fp32 NN, 6 for 16-bit NN (fitted on
  // sets 3-13, 4-16 tried: at 4 its few-CTA rows over K of 100-400 ran 50-100% slow, 5x256x405 at
  // 20.4 us against 9.9 measured; 10.34 -> 10.29% H100, 11.90 -> 11.82% H200 over all rows;
  // fp32 NN refitted with the row groups and the K chain below, 4-16 tried).
  const double per_thread = linear                        ? kGemmsnTnBytesInFlight
                            : p.dtype == hw::DType::kFp32 ? kGemmsnFp32NnBytesInFlight
                            : g.vector_loads && p.K >= kGemmsnVectorMinK
                                ? kGemmsn16BitVectorBytesInFlight
                                : kGemmsn16BitNnBytesInFlight;
  StreamingCta cta;
  cta.inflight = static_cast<double>(g.threads) * per_thread;
  cta.fixed_round_trips = kStreamingFixedRoundTrips;
  // Each row group reads the whole weight slab of its columns (from L2 after the first).
  cta.slab_readers = g.row_groups;
  // An NN thread, and a TN thread of a padded instance, walks its share of K one step after
  // another, each waiting on its loads.
  if (!linear || !gemmsn_tn_exact_rows(p)) {
    const double steps = static_cast<double>(ceil_div(p.K, g.k_groups));
    const double step = !linear       ? kGemmsnStepRoundTrips
                        : g.rows == 6 ? kGemmsnTnSixRowStepRoundTrips
                                      : kGemmsnTnPaddedStepRoundTrips;
    cta.chain = sim::Time::from_seconds((kGemmsnChainFixedRoundTrips + steps * step) *
                                        hw.dram.latency.seconds());
  }
  fill_streaming_gemm(l, hw, 1, p.N, p.K, p.M, bias, e, cta, names, tag);
  return l;
}

// cuBLAS zeroes a small workspace (cudaMemsetAsync) before persistent kernels that loop over
// three or more tiles per CTA (ops_h100.csv: 8192^3 and 4096x14336x4096 bf16, 4096^3 tf32; not
// 3000^3 or 2048x4096x4096 at about two tiles per CTA). Its size is not recorded: one 4-byte
// counter per CTA is assumed.

Problem checked_problem(const GemmProblem& gp) {
  if (gp.M <= 0 || gp.N <= 0 || gp.K <= 0 || gp.batch <= 0) {
    throw ModelError("gemm: M, N, K and batch must be positive");
  }
  return Problem{gp.M, gp.N, gp.K, gp.batch, gp.dtype, gp.lda, gp.ldb};
}

// F.linear's addmm takes cuBLASLt's bias epilogue only when the output has more than one row
// and column and K exceeds 1; otherwise ATen copies the bias into the output and runs the GEMM
// with beta = 1 (whose epilogue then reads the output, as a bias epilogue reads the bias). The
// copy broadcasts the bias over the rows with the legacy elementwise kernel (sets 3-17, H100:
// 209x1x2, 153x1x5, 84x1x231 and 16x1x15570 with a bias ran direct_copy on one CTA, 1.3-1.6 us,
// first; 171x1427x1 on 477 CTAs in 2.4 us); for a single row the expanded bias is contiguous and
// the copy a memcpy, not a kernel.
std::vector<Launch> bias_copy_launches(const GemmProblem& gp, const hw::HardwareSpec& hw,
                                       const std::string& tag) {
  const bool epilogue = gp.M > 1 && gp.N > 1 && gp.K > 1;
  if (!gp.bias || epilogue || gp.M == 1) return {};
  ElementwiseProblem copy;
  copy.func = EwFunc::kCopy;
  copy.n = gp.batch * gp.M * gp.N;
  copy.in = copy.out = gp.dtype;
  copy.inputs = {gp.bias_name};
  copy.output = gp.c;
  copy.strided = true;
  return lower_elementwise(copy, hw, tag);
}

}  // namespace

std::vector<Launch> lower_gemm(const GemmProblem& gp, const hw::HardwareSpec& hw,
                               const std::string& tag, bool linear) {
  const Problem p = checked_problem(gp);
  const Names names{gp.a, gp.b, gp.c, gp.bias_name};
  if (hw.tensor_flops_per_cycle(gp.dtype) <= 0 && gp.dtype != hw::DType::kFp32) {
    throw ModelError(fmt::format("gemm: {} has no {} tensor-core path", hw.name, name(gp.dtype)));
  }
  const GemmPlan plan = plan_gemm(hw, p, gp.bias, linear);
  std::vector<Launch> out = bias_copy_launches(gp, hw, tag);
  switch (plan.path) {
    case GemmPath::kGemmsn:
      out.push_back(gemmsn_launch(hw, p, gp.bias, linear, names, tag));
      return out;
    case GemmPath::kDot:
      for (auto& l : dot_launches(hw, p, gp.bias, names, tag)) out.push_back(std::move(l));
      return out;
    case GemmPath::kGemv:
      // One output column: the GEMV over A's rows (y = A x).
      for (auto& l : p.N == 1 && p.M > 1
                         ? gemv_launches(hw, Problem{1, p.M, p.K, 1, p.dtype}, gp.bias, linear, true,
                                         Names{gp.b, gp.a, gp.c, gp.bias_name}, tag)
                         : gemv_launches(hw, p, gp.bias, linear, false, names, tag)) {
        out.push_back(std::move(l));
      }
      return out;
    case GemmPath::kTiled:
      break;
  }
  const Choice& ch = plan.choice;
  const std::int64_t units = units_of(p, ch.cfg, ch.split);
  const std::int64_t ctas = grid_ctas(hw, p, ch.cfg, ch.split);
  if (ch.cfg.persistent && units >= 3 * ctas) {
    out.push_back(detail::memset_launch(tag, "workspace", 4 * ctas));
  }
  if (ch.serial) out.push_back(detail::memset_launch(tag, "splitk_semaphores", 4 * units_of(p, ch.cfg, 1)));
  out.push_back(tile_launch(hw, p, ch, gp.bias && !ch.reduce, linear, names, tag));
  if (ch.reduce) {
    out.push_back(reduces_in_own_kernel(ch.cfg)
                      ? xmma_splitk_reduce(hw, p, ch, linear, gp.bias, names, tag)
                      : splitk_reduce(hw, p, ch.split, ch.partials_16bit, gp.bias, names, tag));
  }
  return out;
}

GemmTiling gemm_tiling(const GemmProblem& gp, const hw::HardwareSpec& hw, bool linear) {
  const Problem p = checked_problem(gp);
  const GemmPlan plan = plan_gemm(hw, p, gp.bias, linear);
  switch (plan.path) {
    case GemmPath::kGemmsn: {
      const GemmsnShape g = gemmsn_shape(p, linear);
      return GemmTiling{ceil_div(p.M, g.row_groups), g.cols, 1, 1, p.K};
    }
    case GemmPath::kGemv: return GemmTiling{1, 4, 1, 1, gp.K};
    case GemmPath::kDot:
      return GemmTiling{1, 1, 1, dot_chunks(p), ceil_div(p.K, dot_chunks(p))};
    case GemmPath::kTiled: break;
  }
  const Choice& ch = plan.choice;
  return GemmTiling{ch.cfg.tile_m, ch.cfg.tile_n, ch.cfg.tile_k, ch.split,
                    k_per_split(p, ch.cfg, ch.split)};
}

std::vector<Launch> GemmModel::lower(const Op& op, const hw::HardwareSpec& hw,
                                     const std::string& tag) const {
  GemmProblem p;
  p.dtype = op.dtype();
  bool linear = false;
  if (op.kind() == OpKind::kMatmul) {
    const auto& s = op.as<MatmulShape>();
    p.M = s.M;
    p.N = s.N;
    p.K = s.K;
    p.a = "a";
    p.b = "b";
    p.c = "c";
  } else {
    const auto& s = op.as<LinearShape>();
    p.M = s.M;
    p.N = s.N;
    p.K = s.K;
    p.bias = s.bias;
    p.a = "x";
    p.b = "w";
    p.c = "y";
    p.bias_name = "bias";
    linear = true;
  }
  return lower_gemm(p, hw, tag, linear);
}

}  // namespace gpusim::models
