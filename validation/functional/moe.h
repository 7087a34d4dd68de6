// A mixture-of-experts block as transformers' grouped_mm experts path runs it
// (workloads/hf_eager_lowering.cpp, moe()): router logits (a linear layer), softmax over the
// experts, top-k (optionally renormalized to sum to 1), then dispatch: the (token, slot) pairs
// sorted by expert, the tokens' rows gathered, a grouped gate_up GEMM, SiLU(gate) * up, a
// grouped down GEMM, and each token's k expert outputs summed with its routing weights.
#pragma once

#include <cstdint>
#include <vector>

#include "models/families.h"
#include "validation/functional/grouped_gemm.h"
#include "validation/functional/op_run.h"

namespace gpusim::functional {

struct MoeWeights {
  Tensor router;   // [E, d] (F.linear layout)
  Tensor gate_up;  // [E, 2F, d]: gate rows [0, F), up rows [F, 2F)
  Tensor down;     // [E, d, F]
};

struct MoeConfig {
  std::int64_t top_k = 2;
  bool renormalize = true;          // norm_topk_prob
  models::GemmTiling router_tiling;  // the router GEMM's tiling (T x E x d)
  bool hopper = true;               // the grouped GEMM's tile (grouped_gemm_tiling)
  std::int64_t elt_bytes = 2;
};

struct MoeRun {
  OpRun run;  // out [T, d]; kernels in the order of moe() below
  std::vector<std::int64_t> rows_per_expert;
  std::vector<std::int64_t> experts;  // [T, k]: chosen experts, by descending probability
  std::vector<float> weights;         // [T, k]: their routing weights
};

// x [T, d]. kernels: router GEMM (1 or 2 launches), softmax, topk, gather, gate_up grouped GEMM,
// act (SiLU * up), down grouped GEMM, combine. Ties in top-k go to the lower expert index;
// the sort by expert is stable (pairs of one expert keep token order).
MoeRun moe(const Tensor& x, const MoeWeights& w, const MoeConfig& cfg);

}  // namespace gpusim::functional
