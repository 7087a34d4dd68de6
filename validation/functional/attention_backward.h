// The backward of causal (or full) attention, O = softmax(scale Q K^T) V with scale 1/sqrt(D),
// two ways:
//  * flash: as cuDNN's fused backward runs it on sm_90 (models/cudnn_attention_backward.cpp,
//    lower_sdpa_backward; FlashAttention-2's algorithm with recomputation from the saved
//    log-sum-exp): a row kernel computing D = rowsum(dO * O) per query row (and zeroing dQ's
//    fp32 accumulator); the KV-stationary backward, one work unit per (key tile of block_n
//    keys, batch, query head) that walks the query tiles (those at or after its keys when
//    causal) and per tile recomputes P = exp(scale Q K^T - LSE), then dV += P^T dO,
//    dP = dO V^T, dS = P (dP - D), dK += scale dS^T Q and dQ += scale dS K (fp32 atomics into
//    the accumulator on the GPU); dQ's conversion to the 16-bit gradient; with grouped-query
//    attention (H > Hk) dK and dV are written per query head and summed over each group's heads
//    by two reduction kernels.
//    Determinism: the GPU's dQ atomics add the units' contributions in whatever order they
//    arrive. Here each unit stores its contribution to its own slice of a partials buffer and
//    the conversion kernel adds the slices in key-tile order. Counted as the atomics: 4 B
//    stored per dQ element per tile pair (bytes_written of the backward kernel), and the
//    accumulator loaded once (4 B per element) by the conversion.
//  * naive: the three ops eager code runs (scores = scale Q K^T, masked; P = softmax(scores);
//    O = P V) and the backward through each (dV = P^T dO, dP = dO V^T, the softmax's backward,
//    dQ = scale dS K, dK = scale dS^T Q), from gemm() and softmax_backward() head by head, not
//    as the batched launches eager code runs (the hf-train lowering uses cuDNN's backward): no
//    kernel counts, numerics only.
// The mask is bottom-right aligned as in flash_attention.h (key j visible to query i when
// j <= i + Sk - Sq).
#pragma once

#include <cstdint>
#include <vector>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

struct FlashBwdTiling {
  std::int64_t block_m = 64, block_n = 64;  // cuDNN sm90 bprop: 64 queries x 64 keys a step
  // Rows per CTA of the row kernels (cuDNN: 1024 / d_tile, 2048 / d_tile, 1024 / d_tile, with
  // d_tile the head dimension padded to 64, 128 or 256).
  std::int64_t dot_rows = 16, convert_rows = 32, reduce_rows = 16;
};
// cuDNN's tiling for head dimension D.
FlashBwdTiling cudnn_bwd_tiling(std::int64_t D);

// What FlashAttention-2's forward stores besides O (FlashTiling::write_lse): per query row the
// natural log of sum_j exp(scale q_i . k_j) over its visible keys, [B, H, Sq] (-inf for a row
// that sees no key). flash_attention() counts its bytes but returns only O, so it is computed
// here in a pass of its own (fp32, keys in order).
Tensor attention_lse(const Tensor& q, const Tensor& k, bool causal);

struct AttentionGrads {
  Tensor dq, dk, dv;                  // shaped as q, k, v
  std::vector<KernelCounts> kernels;  // launch order (flash only)
};

// q, o, dout [B, H, Sq, D], k and v [B, Hk, Sk, D], lse [B, H, Sq] (attention_lse).
// kernels: dot_do_o, flash_bwd, convert_dq, and with H > Hk reduce_dk, reduce_dv.
// Row kernels: CTA (x, b, h) of rows [x * rows, ...) of head h of batch b, index
// (h * B + b) * ceil(Sq / rows) + x (cuDNN's grid (x, B, H)); the reductions over (b, hk).
// dot_do_o: loads the rows of O and dO, stores D (4 B a row) and zeroes the accumulator (4 B an
// element); 2 D FLOPs a row. flash_bwd: unit u = (n * B + b) * H + h; loads K and V's tile
// (its keys, elt_bytes) and per query tile its rows of Q and dO and their LSE and D (4 B each);
// stores dK and dV's tile and per query tile the dQ atomics (4 B an element); math_flops =
// 10 block_m block_n D per tile pair (five whole-tile matmuls), useful_flops = 10 D per
// visible (query, key) pair. convert_dq: loads the accumulator, stores dQ (elt_bytes).
// reduce_dk/dv: load every head of the group's rows (elt_bytes), store the KV head's.
AttentionGrads flash_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& o, const Tensor& dout, const Tensor& lse,
                                        bool causal, const FlashBwdTiling& t,
                                        std::int64_t elt_bytes);

struct NaiveAttention {
  Tensor probs;  // P [B, H, Sq, Sk] (masked entries 0)
  Tensor out;    // O [B, H, Sq, D]
};
NaiveAttention naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal);
AttentionGrads naive_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& probs, const Tensor& dout);

}  // namespace gpusim::functional
