// GEMM as cuBLAS decomposes it (models/gemm_model.cpp): C[M,N] = A[M,K] B[K,N] over
// tile_m x tile_n output tiles, K cut into `split` slices of k_per_split; each (tile, slice)
// unit is one CTA of the functional kernel. With split > 1 the units write fp32 partials and a
// second kernel (cublasLt::splitKreduce_kernel's 32 x 16 element CTAs) sums them into C.
#pragma once

#include <cstdint>

#include "models/families.h"
#include "validation/functional/op_run.h"

namespace gpusim::functional {

// `elt_bytes`: storage bytes of A, B and C in the modeled dtype (2 for bf16); the partials
// are fp32 (4 bytes) as cuBLAS's split-K workspace.
// `b_nk`: B is stored [N, K] (F.linear's weight), else [K, N].
// Unit order (CTA index): u = (slice * tiles_m + tile_row) * tiles_n + tile_col.
// Counts per unit: math_flops = 2 * tile_m * tile_n * round_up(slice length, tile_k) (the
// padded tile the tensor cores run), useful_flops = 2 * rows * cols * slice length; loads of
// the A rows and B columns in range (TMA does not fetch past the matrix).
// kernels[0]: the tile kernel; kernels[1]: the split-K reduce (split > 1 only).
OpRun gemm(const Tensor& a, const Tensor& b, const models::GemmTiling& t, std::int64_t elt_bytes,
           bool b_nk = false);

// The reduce's CTA grid: (ceil(N / 32), ceil(M / 16)), 32 x 16 outputs per CTA, CTA index
// = row_block * ceil(N / 32) + col_block.
constexpr std::int64_t kSplitkReduceCols = 32, kSplitkReduceRows = 16;

}  // namespace gpusim::functional
