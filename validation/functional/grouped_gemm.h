// torch._grouped_mm as CUTLASS's ptr-array grouped GEMM decomposes it
// (models/grouped_gemm_model.cpp): out[rows of expert e] = in[rows of e] @ W[e]^T, W [E, N, K];
// every expert with rows is cut into tile_m x tile_n output tiles over the whole K, one work
// unit (CTA of the functional kernel) per tile; experts without rows cost nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

struct GroupedTiling {
  std::int64_t tile_m = 64, tile_n = 128;
};

// The tile the model assumes (restated from models/grouped_gemm_model.cpp, whose constants are
// private; GroupMM.cu's choice): on Hopper 64 x 128 (the pingpong kernel) when the mean rows a
// group (total_rows / groups) or N is at most 128, else 128 x 256 (the cooperative kernel);
// elsewhere 128 x 128.
GroupedTiling grouped_gemm_tiling(std::int64_t total_rows, std::int64_t groups, std::int64_t N, bool hopper);

// in [S, K] with the rows of expert e at [offset_e, offset_e + rows_per_expert[e]) (offsets
// the running sum); w [E, N, K]. Unit order: expert by expert, then tile row, then tile
// column. Counts per unit: math_flops = 2 * tile_m * tile_n * K, useful_flops = 2 * rows * cols
// * K; loads of the unit's rows of `in` and its N-slab of W[e]; stores of its outputs.
OpRun grouped_gemm(const Tensor& in, const std::vector<std::int64_t>& rows_per_expert,
                   const Tensor& w, const GroupedTiling& t, std::int64_t elt_bytes);

}  // namespace gpusim::functional
