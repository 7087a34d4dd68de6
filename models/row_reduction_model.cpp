// layer_norm, rms_norm and softmax over the last dimension: ATen's row-reduction kernels
// (PyTorch 2.11), confirmed on H100 by ops_h100.csv.
//
// layer_norm / rms_norm (aten/src/ATen/native/cuda/layer_norm_kernel.cu; F.rms_norm on CUDA is
// the fused _fused_rms_norm, the same kernels with rms_norm = true):
//  * C % 4 == 0 (vec_size = 4, aligned, fp32/fp16/bf16): vectorized_layer_norm_kernel, one CTA
//    per row, block (32, 4), 24 bytes of dynamic shared memory (4 * 3/2 floats);
//  * otherwise RowwiseMomentsCUDAKernel (512 threads, Welford block reduce, 768 B) then
//    LayerNormForwardCUDAKernel (256 threads), one CTA per row each.
// softmax (aten/src/ATen/native/cuda/SoftMax.cu, host_softmax):
//  * C <= 2048 and C * elt <= 8192: softmax_warp_forward<..., log2(C)> (persistent_softmax.cuh;
//    ops2_h100.csv and ops3_h100.csv: every measured row up to 2048, fp32 1408 and 2048 included):
//    a warp of min(32, next_pow2(C)) threads per row, 2 rows per warp when next_pow2(C) <= 128,
//    128 threads per block; launched in chunks of 2^30 / C rows;
//  * else one CTA of min(1024, round_up(C, 32)) threads per row, 128 bytes of reduction
//    shared memory: cunn_SoftMaxForwardReg<..., ceil(C / threads)> when that is below 10
//    (the row lives in registers), else cunn_SoftMaxForwardSmem when the row fits the 48 KiB
//    default shared memory and C % ILP == 0, else cunn_SoftMaxForward<ILP> (three passes, each
//    in vectors of ILP elements a thread and then the rest one element a thread, rows not
//    16-byte aligned starting with one element a thread: multi_pass_iterations).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "hw/occupancy.h"
#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;

// Dependent DRAM round trips of the fallback LayerNorm/RMSNorm pair (rows whose length is not a
// multiple of 4): RowwiseMomentsCUDAKernel's 512 threads walk the row in 512-element chunks,
// then combine their Welford states across 16 warps (shuffles, shared memory, barriers, the
// combine's divisions), which takes most of a short row's 2.5-2.9 us per CTA (R=16572 C=97:
// 31 waves in 80 us); LayerNormForwardCUDAKernel takes one element per thread per iteration.
// Fitted on the 20 fallback calibration rows of ops3_h100.csv and ops_h100.csv (MAPE 30.6% ->
// 9.6%, mean +0.3%); the vectorized kernel models shapes like C = 4096 and is left as it was.
// Refitted per kernel (the pair's sum was right, its split wrong: moments 20-30% short, the
// forward kernel as much long on long rows): 0.8 round trips per moments chunk (was 0.5), and
// the forward kernel's unrolled loop keeps two elements per thread in flight (calibration rows
// of ops3_h100.csv and ops_h100.csv; the fresh set ops4_h100.csv.gz, seen, agreed). The forward
// kernel's 1.0 round trips per iteration became 1.2 with the write-back L2 (issue 16's fifth
// round, after set 9's comparison; sets 3-8, 1.0-1.4 tried with 0.8-1.2 per moments chunk: the
// pair's rows 9.6% -> 6.9%, biased -5.5% -> -0.7%, H100).
// Issue 16's tenth round: a lone CTA's moments kernel takes 2.7-2.9 us on a short row and 0.41 us
// more per 512-element chunk, and every further CTA on the SM adds about 0.5 us to each: the
// block reduce is issue-bound, and co-resident CTAs take turns at the schedulers (400 of its
// cycles; the forward kernel's 200). Refitted on the pair's 454 rows of sets 3-14 (H100) and 415
// of sets 3-13 (H200): short rows over fewer CTAs than SMs had run 10-13% slow, 133-2,000 rows
// 7-12% fast; 7.0 -> 5.1% (H100), 9.4 -> 5.6% (H200). Was 6 round trips for the reduce and 0.8
// a chunk.
constexpr double kMomentsBlockReduceRoundTrips = 4.5;
constexpr double kMomentsRoundTripsPerChunk = 1.0;
constexpr double kMomentsIssueCycles = 400.0;
constexpr double kForwardRoundTripsPerIteration = 1.2;
constexpr double kForwardIssueCycles = 200.0;
constexpr double kForwardLoadsInFlight = 2.0;
// The vectorized kernel's dependent path, in DRAM round trips. Its four warps combine their
// partial statistics across shared memory before normalizing: LayerNorm's Welford states
// (counts, means, M2, with divisions) take longer than RMSNorm's sums of squares (ops3_h100.csv:
// 43466 x 108 takes 2.5 us per wave of CTAs). Each thread then walks its C/512 vectors in a loop
// whose update the next load waits for, Welford's with a division per element.
// Issue 16's tenth round, refitted per variant on the 146 vectorized rows of sets 3-14 (H100)
// and 135 of sets 3-13 (H200), which had run 11-12% off (2.5 round trips a vector for both,
// LayerNorm's combine 2 and RMSNorm's none): one-vector rows of both ran 10-25% fast and long
// RMSNorm rows 10-20% slow. Now 5.4% (H100) and 6.8% (H200).
constexpr double kWelfordCombineRoundTrips = 2.75;
constexpr double kSumCombineRoundTrips = 1.0;
constexpr double kWelfordVectorRoundTrips = 2.7;
constexpr double kSumVectorRoundTrips = 2.2;
// Of LayerNorm's path, the issue-bound part the CTAs sharing an SM take in turn (the Welford
// combine's divisions and three-value shuffles, the shared-memory round and its barriers), in
// core cycles: launches of many short rows run one CTA an SM every 150-153 ns (C = 16-108:
// 43466 x 108 in 52.5 us), and rows of one wave grow by as much a CTA an SM (1946 x 48: 4.26 us,
// a lone row 2.8). Issue 16's nineteenth round, fitted on the 190 (H100) and 185 (H200)
// vectorized LayerNorm rows of sets 3-33 (45-80 tried): 5.33 -> 4.20% (H100), 6.37 -> 4.87%
// (H200); a per-element part (0.1 a cycle) made them worse. RMSNorm's sums have no such part
// that shows: its short rows run at the block scheduler's pace (launch.cta_interval).
constexpr double kWelfordIssueCycles = 60.0;
// softmax's multi-pass kernels (cunn_SoftMaxForward, ...Smem) walk the row once per pass (max,
// sum of exponentials, write), each thread one 16-byte vector per iteration, and the next load
// waits for the iteration's arithmetic: a DRAM latency in the first pass, an L2 latency in each
// later one (the plain variant; none from shared memory), though the plain variant's later passes
// still move their bytes from DRAM (see lower_softmax). The arithmetic is issue-bound, one CTA of
// 1024 threads filling the SM's schedulers: thread instructions per element over the three passes
// (loads, conversions, max, subtract, exp2, add, multiply, stores, loop control), 16-bit types
// with their conversions more. Fitted on the few-row multi-pass rows of the random sets 3-5
// (ops{3,4,5}_h100.json: bf16 1 x 27470 ... 1 x 72198 take 0.35 cycles per element beyond the
// latencies, fp32 1 x 38717 and 2 x 89090 0.27-0.29): the time follows the element count, not
// the byte count, which a bandwidth or a per-iteration latency alone cannot give.
// Issue 16's eighteenth round, with each pass's tail counted (multi_pass_iterations): 45 -> 35
// for 16-bit rows (below).
constexpr double kMultiPassInstructionsPerElement16 = 35.0;
constexpr double kMultiPassInstructionsPerElement32 = 28.0;
// The block-wide max and sum (shuffles, shared memory, barriers across 32 warps): a few-row launch
// spends about 2 us on them beyond its loads and arithmetic (same rows); 6 round trips until the
// eighteenth round, 4.5 since (below).
constexpr double kSoftmaxBlockReduceRoundTrips = 4.5;
// A pass's tail iteration (one element a thread, after the vectors: multi_pass_iterations) waits
// this share of a vector iteration's round trips. The plain kernel's time follows C modulo
// 1,024 x ilp, not C: a lone bf16 CTA takes 5.4 us at 9,971 elements (one vector iteration, two
// tail ones), 7.1 at 11,490 (four), 9.1-9.3 at 15,553-16,254 (eight), 7.6 at 18,050 (two vectors,
// two tail), and rows not 16-byte aligned lose their first block's width to the shifted element,
// so 17,223 elements in two rows take 9.95 us (the second row: one vector, eight tail) and 25,456
// (aligned) 9.0 against 11.7 for 25,590 (sets 3-30, H100). Issue 16's eighteenth round: the
// passes had been counted as ceil(C / (1,024 x ilp)) vector iterations, which ran rows with long
// tails 15-27% fast and short ones 10-15% slow. Fitted on the 202 (H100) and 196 (H200)
// plain-kernel rows of sets 3-30 with the instructions and the block reduce (0.4-1 x 2-6 round
// trips x 28-40 instructions tried): those rows 11.0 -> 7.5% (H100), 10.6 -> 7.0% (H200); all
// softmax rows 7.14 -> 6.24%, 8.14 -> 7.30%.
constexpr double kMultiPassTailIterationShare = 0.8;
// cunn_SoftMaxForwardSmem copies the row into shared memory in its first pass and reads it back
// in the later two: 1.3 times the plain kernel's instructions an element (1.0-1.6 tried on its 23
// rows of sets 1-30: 10.7 -> 6.0% (H100), 8.2 -> 7.3% (H200) against the old constants, 7.0% and
// 11.6% with the plain kernel's 35; the old 45, fitted to both, had made the plain tails up).
constexpr double kSmemVariantInstructionScale = 1.3;
// cunn_SoftMaxForwardReg (rows of 1,025 to 10,239 elements, up to 9 a thread): its chain is a
// fixed part (the block-wide max and sum, the store) and about a DRAM round trip per element a
// thread holds. A lone CTA takes 2.8 us at 3 elements a thread, 3.5 at 5, 4.8 at 9 (sets 3-17,
// H100); many-row launches run a wave of resident CTAs in about that time (60105 x 2620 bf16:
// 228 waves of two CTAs an SM in 612 us). It had been 1.5 round trips per element, no fixed
// part, which ran short rows of many rows 17-21% fast. Issue 16's twelfth round, fitted on the
// 84 register-variant rows of sets 3-17 (H100) and 81 (H200) with the registers as measured
// (which hold one CTA an SM above 6 elements a thread): 0-5 x 0.5-1.5 tried, 3 and 0.85 best;
// 11.5 -> 6.1% (H100), 14.7 -> 8.3% (H200).
constexpr double kSoftmaxRegBaseRoundTrips = 3.0;
constexpr double kSoftmaxRegRoundTripsPerElement = 0.85;
// softmax_warp_forward: each lane loads its elements one after another (the loads are
// predicated on the row length and do not overlap), each costing a part of a DRAM round trip,
// fp32 rows overlapping somewhat more of them; then the warp reductions and the stores.
// Random sets 3-5 (ops{3,4,5}_h100.json): 16-bit rows take 0.13-0.15 us per element a lane
// holds (bf16 1 x 1553, 29 x 669, 8 x 499), fp32 rows 0.09-0.11 us (6 x 618, 8 x 1506,
// 216 x 1408), and many-row launches stream at one element per lane in flight (4959 x 1153 bf16
// moves 23 MB in 20 us, far below DRAM bandwidth).
// Issue 16's fifteenth round: a lane loads the elements of both its rows when a warp holds two
// (next_pow2(C) <= 128), and it takes every element of its padded row (max, exponential, sum over
// all next_pow2(C) / 32, the masked ones too) through a short chain: refitted on the 269 bf16 and
// 89 fp32 rows of sets 3-23 (H100; 0.15-0.4 round trips a load, 0-100 cycles an element, 0.5-1.5
// round trips before tried): rows of 129-256 ran 10-20% slow and rows of 65-128 5-14% fast with
// one row's loads (8.1 -> 5.8% H100, 9.8 -> 7.3% H200; the 0.35 also sets the bytes in flight).
constexpr double kWarpSoftmaxBaseRoundTrips = 1.0;
constexpr double kWarpSoftmaxRoundTripsPerLoad = 0.35;
constexpr double kWarpSoftmaxCyclesPerElement = 15.0;
constexpr double kWarpSoftmaxLoadsInFlight16 = 1.0;
constexpr double kWarpSoftmaxLoadsInFlight32 = 1.5;
// Of that path, the cycles a CTA's four warps spend issuing (the shuffles of the warp
// reductions, and per element a lane loads its conversion, exponential and stores), which the
// CTAs sharing an SM take in turn: many-row launches (16 CTAs an SM) ran 25-45% fast (62164 x 74
// bf16 in 14.4 us, 4959 x 1153 in 21.2; sets 3-14, H100). Issue 16's tenth round, fitted on the
// 204 softmax_warp_forward rows of sets 3-14 (H100) and 184 of sets 3-13 (H200): 0-400 x 0-50
// tried; 10.9 -> 8.1% (H100), 13.3 -> 9.6% (H200).
constexpr double kWarpSoftmaxIssueCycles = 100.0;
constexpr double kWarpSoftmaxIssueCyclesPerLoad = 30.0;

std::string scalar_name(hw::DType d) {
  switch (d) {
    case hw::DType::kBf16: return "c10::BFloat16";
    case hw::DType::kFp16: return "c10::Half";
    default: return "float";
  }
}

int log2_ceil(std::int64_t x) {
  int l = 0;
  while ((std::int64_t{1} << l) < x) ++l;
  return l;
}

// Per-row demand of a kernel that streams `passes` reads of the row and one write.
struct RowWork {
  double in_bytes = 0;     // unique bytes read per row (the row itself)
  double l2_in_bytes = 0;  // bytes loaded from L2 per row (re-reads, parameters)
  double out_bytes = 0;    // bytes written per row
  double fp32 = 0, sfu = 0;
  double shared_in = 0;    // per-op parameters (gamma, beta) read once from DRAM, total
  // The row's dependent critical path: loads that wait on the previous iteration's arithmetic
  // and block-wide reductions, counted in DRAM round trips (see each kernel below), L2 round
  // trips and core-clock cycles (issue-bound arithmetic).
  double serial_round_trips = 0;
  double serial_l2_trips = 0;
  double serial_cycles = 0;
  // Of that path, the core-clock cycles spent issuing instructions (block-wide reductions), which
  // CTAs sharing an SM take in turn (hw::CtaWork::issue_path).
  double issue_cycles = 0;
};

// Whether a kernel's later passes over its rows miss L2: the rows of all its resident CTAs
// (one row a CTA) must fit an SM's near L2 partition (the H100's two halves; a footprint
// reaching the far one pays 267 ns a hit, validation/data/hw_h100.json).
bool rereads_miss_l2(const hw::HardwareSpec& hw, std::int64_t R, double row_bytes,
                     const hw::BlockResources& block) {
  const auto occ = hw::compute_occupancy(hw.sm, block);
  const double resident_rows = static_cast<double>(std::min<std::int64_t>(
      R, static_cast<std::int64_t>(hw.sm_count) * std::max(1, occ.ctas_per_sm)));
  const double near_l2 =
      static_cast<double>(hw.l2.size) / static_cast<double>(std::max(1, hw.l2.partitions));
  return resident_rows * row_bytes > near_l2;
}

// One pass of the plain multi-pass softmax over a row (SoftMax.cu's ilpReduce and
// WriteFpropResultsVectorized): a row `shift` elements past a 16-byte boundary first takes one
// element a thread over the first block's width, then vectors of `ilp` elements a thread, then
// what is left one element a thread per iteration (the tail).
struct PassIterations {
  std::int64_t whole = 0;  // the shifted element's iteration and the vectors'
  std::int64_t tail = 0;   // one element a thread
  auto operator<=>(const PassIterations&) const = default;
};

PassIterations multi_pass_iterations(std::int64_t C, std::int64_t threads, std::int64_t ilp,
                                     std::int64_t shift) {
  const std::int64_t size = shift > 0 ? std::max<std::int64_t>(0, C + shift - threads) : C;
  return {(shift > 0 ? 1 : 0) + size / (ilp * threads), ceil_div(size % (ilp * threads), threads)};
}

// Rows that share one per-row demand.
struct RowClass {
  std::int64_t rows = 0;
  RowWork work;
};

// One CTA per `rows_per_cta` rows of each class, the classes launched in turn.
Launch row_launch(const hw::HardwareSpec& hw, std::string name, std::string family, hw::Dim3 block,
                  int regs, std::int64_t smem, std::int64_t rows_per_cta,
                  const std::vector<RowClass>& classes, double inflight) {
  Launch l;
  l.name = std::move(name);
  l.family = std::move(family);
  std::int64_t grid = 0;
  for (const RowClass& c : classes) grid += ceil_div(c.rows, rows_per_cta);
  l.grid = {grid, 1, 1};
  l.block = block;
  l.regs_per_thread = regs;
  l.smem_per_cta = smem;
  const double ctas = static_cast<double>(l.grid.x);
  const auto work = [&](const RowWork& rw, std::int64_t rows) {
    hw::CtaWork w;
    const double r = static_cast<double>(rows);
    w.fp32_flops = r * rw.fp32;
    w.sfu_ops = r * rw.sfu;
    w.l2_bytes = r * (rw.l2_in_bytes + rw.out_bytes);
    w.dram_read_bytes = r * rw.in_bytes + rw.shared_in / ctas;
    w.dram_write_bytes = r * rw.out_bytes;
    w.max_inflight_bytes = inflight;
    w.critical_path = sim::Time::from_seconds(rw.serial_round_trips * hw.dram.latency.seconds() +
                                              rw.serial_l2_trips * hw.l2.hit_latency.seconds() +
                                              rw.serial_cycles / hw.clocks.sustained_other_hz);
    w.issue_path = sim::Time::from_seconds(rw.issue_cycles / hw.clocks.sustained_other_hz);
    return w;
  };
  for (const RowClass& c : classes) {
    detail::add_class(l, c.rows / rows_per_cta, work(c.work, rows_per_cta));
    if (c.rows % rows_per_cta > 0) detail::add_class(l, 1, work(c.work, c.rows % rows_per_cta));
  }
  return l;
}

// One CTA per `rows_per_cta` rows, R rows in total.
Launch row_launch(const hw::HardwareSpec& hw, std::string name, std::string family, hw::Dim3 block,
                  int regs, std::int64_t smem, std::int64_t R, std::int64_t rows_per_cta,
                  const RowWork& rw, double inflight) {
  return row_launch(hw, std::move(name), std::move(family), block, regs, smem, rows_per_cta,
                    {RowClass{R, rw}}, inflight);
}

std::vector<Launch> lower_norm(const hw::HardwareSpec& hw, bool rms, std::int64_t R,
                               std::int64_t C, hw::DType dtype, const std::string& tag) {
  if (R <= 0 || C <= 0) throw ModelError("norm: R and C must be positive");
  const double e = detail::elt_bytes(dtype);
  const double row = static_cast<double>(C) * e;
  const double params = (rms ? 1.0 : 2.0) * row;  // gamma (and beta)
  const std::string t = scalar_name(dtype);
  const char* flag = rms ? "true" : "false";
  const double stats_out = 8.0;  // mean and rstd (fp32) per row; rms writes rstd (and a dummy)
  const double c = static_cast<double>(C);
  std::vector<Launch> out;
  if (C % 4 == 0) {
    RowWork rw;
    // The second pass re-reads the row. It finds it in L2 while the rows of all resident CTAs
    // fit an SM's near L2 partition; past that (long rows: 2112 resident rows of 29 KB and more
    // on an H100) each row is evicted before it comes back and the re-read goes to DRAM (random
    // sets 3-5: 15891 x 14888 and 6590 x 29372 stream three row-passes at DRAM bandwidth).
    const int regs = rms ? 27 : 32;  // ops_h100.csv
    constexpr std::int64_t kSmem = 24;
    const bool rereads_miss = rereads_miss_l2(hw, R, row, hw::BlockResources{128, regs, kSmem});
    rw.in_bytes = rereads_miss ? 2.0 * row : row;
    // X once (the second pass re-reads it from L1 while it fits there, else from DRAM, above),
    // gamma and beta from L2 in every CTA.
    rw.l2_in_bytes = (rereads_miss ? 2.0 : 1.0) * row + params;
    rw.out_bytes = row + stats_out;
    rw.shared_in = params;
    // Welford per element (sub, reciprocal of the count, 2 FMA, add) then x' = g*(x-m)*r + b;
    // RMS: a square-accumulate FMA, then g * x * r.
    rw.fp32 = rms ? 4.0 * c : 10.0 * c;
    rw.sfu = (rms ? 0.0 : c) + 1.0;  // Welford's 1/count per element; one rsqrt per row
    rw.issue_cycles = rms ? 0.0 : kWelfordIssueCycles;
    const double inflight = 128.0 * 4.0 * e;  // one 4-element vector per thread in flight
    // The loop over the thread's vectors, then the combine across warps.
    rw.serial_round_trips = (rms ? kSumCombineRoundTrips : kWelfordCombineRoundTrips) +
                            (rms ? kSumVectorRoundTrips : kWelfordVectorRoundTrips) *
                                static_cast<double>(ceil_div(C, 128 * 4));
    out.push_back(row_launch(hw, 
        fmt::format("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<{}, "
                    "float, {}>",
                    t, flag),
        rms ? "rms_norm" : "layer_norm", {32, 4, 1}, regs, kSmem, R, 1, rw, inflight));
    out.back().reads = {detail::tensor(tag, "x", row * R), detail::tensor(tag, "weight", params)};
    out.back().writes = {detail::tensor(tag, "y", row * R),
                         detail::tensor(tag, "stats", stats_out * R)};
    return out;
  }
  // Fallback: moments, then the normalization.
  RowWork m;
  m.in_bytes = row;
  m.l2_in_bytes = row;
  m.out_bytes = stats_out;
  m.fp32 = rms ? 2.0 * c : 6.0 * c;
  m.sfu = (rms ? 0.0 : c) + 1.0;
  m.serial_round_trips =
      kMomentsRoundTripsPerChunk * static_cast<double>(ceil_div(C, 512)) + kMomentsBlockReduceRoundTrips;
  m.issue_cycles = kMomentsIssueCycles;
  out.push_back(row_launch(hw,
      fmt::format("void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<{}, float, {}>",
                  t, flag),
      rms ? "rms_norm" : "layer_norm", {512, 1, 1}, 28, 768, R, 1, m, 512.0 * e));
  out.back().reads = {detail::tensor(tag, "x", row * R)};
  out.back().writes = {detail::tensor(tag, "stats", stats_out * R)};
  RowWork f;
  f.in_bytes = row + stats_out;  // X comes back from DRAM unless L2 kept it (the engine decides)
  f.l2_in_bytes = row + params + stats_out;
  f.out_bytes = row;
  f.shared_in = params;
  f.fp32 = rms ? 2.0 * c : 4.0 * c;
  f.serial_round_trips = kForwardRoundTripsPerIteration * static_cast<double>(ceil_div(C, 256));
  f.issue_cycles = kForwardIssueCycles;
  out.push_back(row_launch(hw,
      fmt::format("void at::native::(anonymous namespace)::LayerNormForwardCUDAKernel<{}, float, {}>",
                  t, flag),
      rms ? "rms_norm" : "layer_norm", {256, 1, 1}, rms ? 17 : 23, 0, R, 1, f, kForwardLoadsInFlight * 256.0 * e));
  out.back().reads = {detail::tensor(tag, "x", row * R), detail::tensor(tag, "stats", stats_out * R),
                      detail::tensor(tag, "weight", params)};
  out.back().writes = {detail::tensor(tag, "y", row * R)};
  return out;
}

}  // namespace

std::vector<Launch> lower_softmax(std::int64_t R, std::int64_t C, hw::DType dtype,
                                  const std::string& input, const std::string& output,
                                  const hw::HardwareSpec& hw,
                                  const std::string& tag) {
  if (R <= 0 || C <= 0) throw ModelError("softmax: R and C must be positive");
  if (dtype == hw::DType::kTf32) dtype = hw::DType::kFp32;
  const double e = detail::elt_bytes(dtype);
  const double row = static_cast<double>(C) * e;
  const double c = static_cast<double>(C);
  const std::string t = scalar_name(dtype);
  RowWork rw;
  rw.in_bytes = row;
  rw.l2_in_bytes = row;
  rw.out_bytes = row;
  rw.fp32 = 4.0 * c;  // max, x - max (FMA with the scale), sum, multiply by 1/sum
  rw.sfu = c + 1.0;   // exp per element, one reciprocal per row
  std::vector<Launch> out;
  if (C <= 2048 && row <= 8192) {
    const int log2 = log2_ceil(C);
    const std::int64_t pow2 = std::int64_t{1} << log2;
    const std::int64_t warp = std::min<std::int64_t>(pow2, 32);
    const std::int64_t rows_per_warp = pow2 <= 128 ? 2 : 1;
    const std::int64_t warps = 128 / warp;
    const std::int64_t rows_per_cta = warps * rows_per_warp;
    // ops_h100.csv: 32 registers for log2 = 9 (fp32), 48 for log2 = 10 (fp32 and bf16).
    const int regs = log2 >= 10 ? 48 : 32;
    const std::int64_t chunk = (std::int64_t{1} << 30) / C;  // rows per launch
    const double in_flight = e >= 4.0 ? kWarpSoftmaxLoadsInFlight32 : kWarpSoftmaxLoadsInFlight16;
    // What the chain moves: every lane's in-flight loads each part of a DRAM round trip.
    const double inflight = 128.0 * e * rows_per_warp * in_flight / kWarpSoftmaxRoundTripsPerLoad;
    // Each lane's ceil(C / 32) elements are loaded, reduced across the warp (max, then sum) and
    // written: a fixed part (the first load, the two warp reductions, the stores) and a part per
    // element a lane loads (see the constants).
    const double lane_loads = static_cast<double>(ceil_div(C, warp));
    const double warp_rows = static_cast<double>(rows_per_warp);
    rw.serial_round_trips = kWarpSoftmaxBaseRoundTrips +
                            kWarpSoftmaxRoundTripsPerLoad * warp_rows * lane_loads / in_flight;
    rw.serial_cycles = kWarpSoftmaxCyclesPerElement * warp_rows * static_cast<double>(pow2 / warp);
    rw.issue_cycles = kWarpSoftmaxIssueCycles + kWarpSoftmaxIssueCyclesPerLoad * lane_loads;
    for (std::int64_t done = 0; done < R; done += chunk) {
      const std::int64_t rows = std::min(chunk, R - done);
      out.push_back(row_launch(hw,
          fmt::format("void (anonymous namespace)::softmax_warp_forward<{0}, {0}, float, {1}, "
                      "false, false>",
                      t, log2),
          "softmax", {warp, warps, 1}, regs, 0, rows, rows_per_cta, rw, inflight));
      const double bytes = row * static_cast<double>(rows);
      out.back().reads = {detail::tensor(tag, input, bytes)};
      out.back().writes = {detail::tensor(tag, output, bytes)};
    }
  } else {
    const std::int64_t threads = std::min<std::int64_t>(1024, detail::round_up(C, 32));
    const std::int64_t smem_reduce = threads / 32 * 4;
    const std::int64_t ilp = 16 / static_cast<std::int64_t>(e);
    const std::int64_t reg_cnt = ceil_div(C, threads);
    // cudaDeviceProp::sharedMemPerBlock: the 48 KiB default, not the opt-in maximum.
    constexpr std::int64_t kSmemPerBlock = 48 * 1024;
    const bool smem_ok = C < (kSmemPerBlock - smem_reduce) / static_cast<std::int64_t>(e) && C % ilp == 0;
    std::string name;
    std::int64_t smem = smem_reduce;
    int regs = 32;
    if (reg_cnt < 10) {
      name = fmt::format(
          "void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<{0}, float, {0}, "
          "at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, {1}>",
          t, reg_cnt);
      // As measured (sets 3-17, H100 and H200, bf16 and fp32): 28-30 registers up to 6 elements
      // a thread, then 34, 37 and 38-40 for 7, 8 and 9. Above 32, one 1024-thread CTA fills an
      // SM's registers: rows of more than 6,144 elements run one CTA an SM, not two.
      regs = reg_cnt <= 6 ? 30 : reg_cnt == 7 ? 34 : reg_cnt == 8 ? 37 : 40;
    } else if (smem_ok) {
      name = fmt::format(
          "void at::native::(anonymous namespace)::cunn_SoftMaxForwardSmem<{1}, {0}, float, {0}, "
          "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>",
          t, ilp);
      smem = static_cast<std::int64_t>(row) + smem_reduce;
    } else {
      name = fmt::format(
          "void at::native::(anonymous namespace)::cunn_SoftMaxForward<{1}, {0}, float, {0}, "
          "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>",
          t, ilp);
      // The max, sum and write passes each read the row (random sets 3-5, ops{3,4,5}_h100.json:
      // 1011 x 32030 bf16 in 88 us, 605 x 24297 in 49, 2640 x 85232 fp32 in 1225: rows in flight
      // beyond L2's near partition, or 16-bit rows' issue-bound passes).
      rw.l2_in_bytes = 3.0 * row;
      // Issue 16's eleventh round: the later passes find the row in L2 while the rows of all
      // resident CTAs fit an SM's near L2 partition, as the norms' re-reads do; fp32 rows of
      // 13-20 K elements over thousands of rows stream 2.2-2.4 TB/s counting one read and the
      // write, more than DRAM gives three reads and a write (sets 3-16, H100: 12607 x 20485 in
      // 855 us). The multi-pass rows of sets 3-16: 14.8 -> 10.4% (H100), 12.1 -> 10.5% (H200); the
      // norms' re-reads at the near partition, not all of L2, 5.64 -> 5.59%, 6.27 -> 6.21%.
      const hw::BlockResources block{static_cast<int>(threads), regs, smem};
      rw.in_bytes = rereads_miss_l2(hw, R, row, block) ? 3.0 * row : row;
    }
    const double inflight = static_cast<double>(threads) * 16.0;  // one 16-byte vector per thread
    // Register variant: load, block-wide max (warp shuffles, shared memory, two barriers),
    // block-wide sum, store: a fixed chain plus a DRAM round trip or so per element a thread
    // holds (kSoftmaxRegBaseRoundTrips).
    // Multi-pass variants: per iteration a DRAM round trip in the first pass and an L2 round trip
    // in each later pass (none from shared memory), plus the three passes' issue-bound
    // arithmetic (see the constants), which co-resident CTAs share.
    if (reg_cnt < 10) {
      rw.serial_round_trips = kSoftmaxRegBaseRoundTrips +
                              kSoftmaxRegRoundTripsPerElement * static_cast<double>(reg_cnt);
      out.push_back(
          row_launch(hw, name, "softmax", {threads, 1, 1}, regs, smem, R, 1, rw, inflight));
    } else {
      const double instructions =
          c * (e >= 4.0 ? kMultiPassInstructionsPerElement32 : kMultiPassInstructionsPerElement16) *
          (smem_ok ? kSmemVariantInstructionScale : 1.0);
      // Thread instructions at the SM's issue rate: 4 schedulers x 32 lanes a cycle.
      rw.serial_cycles = instructions / 128.0;
      rw.fp32 = std::max(rw.fp32, 2.0 * instructions);  // issue slots, as FP32 lanes count them
      // Each pass's iterations wait a DRAM round trip (the first pass) or an L2 round trip (the
      // plain kernel's later ones); a tail iteration kMultiPassTailIterationShare of one.
      const auto with_iterations = [&](PassIterations pass) {
        RowWork w = rw;
        const double it = static_cast<double>(pass.whole) +
                          kMultiPassTailIterationShare * static_cast<double>(pass.tail);
        w.serial_round_trips = it + kSoftmaxBlockReduceRoundTrips;
        w.serial_l2_trips = smem_ok ? 0.0 : 2.0 * it;
        return w;
      };
      if (smem_ok) {  // rows of a multiple of ilp elements, vectors only
        out.push_back(row_launch(hw, name, "softmax", {threads, 1, 1}, regs, smem, R, 1,
                                 with_iterations({ceil_div(C, threads * ilp), 0}), inflight));
      } else {
        // Row r starts (r * C) % ilp elements past a 16-byte boundary (the tensor's base is
        // aligned): the rows fall into classes by their passes' iterations, launched in turn.
        std::map<PassIterations, std::int64_t> rows_by_iterations;
        const std::int64_t period = std::min<std::int64_t>(R, ilp);
        for (std::int64_t k = 0; k < period; ++k) {
          const std::int64_t shift = (k * C) % ilp;
          const PassIterations pass = multi_pass_iterations(C, threads, ilp, shift);
          rows_by_iterations[pass] += (R - k + period - 1) / period;
        }
        std::vector<RowClass> classes;
        for (const auto& [pass, rows] : rows_by_iterations) {
          classes.push_back({rows, with_iterations(pass)});
        }
        out.push_back(
            row_launch(hw, name, "softmax", {threads, 1, 1}, regs, smem, 1, classes, inflight));
      }
    }
    out.back().reads = {detail::tensor(tag, input, row * static_cast<double>(R))};
    out.back().writes = {detail::tensor(tag, output, row * static_cast<double>(R))};
  }
  return out;
}

std::vector<Launch> RowReductionModel::lower(const Op& op, const hw::HardwareSpec& hw,
                                             const std::string& tag) const {
  const auto& s = op.as<RowShape>();
  hw::DType d = op.dtype() == hw::DType::kTf32 ? hw::DType::kFp32 : op.dtype();
  switch (op.kind()) {
    case OpKind::kLayerNorm: return lower_norm(hw, false, s.R, s.C, d, tag);
    case OpKind::kRmsNorm: return lower_norm(hw, true, s.R, s.C, d, tag);
    case OpKind::kSoftmax: return lower_softmax(s.R, s.C, d, "x", "y", hw, tag);
    default: throw ModelError(fmt::format("row reduction: cannot lower {}", op_name(op.kind())));
  }
}

}  // namespace gpusim::models
