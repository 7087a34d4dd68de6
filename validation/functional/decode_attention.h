// Decode attention (one query token per sequence against a KV cache) as cuDNN's split-KV
// kernel decomposes it (models/cudnn_attention.cpp, lower_cudnn_decode): CTA grid
// (splits, head tiles, B); a CTA holds the query heads that share one KV head (padded to
// rows_per_cta rows for the MMAs) and streams its split's keys in tiles of block_n with an
// online softmax. With one split it writes the output; with several it writes an fp32 partial
// (unnormalized O row, running max, running sum: D + 2 floats per query head) and a combine
// kernel (cuDNN's lean_reduction_kernel, one CTA per query head) rescales the partials to the
// common max and divides by the combined sum.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

struct DecodePlan {
  std::int64_t splits = 1;
  std::int64_t keys_per_split = 0;  // cuDNN: ceil(L / splits), the last split may be shorter
  std::int64_t block_n = 128;       // keys per inner tile
  std::int64_t rows_per_cta = 16;   // query rows per CTA tile ("16x128x..."), padded
  std::int64_t combine_rows_per_cta = 1;
};

// q [B, Hq, D], k and v [B, Hkv, L, D]; out [B, Hq, D]; scale 1/sqrt(D).
// Split kernel CTA index: (b * head_tiles + head_tile) * splits + split, head_tiles =
// Hkv * ceil(g / rows_per_cta) with g = Hq / Hkv (query head hq = kv_head * g + row).
// Counts per CTA: math_flops = 4 * rows_per_cta * block_n * D per key tile (ceil(keys /
// block_n) tiles), useful_flops = 4 * rows * keys * D; loads of the CTA's Q rows (every split
// loads them) and its keys of K and V; stores of the partial rows ((D + 2) * 4 B each) or,
// unsplit, of the O rows. Every split CTA stores its partials, even a split left without keys
// (max -inf, sum 0), so that the combine reads defined data.
// kernels[0]: split kernel; kernels[1]: combine (splits > 1), CTA c takes rows
// [c * combine_rows_per_cta, ...) of the B * Hq rows (row = b * Hq + hq).
OpRun decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, const DecodePlan& plan,
                       std::int64_t elt_bytes);

}  // namespace gpusim::functional
