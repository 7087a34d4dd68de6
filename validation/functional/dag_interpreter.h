// Runs a step's kernel DAG functionally: the vertices that carry semantics
// (workloads::KernelSemantics), in topological (insertion) order, on fp32 tensors kept by
// name. Only the vertices the result depends on run (the attention-mask check and the MoE
// dispatch kernels compute nothing the logits need). Tensors read but never written (weights,
// the KV cache of earlier steps) come from `states`, else from synthetic_state.h, with the size
// their reader expects.
//
// The functions of `what`, with their dims (T = batch * new tokens; q, k, v are [T, heads, D],
// caches [B, kv_heads, L, D]):
//   elementwise: add mul div (numpy broadcasting; inputs of the dims' size are viewed as dims,
//     and a state first read here has the dims' shape),
//     mul_scalar add_scalar pow_scalar (scalar), rsqrt neg silu cos sin tanh, cast copy (fp32:
//     the identity);
//   embedding {B, S, past, d, vocab}; positions {B, S, past}; rope_freqs {T, D/2} (scalar: theta);
//   cat_last {..., width}; mean_last {rows, 1}; neg_second_half, rotate_half_cat {T, H, D};
//   kv_cat {B, KVH, past, S, D}; attn_scores, attn_values, sdpa {B, H, KVH, S, L, D};
//   causal_mask {B, H, S, L}; softmax_last; linear {M, N, K} (rows beyond M: each group's last
//   row, lm_head's logits_to_keep=1); moe_experts {T, d, E, top_k, F} (scalar 1: renormalize).
#pragma once

#include <map>
#include <string>

#include "validation/functional/tensor.h"
#include "workloads/kernel_dag.h"

namespace gpusim::functional {

using TensorMap = std::map<std::string, Tensor>;

// Every tensor the run computed, plus those it read. `result` is the tensor wanted (default:
// the output of the last vertex with semantics).
TensorMap run_dag(const workloads::KernelDag& dag, const TensorMap& states = {},
                  const std::string& result = "");

}  // namespace gpusim::functional
