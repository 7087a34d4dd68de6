// Straightforward double-precision references for the functional kernels: the textbook
// formula, no tiling, no online softmax, no splits; inputs are the same fp32 tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "validation/functional/moe.h"
#include "validation/functional/tensor.h"

namespace gpusim::functional::reference {

// a [M, K], b [K, N] (or [N, K] with b_nk) -> [M, N].
std::vector<double> gemm(const Tensor& a, const Tensor& b, bool b_nk = false);
// q [B, H, Sq, D], k and v [B, Hk, Sk, D]; bottom-right causal mask; scale 1/sqrt(D).
std::vector<double> attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal);
// q [B, Hq, D], k and v [B, Hkv, L, D] -> [B, Hq, D].
std::vector<double> decode_attention(const Tensor& q, const Tensor& k, const Tensor& v);
std::vector<double> softmax(const Tensor& x);  // over the last dimension of [R, C]
std::vector<double> layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);
std::vector<double> rms_norm(const Tensor& x, const Tensor& gamma, double eps);
std::vector<double> silu(const Tensor& x);
std::vector<double> gelu_erf(const Tensor& x);
std::vector<double> gelu_tanh(const Tensor& x);
// x [B, H, S, D], cos and sin [S, D]: x * cos + rotate_half(x) * sin.
std::vector<double> rope(const Tensor& x, const Tensor& cos, const Tensor& sin);
// The MoE block token by token: router, softmax, top-k, each chosen expert's SwiGLU MLP.
std::vector<double> moe(const Tensor& x, const MoeWeights& w, std::int64_t top_k, bool renormalize);

}  // namespace gpusim::functional::reference
