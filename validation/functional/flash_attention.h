// Attention prefill as FlashAttention-2 and cuDNN's fused kernel decompose it
// (models/flash_attention_model.cpp, models/cudnn_attention.cpp): one work unit per
// (query tile of block_m rows, batch, head); each streams the keys in tiles of block_n with an
// online softmax (running max and sum, the output rescaled as the max grows), then divides by
// the sum. Causal units stop at the diagonal tile, as the kernels' n_block_max does, so fully
// masked key tiles are skipped; the mask is bottom-right aligned (key j visible to query i
// when j <= i + Sk - Sq), as PyTorch passes it.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

struct FlashTiling {
  std::int64_t block_m = 128, block_n = 128;  // cuDNN sm90 prefill: 128 x 128
  bool write_lse = false;  // FA2 also stores the fp32 log-sum-exp per row; cuDNN's does not
};

// q [B, H, Sq, D], k and v [B, Hk, Sk, D] (H a multiple of Hk: grouped-query attention);
// out [B, H, Sq, D]; scale 1/sqrt(D). Unit (CTA) index: (h * B + b) * m_blocks + m (FA2's
// blockIdx order, m fastest).
// Counts per unit: math_flops = 4 * block_m * block_n * D per key tile processed (QK^T and
// PV on whole tiles), useful_flops = 4 * D per unmasked (query, key) pair; loads of the
// unit's Q rows and the valid keys of each K and V tile; stores of its O rows (+ 4 B of LSE).
OpRun flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                      const FlashTiling& t, std::int64_t elt_bytes);

}  // namespace gpusim::functional
