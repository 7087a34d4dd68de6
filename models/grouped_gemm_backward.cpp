// torch._grouped_mm's weight gradient on Hopper: for y[rows of e] = x[rows of e] @ W[e]^T, autograd
// computes dW[e] = dY[rows of e]^T @ x[rows of e] as another _grouped_mm whose operands are both
// ragged along the token dimension (2d x 2d with offsets: K is each group's row count). GroupMM.cu
// then takes M and N from the operands (the weight's two dimensions) and K as the mean rows a
// group, so expert weights wider than 128 on both sides run the Cooperative 128x256 kernel (seen
// in every calibration case of validation/data/hf_train3_h100.json.gz, ahead of the input
// gradient's Pingpong product). Every group owns ceil(M / tile) x ceil(N / tile) output tiles,
// each looping over that group's rows: the FLOPs are the forward's, the operands stream once
// from DRAM (re-reads of the same group's slabs hit L2) and dW is written once.
#include <algorithm>

#include "models/common.h"
#include "models/grouped_gemm.h"
#include "models/training_kernels.h"
#include "sim/error.h"

namespace gpusim::models {

std::vector<Launch> lower_grouped_gemm_weight_grad(const std::vector<std::int64_t>& rows_per_expert, std::int64_t M,
                                                   std::int64_t N, hw::DType dtype, const TensorUse& dy,
                                                   const TensorUse& x, const TensorUse& dw,
                                                   const hw::HardwareSpec& hw) {
  using detail::ceil_div;
  if (M <= 0 || N <= 0) throw ModelError("grouped GEMM weight gradient: M and N must be positive");
  const double e = detail::elt_bytes(dtype);
  detail::GroupedGemmWork g;
  g.groups = static_cast<std::int64_t>(rows_per_expert.size());
  g.small = detail::grouped_gemm_small(M, N);
  const std::int64_t tm = g.tile_m(hw), tn = g.tile_n(hw);
  const std::int64_t tiles_per_group = ceil_div(M, tm) * ceil_div(N, tn);
  std::int64_t rows = 0;
  for (const std::int64_t r : rows_per_expert) rows += std::max<std::int64_t>(0, r);
  // A group with no rows still owns its output tiles (written as zeros).
  g.tiles = g.groups * tiles_per_group;
  g.flops = 2.0 * static_cast<double>(tm * tn) * static_cast<double>(rows) * static_cast<double>(tiles_per_group);
  // Each tile reads its group's tm-wide slab of dY and tn-wide slab of x over the group's rows.
  g.l2_bytes = static_cast<double>(rows) * e *
                   (static_cast<double>(tm * ceil_div(N, tn)) + static_cast<double>(tn * ceil_div(M, tm))) +
               static_cast<double>(g.groups * M * N) * e;
  g.dram_read_bytes = static_cast<double>(rows * (M + N)) * e;
  g.dram_write_bytes = static_cast<double>(g.groups * M * N) * e;
  return detail::grouped_gemm_launches(g, dtype, dy, x, dw, hw);
}

}  // namespace gpusim::models
