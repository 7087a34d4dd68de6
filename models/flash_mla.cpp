// FlashMLA (DeepSeek's decode kernel for multi-head latent attention on Hopper), as serving
// engines launch it (on chips with less shared memory, the same decomposition with smaller key
// tiles): get_mla_metadata splits every sequence's latent cache over the SMs, then
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

TensorUse sized(const TensorUse& t, double bytes) { return TensorUse{t.tensor, static_cast<std::int64_t>(bytes)}; }
}  // namespace

std::vector<Launch> lower_flash_mla(std::int64_t B, std::int64_t heads, std::int64_t keys, std::int64_t latent,
                                    std::int64_t rope, hw::DType dtype, const TensorUse& q, const TensorUse& cache,
                                    const TensorUse& out, const hw::HardwareSpec& hw) {
  const double e = detail::elt_bytes(dtype);
  // 64 tokens a tile in two stages beside the 64-head Q block (about 220 KiB on Hopper); chips
  // with less shared memory per CTA take the first smaller (heads, tokens) blocking that fits
  // (the portable MLA decode kernels serving engines use there work the same way).
  std::int64_t heads_per_block = 16, keys_per_tile = 16;
  const auto smem_of = [&](std::int64_t heads_block, std::int64_t tile) {
    return static_cast<std::int64_t>(static_cast<double>((heads_block + 2 * tile) * (latent + rope)) * e) + 8192;
  };
  for (const auto& [hb, tile] : std::vector<std::pair<std::int64_t, std::int64_t>>{{64, 64}, {64, 32}, {64, 16}, {32, 32}, {32, 16}, {16, 16}}) {
    if (smem_of(hb, tile) <= hw.sm.shared_memory_per_cta) {
      heads_per_block = hb;
      keys_per_tile = tile;
      break;
    }
  }
  const std::int64_t smem = smem_of(heads_per_block, keys_per_tile);  // too big still: the engine says so
  const std::int64_t head_blocks = ceil_div(heads, heads_per_block);
  const std::int64_t tiles = ceil_div(keys, keys_per_tile);
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
  k.smem_per_cta = smem;  // Q, two K/V stages and the softmax state
  const double rows = static_cast<double>(std::min(heads, heads_per_block));
  for (std::int64_t sp = 0; sp < splits; ++sp) {
    const std::int64_t t = std::clamp<std::int64_t>(tiles - sp * tiles_per_split, 0, tiles_per_split);
    const double n = static_cast<double>(std::min(keys - sp * tiles_per_split * keys_per_tile, t * keys_per_tile));
    if (n <= 0) continue;
    hw::CtaWork w;
    w.tensor_dtype = dtype;
    // QK^T over latent + rope, PV over the latent; 64-row tiles computed whole.
    w.tensor_flops = 2.0 * heads_per_block * n * static_cast<double>(latent + rope) + 2.0 * heads_per_block * n * static_cast<double>(latent);
    w.fp32_flops = 4.0 * heads_per_block * n;
    w.sfu_ops = heads_per_block * n;
    const double qb = rows * static_cast<double>(latent + rope) * e;
    const double kv = n * static_cast<double>(latent + rope) * e;
    const double o = splits > 1 ? rows * static_cast<double>(latent + 2) * 4.0 : rows * static_cast<double>(latent) * e;
    w.l2_bytes = qb + kv + o;
    w.dram_read_bytes = qb / static_cast<double>(splits) + kv;
    w.dram_write_bytes = o;
    w.max_inflight_bytes = 2.0 * keys_per_tile * static_cast<double>(latent + rope) * e;  // two stages
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
