// FlashMLA (DeepSeek's decode kernel for multi-head latent attention on Hopper), as serving
// engines launch it: get_mla_metadata splits every sequence's latent cache over the SMs, then
// flash_fwd_splitkv_mla_kernel runs one 64-query-head block of one sequence against one split
// (256 threads, two warpgroups, one CTA per SM), and a combine kernel merges the splits. Keys are
// the latent plus the rotated shared key (kv_lora_rank + qk_rope_head_dim per token); values are
// the latent itself, so each token's cache row is read once for all heads of the block.
// Shapes from the FlashMLA repository's README and kernel launch code (block_size_m 64,
// page block 64, 256 threads); not measured here.
#include <fmt/format.h>

#include <algorithm>

#include "models/common.h"
#include "models/families.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;
constexpr std::int64_t kHeadsPerBlock = 64;  // query heads per CTA (block_size_m)
constexpr std::int64_t kKeysPerTile = 64;    // tokens per inner tile (page block)

TensorUse sized(const TensorUse& t, double bytes) { return TensorUse{t.tensor, static_cast<std::int64_t>(bytes)}; }
}  // namespace

std::vector<Launch> lower_flash_mla(std::int64_t B, std::int64_t heads, std::int64_t keys, std::int64_t latent,
                                    std::int64_t rope, hw::DType dtype, const TensorUse& q, const TensorUse& cache,
                                    const TensorUse& out, const hw::HardwareSpec& hw) {
  const double e = detail::elt_bytes(dtype);
  const std::int64_t head_blocks = ceil_div(heads, kHeadsPerBlock);
  const std::int64_t tiles = ceil_div(keys, kKeysPerTile);
  // Splits per (sequence, head block): enough CTAs to cover the SMs once, at least a tile each.
  const std::int64_t base = B * head_blocks;
  const std::int64_t splits = std::clamp<std::int64_t>(hw.sm_count / std::max<std::int64_t>(base, 1), 1, tiles);
  const std::int64_t tiles_per_split = ceil_div(tiles, splits);

  Launch meta;
  meta.name = "get_mla_metadata_kernel";
  meta.family = "flash_mla_metadata";
  meta.grid = {1, 1, 1};
  meta.block = {32, 1, 1};
  meta.regs_per_thread = 32;
  hw::CtaWork mw;
  mw.l2_bytes = mw.dram_read_bytes = static_cast<double>(B) * 4;
  mw.dram_write_bytes = static_cast<double>(base * splits) * 16;
  mw.fixed = hw.dram.latency;
  detail::add_class(meta, 1, mw);

  Launch k;
  k.name = fmt::format("flash::flash_fwd_splitkv_mla_kernel<{}, {}>", latent + rope, latent);
  k.family = "flash_mla";
  k.grid = {splits, head_blocks, B};
  k.block = {256, 1, 1};
  k.regs_per_thread = 168;
  k.smem_per_cta = 224 * 1024;  // Q, two K/V stages and the softmax state, within the 227 KiB limit
  const double rows = static_cast<double>(std::min(heads, kHeadsPerBlock));
  for (std::int64_t sp = 0; sp < splits; ++sp) {
    const std::int64_t t = std::clamp<std::int64_t>(tiles - sp * tiles_per_split, 0, tiles_per_split);
    const double n = static_cast<double>(std::min(keys - sp * tiles_per_split * kKeysPerTile, t * kKeysPerTile));
    if (n <= 0) continue;
    hw::CtaWork w;
    w.tensor_dtype = dtype;
    // QK^T over latent + rope, PV over the latent; 64-row tiles computed whole.
    w.tensor_flops = 2.0 * kHeadsPerBlock * n * static_cast<double>(latent + rope) + 2.0 * kHeadsPerBlock * n * static_cast<double>(latent);
    w.fp32_flops = 4.0 * kHeadsPerBlock * n;
    w.sfu_ops = kHeadsPerBlock * n;
    const double qb = rows * static_cast<double>(latent + rope) * e;
    const double kv = n * static_cast<double>(latent + rope) * e;
    const double o = splits > 1 ? rows * static_cast<double>(latent + 2) * 4.0 : rows * static_cast<double>(latent) * e;
    w.l2_bytes = qb + kv + o;
    w.dram_read_bytes = qb / static_cast<double>(splits) + kv;
    w.dram_write_bytes = o;
    w.max_inflight_bytes = 2.0 * kKeysPerTile * static_cast<double>(latent + rope) * e;  // two stages
    w.fixed = hw.dram.latency + hw.l2.hit_latency;
    detail::add_class(k, base, w);
  }
  const double q_bytes = static_cast<double>(B * heads * (latent + rope)) * e;
  const double cache_bytes = static_cast<double>(B * keys * (latent + rope)) * e;
  const double out_bytes = static_cast<double>(B * heads * latent) * e;
  const double partial = static_cast<double>(splits * B * heads * (latent + 2)) * 4.0;
  k.reads = {sized(q, q_bytes), sized(cache, cache_bytes)};
  if (splits == 1) {
    k.writes = {sized(out, out_bytes)};
    return {meta, k};
  }
  const TensorUse partials{out.tensor + ".partial", static_cast<std::int64_t>(partial)};
  k.writes = {partials};

  Launch c;
  c.name = "flash::flash_fwd_mla_combine_kernel";
  c.family = "flash_mla_combine";
  c.grid = {B * heads, 1, 1};
  c.block = {128, 1, 1};
  c.regs_per_thread = 64;
  hw::CtaWork cw;
  const double in = static_cast<double>(splits * (latent + 2)) * 4.0;
  cw.fp32_flops = static_cast<double>(splits) * 2.0 * static_cast<double>(latent);
  cw.sfu_ops = 2.0 * static_cast<double>(splits);
  cw.l2_bytes = in + static_cast<double>(latent) * e;
  cw.dram_read_bytes = in;
  cw.dram_write_bytes = static_cast<double>(latent) * e;
  cw.max_inflight_bytes = in;
  cw.fixed = hw.l2.hit_latency;
  detail::add_class(c, B * heads, cw);
  c.reads = {partials};
  c.writes = {sized(out, out_bytes)};
  return {meta, k, c};
}

}  // namespace gpusim::models
