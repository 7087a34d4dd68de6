// sdpa_decode: one query token per sequence against a KV cache. On sm_90 PyTorch 2.11 runs
// cuDNN (cudnn_attention.cpp); on sm_80 and sm_120 its flash backend: FlashAttention-2's
// split-KV kernel plus a combine kernel (this file).
//
// Source: aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp (mha_fwd,
// set_params_splitkv, num_splits_heuristic) and flash_fwd_launch_template.h
// (run_mha_fwd_splitkv_dispatch, run_mha_fwd_splitkv):
//  * GQA with one query: q (b, 1, Hkv*g, d) is viewed as (b, g, Hkv, d) ("seqlenq_ngroups_swapped"),
//    so seqlen_q = g = Hq/Hkv and heads = Hkv: one CTA serves all g query heads of a KV head;
//  * kBlockM = 64, kBlockN = 256 (d <= 64), 128 (d <= 128) or 64, 4 warps;
//  * splits = num_splits_heuristic(B * heads * ceil(seqlen_q / 64), 2 * SMs, ceil(L / kBlockN), 128)
//    (the SM count is doubled because two 128-thread CTAs fit per SM);
//  * splits == 1: the plain flash_fwd_kernel; otherwise flash_fwd_splitkv_kernel on
//    grid (m_blocks, splits, B * heads), each split taking ceil(n_blocks / splits) key tiles,
//    writing fp32 partial O and LSE, then flash_fwd_splitkv_combine_kernel on
//    ceil(B * heads * seqlen_q / kBlockM) CTAs of 128 threads (kBlockM = 4, 8 or 16 rows).
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
#include "models/flash_common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;

FlashTraits splitkv_traits(std::int64_t D) {
  FlashTraits t;
  t.head_dim = detail::round_up(D, 32);
  t.block_m = 64;
  t.block_n = D <= 64 ? 256 : (D <= 128 ? 128 : 64);
  t.warps = 4;
  t.smem = 2 * t.head_dim * (t.block_m + 2 * t.block_n);
  t.regs = flash_fwd_regs(t);
  return t;
}

int log2_ceil(int x) {
  int l = 0;
  while ((1 << l) < x) ++l;
  return l;
}

}  // namespace

int flash_num_splits(int batch_nheads_mblocks, int num_sms, int num_n_blocks, int max_splits) {
  // Enough CTAs to almost fill the SMs: no split.
  if (static_cast<float>(batch_nheads_mblocks) >= 0.8f * static_cast<float>(num_sms)) return 1;
  max_splits = std::min({max_splits, num_sms, num_n_blocks});
  // A split count is eligible only when it changes the key tiles per split.
  const auto eligible = [&](int s) {
    return s == 1 || ceil_div(num_n_blocks, s) != ceil_div(num_n_blocks, s - 1);
  };
  std::vector<float> eff(static_cast<std::size_t>(std::max(max_splits, 0)), 0.f);
  float best = 0.f;
  for (int s = 1; s <= max_splits; ++s) {
    if (!eligible(s)) continue;
    const float waves = static_cast<float>(batch_nheads_mblocks * s) / static_cast<float>(num_sms);
    eff[s - 1] = waves / std::ceil(waves);
    best = std::max(best, eff[s - 1]);
  }
  for (int s = 1; s <= max_splits; ++s) {
    if (eligible(s) && eff[s - 1] >= 0.85f * best) return s;
  }
  return 1;
}

std::vector<Launch> DecodeAttentionModel::lower(const Op& op, const hw::HardwareSpec& hw,
                                                const std::string& tag) const {
  const auto& s = op.as<SdpaDecodeShape>();
  if (op.dtype() != hw::DType::kBf16 && op.dtype() != hw::DType::kFp16) {
    throw ModelError("sdpa_decode: the flash backend runs fp16 and bf16 only");
  }
  if (s.Hkv <= 0 || s.Hq % s.Hkv != 0) {
    throw ModelError("sdpa_decode: Hq must be a multiple of Hkv");
  }
  if (s.D % 8 != 0 || s.D > 256) {
    throw ModelError("sdpa_decode: FlashAttention needs a head dimension multiple of 8, <= 256");
  }
  // PyTorch 2.11 prefers cuDNN on sm_90 (ops_h100.csv: every default-backend decode ran cuDNN's
  // sdpa_sm80_flash_fprop_wmma kernel, plus lean_reduction_kernel when it split the keys).
  if (cudnn_sdpa_applies(hw, s.D)) {
    return lower_cudnn_decode(s.B, s.Hq, s.Hkv, s.L, s.D, op.dtype(), hw, tag);
  }
  const double e = detail::elt_bytes(op.dtype());
  // mha_fwd: GQA decode swaps the query groups into the sequence dimension.
  const std::int64_t groups = s.Hq / s.Hkv;
  const std::int64_t heads = groups > 1 ? s.Hkv : s.Hq;
  const std::int64_t seqlen_q = groups > 1 ? groups : 1;

  const FlashTraits t = splitkv_traits(s.D);
  const std::int64_t m_blocks = ceil_div(seqlen_q, t.block_m);
  const std::int64_t n_blocks = ceil_div(s.L, t.block_n);
  const int splits = flash_num_splits(static_cast<int>(s.B * heads * m_blocks), 2 * hw.sm_count,
                                      static_cast<int>(n_blocks), 128);

  if (splits <= 1) {
    FlashFwdProblem p;
    p.B = s.B;
    p.H = heads;
    p.Hk = heads;
    p.Sq = seqlen_q;
    p.Sk = s.L;
    p.D = s.D;
    p.causal = false;  // mha_fwd: causal is meaningless for one query
    p.dtype = op.dtype();
    p.tag = tag;
    return {lower_flash_fwd(p, hw, flash_fwd_traits(s.D, hw))};
  }

  const std::int64_t tiles_per_split = ceil_div(n_blocks, splits);
  const double oacc_row = 4.0 * static_cast<double>(t.head_dim) + 4.0;  // fp32 O row + LSE
  hw::Launch split;
  split.name = fmt_flash_name("flash_fwd_splitkv_kernel", t, false);
  split.family = "flash_fwd_splitkv";
  split.grid = {m_blocks, splits, s.B * heads};
  split.block = {32LL * t.warps, 1, 1};
  split.regs_per_thread = t.regs;
  split.smem_per_cta = t.smem;
  std::vector<hw::CtaWork> per_split;  // for one (m, b, h); m_blocks is 1 unless g > 64
  for (std::int64_t m = 0; m < m_blocks; ++m) {
    const std::int64_t rows = std::min(t.block_m, seqlen_q - m * t.block_m);
    for (int sp = 0; sp < splits; ++sp) {
      const std::int64_t first = sp * tiles_per_split;
      const std::int64_t tiles = std::clamp<std::int64_t>(n_blocks - first, 0, tiles_per_split);
      const std::int64_t keys = std::clamp<std::int64_t>(s.L - first * t.block_n, 0,
                                                         tiles * t.block_n);
      hw::CtaWork w;
      // The 64-row query tile is computed whole although only `rows` (= g) rows are real:
      // the MMAs run on padded rows (this inflates tensor FLOPs by 64 / g).
      const double tile_scores = static_cast<double>(t.block_m * tiles * t.block_n);
      w.tensor_flops = 4.0 * tile_scores * static_cast<double>(s.D);
      w.tensor_efficiency = hw.throughput.mma_sync_pipelined_share;  // FlashAttention-2's mma.sync
      w.tensor_dtype = op.dtype();
      w.fp32_flops = 4.0 * tile_scores + static_cast<double>(t.block_m * s.D * tiles);
      w.sfu_ops = tile_scores + static_cast<double>(t.block_m * tiles);
      const double q_bytes = static_cast<double>(rows * s.D) * e;
      const double kv_bytes = 2.0 * static_cast<double>(keys * s.D) * e;
      const double out_bytes = static_cast<double>(rows) * oacc_row;
      w.l2_bytes = q_bytes + kv_bytes + out_bytes;
      // Every split of every KV head reads a distinct key range: all of it is unique. Q is
      // read by every split of its head; its first read is shared among them.
      w.dram_read_bytes = q_bytes / splits + kv_bytes;
      w.dram_write_bytes = out_bytes;
      w.max_inflight_bytes = static_cast<double>(t.block_n * s.D) * e;
      w.fixed = hw.dram.latency + hw.l2.hit_latency;  // as flash_fwd_kernel
      per_split.push_back(w);
    }
  }
  // blockIdx order: m (x) fastest, then split (y), then batch*head (z).
  for (std::int64_t bh = 0; bh < s.B * heads; ++bh) {
    for (int sp = 0; sp < splits; ++sp) {
      for (std::int64_t m = 0; m < m_blocks; ++m) {
        detail::add_class(split, 1, per_split[static_cast<std::size_t>(m * splits + sp)]);
      }
    }
  }
  const double q_total = static_cast<double>(s.B * s.Hq * s.D) * e;
  const double kv_total = static_cast<double>(s.B * s.Hkv * s.L * s.D) * e;
  const double oacc_total = static_cast<double>(splits * s.B * s.Hq) * oacc_row;
  split.reads = {detail::tensor(tag, "q", q_total), detail::tensor(tag, "k", kv_total),
                 detail::tensor(tag, "v", kv_total)};
  split.writes = {detail::tensor(tag, "o_accum", oacc_total)};

  // Combine: kBlockM rows per CTA (kHeadDim % 128 == 0 ? 4 : kHeadDim % 64 == 0 ? 8 : 16).
  const std::int64_t cm = t.head_dim % 128 == 0 ? 4 : (t.head_dim % 64 == 0 ? 8 : 16);
  const int log_max_splits = std::max(1, log2_ceil(splits));
  const std::int64_t rows_total = s.B * heads * seqlen_q;  // = B * Hq
  hw::Launch comb;
  comb.name = fmt::format("void pytorch_flash::flash_fwd_splitkv_combine_kernel<{}, {}, {}, true>",
                          flash_traits_name(t), cm, log_max_splits);
  comb.family = "flash_fwd_splitkv_combine";
  comb.grid = {ceil_div(rows_total, cm), 1, 1};
  comb.block = {128, 1, 1};
  comb.regs_per_thread = flash_combine_regs(log_max_splits);
  comb.smem_per_cta = flash_combine_smem(cm, log_max_splits);
  const std::int64_t full = rows_total / cm;
  const std::int64_t rem = rows_total % cm;
  const auto combine_work = [&](std::int64_t rows) {
    hw::CtaWork w;
    const double r = static_cast<double>(rows);
    // Per row: the max and sum of `splits` LSEs (one exp each), then O = sum of scaled rows.
    w.sfu_ops = r * splits + r;  // exp per split, log of the sum
    w.fp32_flops = r * splits * (2.0 * static_cast<double>(s.D) + 4.0);
    const double in = r * splits * oacc_row;
    const double out = r * static_cast<double>(s.D) * e;
    w.l2_bytes = in + out;
    w.dram_read_bytes = in;
    w.dram_write_bytes = out;
    w.max_inflight_bytes = in;  // all partial rows are loaded before the reduction
    w.fixed = hw.l2.hit_latency;  // the LSE loads precede the dependent O loads
    return w;
  };
  detail::add_class(comb, full, combine_work(cm));
  detail::add_class(comb, rem > 0 ? 1 : 0, combine_work(rem));
  comb.reads = {detail::tensor(tag, "o_accum", oacc_total)};
  comb.writes = {detail::tensor(tag, "o", static_cast<double>(s.B * s.Hq * s.D) * e)};
  return {split, comb};
}

}  // namespace gpusim::models
