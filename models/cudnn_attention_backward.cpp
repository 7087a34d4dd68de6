// cuDNN 9.19's fused attention backward on sm_90 as F.scaled_dot_product_attention's backward
// runs it: dot(dO, O), the KV-stationary flash backward, dQ's conversion to 16 bits and, with
// grouped-query attention, the per-group dK/dV reductions. Launch shapes by their measured
// grids (validation/data/hf_train_h100.json.gz).
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <string>

#include "models/common.h"
#include "models/flash_common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
using detail::dram_round_trips;
using detail::StreamingKernel;

// cuDNN's flash backward (KV-stationary persistent kernel): each work unit (64 keys of one
// batch and head) loads its K and V tiles and the first Q and dO tiles before its first MMA and
// writes dK and dV at its end, a pipeline fill and drain the warp-specialized loop does not hide:
// about 4.2 us a unit beyond its tile pairs' tensor and SIMT time. Fitted on the 8 calibration
// rows without dropout (llama 1B s512/s1024, llama 8B, qwen2, qwen3, mistral: 50-154 us).
constexpr double kBpropUnitRoundTrips = 12.0;
// cuDNN's small kernels around it (dot(dO, O), the dQ conversion, the per-head dK/dV
// reductions): their measured times grow in steps of about 4 CTAs per SM (convert_dq: 7.6-7.9 us
// at 11.6 CTAs an SM, 9.4-10.3 at 13.6-15.5, 20.3-21.2 at 31), as kernels of 128 registers a
// thread would (registers not recorded), each CTA a chain of dependent loads: its rows of O and
// dO, of the accumulator, or its slice of each head of the group in turn. Fitted on the same
// rows (GPT-2's agree).
constexpr int kCudnnRowKernelRegs = 128;
constexpr double kDotRoundTrips = 2.0;
constexpr double kConvertDqRoundTrips = 4.5;
constexpr double kReduceHeadRoundTripsPerHead = 1.0;
// With an explicit mask (a compiled model hands sdpa its causal mask as a tensor) each tile pair
// loads and applies the mask's tile before the softmax's recomputation: the pair takes about this
// many times its tensor-core time, as the forward's masked tiles do (models/cudnn_attention.cpp).
// Fitted on the compiled calibration cases of validation/data/hf_train4_h100.json.gz (Qwen3 0.6B at
// 4 x 1024: 312 us; Llama 3.2 1B at 4 x 512: 98 us).
constexpr double kMaskedPairSlowdown = 2.0;

}  // namespace

// ---- cuDNN's attention backward (sm_90) ----------------------------------------------------

namespace {
constexpr std::int64_t kBpropTile = 64;  // "64x64xD": 64 queries x 64 keys per step

// The head dimension the backward kernels are built for (D padded up).
// (192: DeepSeek's MLA query/key heads, "64x64x192" in hf_train3_h100.json.gz.)
std::int64_t bprop_d_tile(std::int64_t D) { return D <= 64 ? 64 : (D <= 128 ? 128 : (D <= 192 ? 192 : 256)); }

// cuDNN's small row kernels (128 threads): dot(dO, O) and the per-head reductions take
// 1024 / D rows a CTA (16 at D = 64, 8 at 128); the dQ conversion 2048 / D.
Launch cudnn_row_kernel(std::string name, std::int64_t rows_per_cta, std::int64_t S, std::int64_t B, std::int64_t H,
                        double read, double write, double trips, int regs, std::vector<TensorUse> reads,
                        std::vector<TensorUse> writes, const hw::HardwareSpec& hw) {
  StreamingKernel k;
  k.name = std::move(name);
  k.family = "cudnn_sdpa_bwd";
  const std::int64_t gx = ceil_div(S, rows_per_cta);
  k.ctas = gx * B * H;
  k.threads = 128;
  k.regs = regs;
  k.read_bytes = read;
  k.write_bytes = write;
  k.inflight_per_cta = 128.0 * 16.0 * 2.0;  // a 16-byte vector of each input per thread
  k.round_trips = trips;
  k.reads = std::move(reads);
  k.writes = std::move(writes);
  Launch l = detail::streaming_launch(k, hw);
  l.grid = {gx, B, H};
  return l;
}
}  // namespace

std::vector<Launch> lower_sdpa_backward(std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t S,
                                        std::int64_t D, bool causal, hw::DType dtype, const TensorUse& q,
                                        const TensorUse& k, const TensorUse& v, const TensorUse& o,
                                        const TensorUse& grad_o, const TensorUse& grad_q, const TensorUse& grad_k,
                                        const TensorUse& grad_v, const hw::HardwareSpec& hw, bool dropout,
                                        bool masked) {
  if (B <= 0 || Hq <= 0 || Hkv <= 0 || S <= 0 || D <= 0) throw ModelError("sdpa backward: sizes must be positive");
  if (Hq % Hkv != 0) throw ModelError("sdpa backward: query heads must be a multiple of KV heads");
  if (D % 8 != 0 || D > 256) throw ModelError("sdpa backward: cuDNN needs a head dimension multiple of 8, at most 256");
  const double e = detail::elt_bytes(dtype);
  const std::int64_t dt = bprop_d_tile(D);
  const bool gqa = Hq > Hkv;
  const double q_elems = static_cast<double>(B * Hq * S * D);   // Q, O, dO, dQ
  const double kv_elems = static_cast<double>(B * Hkv * S * D);  // K, V, dK, dV
  const double rows = static_cast<double>(B * Hq * S);
  const TensorUse dq_acc{grad_q.tensor + ".accum", static_cast<std::int64_t>(q_elems * 4)};
  const TensorUse stats{grad_q.tensor + ".softmax_d", static_cast<std::int64_t>(rows * 4)};
  const TensorUse lse{o.tensor + ".stats", static_cast<std::int64_t>(rows * 4)};
  // With grouped heads the flash kernel writes dK and dV per query head, reduced afterwards.
  const TensorUse dk_part{grad_k.tensor + ".per_q_head", static_cast<std::int64_t>(q_elems * e)};
  const TensorUse dv_part{grad_v.tensor + ".per_q_head", static_cast<std::int64_t>(q_elems * e)};

  std::vector<Launch> out;
  // The dynamic tile scheduler's counter (size not recorded; 4 bytes per CTA assumed).
  out.push_back(detail::memset_launch(grad_q.tensor, "cudnn_bwd_workspace", 4 * hw.sm_count));
  // D = rowsum(dO * O) per query row; the same kernel zeroes dQ's fp32 accumulator (no memset
  // of it is launched, and the kernel's 8-27 us fit reading O and dO and writing both).
  out.push_back(cudnn_row_kernel(fmt::format("void cudnn::fusion::compute_dot_do_o_specialized<true, {}>", dt),
                                 std::max<std::int64_t>(1, 1024 / dt), S, B, Hq, 2.0 * q_elems * e,
                                 rows * 4 + q_elems * 4, kDotRoundTrips, kCudnnRowKernelRegs, {o, grad_o},
                                 {stats, dq_acc}, hw));

  // The flash backward: persistent (a CTA per SM), KV-stationary work units of 64 keys of one
  // (batch, query head); each walks the query tiles at or after its keys (causal) and per tile
  // computes S = QK^T, dP = dO V^T, dV += P^T dO, dK += dS^T Q and dQ += dS K (atomics into the
  // fp32 accumulator): 5 matmuls of 64 x 64 x D, where the forward does 2.
  Launch l;
  l.name = fmt::format(
      "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x{}_1x4x1_cga1x1x1_kernel0_0", dt);
  l.family = "cudnn_sdpa_bwd";
  l.block = {384, 1, 1};  // a producer and two consumer warpgroups, one CTA per SM
  l.regs_per_thread = 168;
  // Not measured: K and V tiles, two stages of Q and dO tiles, P and dS (16-bit), 1 KiB of
  // barriers and statistics.
  l.smem_per_cta = 6 * kBpropTile * dt * 2 + 2 * kBpropTile * kBpropTile * 2 + 1024;
  const std::int64_t mb = ceil_div(S, kBpropTile), nb = ceil_div(S, kBpropTile);
  const std::int64_t units = B * Hq * nb;
  const std::int64_t ctas = std::min<std::int64_t>(units, hw.sm_count);
  l.grid = {ctas, 1, 1};
  const double pair_flops = 10.0 * kBpropTile * kBpropTile * static_cast<double>(dt);
  const double pair_seconds = pair_flops / (hw.tensor_flops_per_cycle(dtype) * hw.clocks.sustained_tensor_hz) *
                              (masked ? kMaskedPairSlowdown : 1.0);
  const double unit_seconds = kBpropUnitRoundTrips * hw.dram.latency.seconds();
  // Heaviest units first (the longest causal key blocks), each to the CTA free first: the
  // dynamic scheduler the memset resets.
  struct Load {
    double cost;
    std::int64_t cta;
    bool operator>(const Load& x) const { return cost != x.cost ? cost > x.cost : cta > x.cta; }
  };
  std::priority_queue<Load, std::vector<Load>, std::greater<>> free_at;
  for (std::int64_t c = 0; c < ctas; ++c) free_at.push({0.0, c});
  std::vector<double> cta_units(static_cast<std::size_t>(ctas)), cta_pairs(static_cast<std::size_t>(ctas));
  for (std::int64_t n = 0; n < nb; ++n) {  // n ascending: most query tiles first
    const std::int64_t pairs = causal ? mb - n : mb;
    for (std::int64_t bh = 0; bh < B * Hq; ++bh) {
      Load slot = free_at.top();
      free_at.pop();
      cta_units[static_cast<std::size_t>(slot.cta)] += 1;
      cta_pairs[static_cast<std::size_t>(slot.cta)] += static_cast<double>(pairs);
      slot.cost += unit_seconds + static_cast<double>(pairs) * pair_seconds;
      free_at.push(slot);
    }
  }
  const double tile = static_cast<double>(kBpropTile * D) * e;  // one 64-row tile of Q, K, V or dO
  const double unique_in = 2.0 * q_elems * e + 2.0 * kv_elems * e + 2.0 * rows * 4;  // Q, dO, K, V, LSE, D
  const double outputs = q_elems * 4 + 2.0 * (gqa ? q_elems : kv_elems) * e;        // dQ acc, dK, dV
  for (std::int64_t c = 0; c < ctas; ++c) {
    const double u = cta_units[static_cast<std::size_t>(c)], p = cta_pairs[static_cast<std::size_t>(c)];
    hw::CtaWork w;
    w.tensor_dtype = dtype;
    w.tensor_flops = p * pair_flops;
    // A masked pair's matmuls wait on the mask tile's load and add (the same FLOPs, slower).
    if (masked) w.tensor_efficiency = 1.0 / kMaskedPairSlowdown;
    // Per score: P = exp2(S - LSE), dS = P (dP - D), both rounded to 16 bits for their matmuls.
    const double scores = p * kBpropTile * kBpropTile;
    w.fp32_flops = 6.0 * scores + (dropout ? kDropoutOpsPerScore * scores : 0.0);
    w.sfu_ops = scores;
    // K and V in and dK and dV out per unit; per tile pair Q and dO in, their LSE and D rows,
    // and dQ's 64 x D fp32 atomic adds.
    w.l2_bytes = u * 4.0 * tile + p * (2.0 * tile + 2.0 * kBpropTile * 4 + kBpropTile * D * 4.0) +
                 (masked ? p * kBpropTile * kBpropTile : 0.0);  // the bool mask's tile
    w.dram_read_bytes = unique_in / static_cast<double>(ctas);
    w.dram_write_bytes = outputs / static_cast<double>(ctas);
    w.max_inflight_bytes = 2.0 * 2.0 * tile;  // two stages of Q and dO by TMA
    w.bulk_copies = true;
    w.pipe_overlap = 0;  // matmul -> softmax -> matmul depend on each other, as in the forward
    w.fixed = dram_round_trips(u * kBpropUnitRoundTrips, hw);
    detail::add_class(l, 1, w);
  }
  l.reads = {q, k, v, grad_o, lse, stats, dq_acc};
  l.writes = {dq_acc};
  if (gqa) {
    l.writes.push_back(dk_part);
    l.writes.push_back(dv_part);
  } else {
    l.writes.push_back(grad_k);
    l.writes.push_back(grad_v);
  }
  out.push_back(l);

  // dQ from its fp32 accumulator to the 16-bit gradient.
  out.push_back(cudnn_row_kernel("void cudnn::fusion::convert_dq_to_16bits<true>", std::max<std::int64_t>(1, 2048 / dt),
                                 S, B, Hq, q_elems * 4, q_elems * e, kConvertDqRoundTrips, kCudnnRowKernelRegs,
                                 {dq_acc}, {grad_q}, hw));
  if (gqa) {
    // dK and dV summed over each group's query heads, a head's slice after another.
    const double group = static_cast<double>(Hq / Hkv);
    for (const auto& [part, grad] : {std::pair{dk_part, grad_k}, std::pair{dv_part, grad_v}}) {
      out.push_back(cudnn_row_kernel("void cudnn::fusion::fmha_reduce_head<true>", std::max<std::int64_t>(1, 1024 / dt),
                                     S, B, Hkv, q_elems * e, kv_elems * e, kReduceHeadRoundTripsPerHead * group,
                                     kCudnnRowKernelRegs, {part}, {grad}, hw));
    }
  }
  return out;
}

}  // namespace gpusim::models
