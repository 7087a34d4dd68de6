// sdpa (prefill): on sm_90 PyTorch 2.11 runs cuDNN's fused attention (cudnn_attention.cpp);
// on sm_80 and sm_120 its flash backend, FlashAttention-2's flash_fwd_kernel (this file).
//
// Source: aten/src/ATen/native/transformers/cuda/flash_attn/flash_fwd_launch_template.h and
// flash_fwd_kernel.h (FA2 vendored in PyTorch; PyTorch 2.11 runs these on sm_80, sm_90 and
// sm_120 alike, not FA3). One CTA per (query tile of kBlockM rows, batch, head):
// grid = (ceil(Sq / kBlockM), B, H), kNWarps * 32 threads; each CTA keeps its Q tile in shared
// memory and streams K and V in tiles of kBlockN keys (cp.async, one tile ahead), with an
// online softmax. Causal CTAs stop at the diagonal.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
#include "models/flash_common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
}  // namespace

int flash_fwd_regs(const FlashTraits& t) {
  // ops_h100.csv: flash_fwd_kernel 255 (hdim 64 128x128 and hdim 128 128x64 traits),
  // flash_fwd_splitkv_kernel 246 (hdim 128, 64x128). Other traits are not measured; the
  // 128-row kernels are assumed to sit at the 255 cap like the measured ones.
  return t.block_m == 64 ? 246 : 255;
}

int flash_combine_regs(int log_max_splits) {
  return log_max_splits <= 1 ? 54 : 52;  // ops_h100.csv: 54 for 2 splits, 52 for 7..32
}

std::int64_t flash_combine_smem(std::int64_t block_m, int log_max_splits) {
  // ops_h100.csv: 48, 160, 320, 640 bytes for 2, <=8, <=16, <=32 splits at kBlockM = 4.
  return detail::round_up((std::int64_t{1} << log_max_splits) * (block_m + 1) * 4, 16);
}

std::string flash_traits_name(const FlashTraits& t) {
  return fmt::format("Flash_fwd_kernel_traits<{}, {}, {}, {}, false, false>", t.head_dim,
                     t.block_m, t.block_n, t.warps);
}

std::string fmt_flash_name(const char* kernel, const FlashTraits& t, bool causal) {
  return fmt::format("void pytorch_flash::{}<{}, {}>", kernel, flash_traits_name(t),
                     causal ? "causal" : "non-causal");
}

FlashTraits flash_fwd_traits(std::int64_t D, const hw::HardwareSpec& hw) {
  // run_mha_fwd_hdim<D> for the non-dropout case. sm86/sm89 ("is_sm8x") pick smaller tiles for
  // hdim 128; sm_80, sm_90 and sm_120 take the sm80 branch. hdim 224/256 fall back to
  // 64-row tiles when the opt-in shared memory per block is below 2*D*(128 + 2*64) bytes.
  FlashTraits t;
  const std::int64_t max_smem = hw.sm.shared_memory_per_cta;
  if (D <= 32) {
    t = {32, 128, 128, 4};
  } else if (D <= 64) {
    t = {64, 128, 128, 4};
  } else if (D <= 96) {
    t = {96, 128, 64, 4};
  } else if (D <= 128) {
    t = {128, 128, 64, 4};
  } else if (D <= 160) {
    t = {160, 128, 32, 4};
  } else if (D <= 192) {
    t = {192, 128, 64, 8};
  } else if (D <= 224) {
    t = max_smem >= 2 * 224 * (128 + 2 * 64) ? FlashTraits{224, 128, 64, 8}
                                             : FlashTraits{224, 64, 64, 4};
  } else if (D <= 256) {
    t = max_smem >= 2 * 256 * (128 + 2 * 64) ? FlashTraits{256, 128, 64, 8}
                                             : FlashTraits{256, 64, 64, 4};
  } else {
    throw ModelError("sdpa: FlashAttention supports head dimensions up to 256");
  }
  // Flash_fwd_kernel_traits: Q tile plus one K and one V tile in shared memory (16-bit).
  t.smem = 2 * t.head_dim * (t.block_m + 2 * t.block_n);
  t.regs = flash_fwd_regs(t);
  return t;
}

hw::Launch lower_flash_fwd(const FlashFwdProblem& p, const hw::HardwareSpec& hw,
                           const FlashTraits& t) {
  if (p.D % 8 != 0) throw ModelError("sdpa: FlashAttention needs a head dimension multiple of 8");
  if (p.H % p.Hk != 0) throw ModelError("sdpa: query heads must be a multiple of KV heads");
  const double e = detail::elt_bytes(p.dtype);
  const std::int64_t m_blocks = ceil_div(p.Sq, t.block_m);
  const std::int64_t n_blocks_all = ceil_div(p.Sk, t.block_n);
  const std::int64_t groups = p.H / p.Hk;

  hw::Launch l;
  l.name = fmt_flash_name("flash_fwd_kernel", t, p.causal);
  l.family = "flash_fwd";
  l.grid = {m_blocks, p.B, p.H};
  l.block = {32LL * t.warps, 1, 1};
  l.regs_per_thread = t.regs;
  l.smem_per_cta = t.smem;

  // K and V of one (batch, kv head) are shared by the m_blocks x groups CTAs that read them;
  // each takes an equal share of their first (DRAM) read.
  const double kv_head_bytes = 2.0 * static_cast<double>(p.Sk * p.D) * e;
  const double kv_share = kv_head_bytes / static_cast<double>(m_blocks * groups);

  // CTAs in blockIdx order: m (x) fastest, then batch (y), then head (z). The work of a CTA
  // depends only on its query tile, so one pass over m gives the pattern for every (b, h).
  std::vector<hw::CtaWork> per_m;
  for (std::int64_t m = 0; m < m_blocks; ++m) {
    const std::int64_t rows = std::min(t.block_m, p.Sq - m * t.block_m);
    std::int64_t n_blocks = n_blocks_all;
    if (p.causal) {
      // flash_fwd_kernel.h: n_block_max = min(n_blocks, ceil(((m+1)*kBlockM + Sk - Sq) / kBlockN))
      // (bottom-right aligned causal mask, as PyTorch passes it).
      n_blocks = std::min(n_blocks_all,
                          ceil_div((m + 1) * t.block_m + p.Sk - p.Sq, t.block_n));
      n_blocks = std::max<std::int64_t>(n_blocks, 0);
      // A window (window_size_left): key blocks wholly before the first query's window are
      // skipped, n_block_min = max(0, (m*kBlockM + Sk - Sq - window + 1) / kBlockN).
      if (p.window > 0) {
        const std::int64_t first = std::max<std::int64_t>(0, (m * t.block_m + p.Sk - p.Sq - p.window + 1) / t.block_n);
        n_blocks = std::max<std::int64_t>(n_blocks - first, 0);
      }
    }
    const std::int64_t keys = std::min(n_blocks * t.block_n, p.Sk);  // keys actually loaded
    hw::CtaWork w;
    // Tensor cores run whole kBlockM x kBlockN tiles (rows past Sq and keys past Sk are
    // masked after the MMA, not skipped): QK^T and PV, 2 FLOPs per FMA each.
    const double tile_scores = static_cast<double>(t.block_m) * static_cast<double>(n_blocks) *
                               static_cast<double>(t.block_n);
    w.tensor_flops = 4.0 * tile_scores * static_cast<double>(p.D);
    w.tensor_dtype = p.dtype;
    // FlashAttention-2 is sm_80 code: mma.sync, at its pipelined share of the tensor rate.
    w.tensor_efficiency = hw.throughput.mma_sync_pipelined_share;
    // Online softmax per score: scale-and-subtract (FMA), running max, row sum, conversion to
    // 16-bit for the PV MMA: about 4 FP32 ops (softmax.h); plus the O rescale per key tile.
    w.fp32_flops = 4.0 * tile_scores + static_cast<double>(t.block_m * p.D * n_blocks);
    // One exp2 per score, plus one per row and key tile for the running-max correction.
    w.sfu_ops = tile_scores + static_cast<double>(t.block_m * n_blocks);
    const double q_bytes = static_cast<double>(rows * p.D) * e;
    const double o_bytes = static_cast<double>(rows * p.D) * e + 4.0 * rows;  // O + LSE (fp32)
    w.l2_bytes = q_bytes + 2.0 * static_cast<double>(keys * p.D) * e + o_bytes;
    w.dram_read_bytes = q_bytes + kv_share;
    w.dram_write_bytes = o_bytes;
    // cp.async keeps one K or V tile in flight while the other is consumed.
    w.max_inflight_bytes = static_cast<double>(t.block_n * p.D) * e;
    // Prologue: Q and the first K tile arrive before the first MMA (one DRAM round trip);
    // epilogue: O goes out through shared memory (one L2 round trip).
    w.fixed = hw.dram.latency + hw.l2.hit_latency;
    // QK^T, softmax and PV of a tile depend on each other: the tensor and SIMT phases add up.
    w.pipe_overlap = 0;
    per_m.push_back(w);
  }
  if (m_blocks > 1 && !p.causal && p.Sq % t.block_m == 0) {
    detail::add_class(l, l.grid.count(), per_m.front());  // all CTAs alike
  } else {
    l.ctas.reserve(static_cast<std::size_t>(p.B * p.H * m_blocks));
    for (std::int64_t bh = 0; bh < p.B * p.H; ++bh) {
      for (const auto& w : per_m) detail::add_class(l, 1, w);
    }
  }
  l.reads = {detail::tensor(p.tag, p.q, static_cast<double>(p.B * p.H * p.Sq * p.D) * e),
             detail::tensor(p.tag, p.k, static_cast<double>(p.B * p.Hk * p.Sk * p.D) * e),
             detail::tensor(p.tag, p.v, static_cast<double>(p.B * p.Hk * p.Sk * p.D) * e)};
  l.writes = {detail::tensor(p.tag, p.o, static_cast<double>(p.B * p.H * p.Sq * p.D) * e),
              detail::tensor(p.tag, "lse", 4.0 * static_cast<double>(p.B * p.H * p.Sq))};
  return l;
}

std::vector<Launch> FlashAttentionModel::lower(const Op& op, const hw::HardwareSpec& hw,
                                               const std::string& tag) const {
  const auto& s = op.as<SdpaShape>();
  if (op.dtype() != hw::DType::kBf16 && op.dtype() != hw::DType::kFp16) {
    throw ModelError("sdpa: the flash backend runs fp16 and bf16 only");
  }
  FlashFwdProblem p;
  p.B = s.B;
  p.H = s.H;
  p.Hk = s.H;
  p.Sq = s.S;
  p.Sk = s.keys > 0 ? s.keys : s.S;
  p.D = s.D;
  p.causal = s.causal;
  p.window = s.window;
  p.masked = s.masked;
  p.dropout = s.dropout;
  p.dtype = op.dtype();
  p.tag = tag;
  // PyTorch 2.11 prefers cuDNN's fused attention on sm_90 (ops_h100.csv: every default-backend
  // sdpa ran cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma); elsewhere FA2.
  if (cudnn_sdpa_applies(hw, s.D)) return lower_cudnn_sdpa(p, hw);
  return {lower_flash_fwd(p, hw, flash_fwd_traits(s.D, hw))};
}

}  // namespace gpusim::models
