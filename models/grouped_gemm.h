// Internal to models/: the persistent CUTLASS ptr-array grouped GEMM that torch._grouped_mm runs
// on Hopper, shared by the forward product (grouped_gemm_model.cpp) and its weight gradient
// (grouped_gemm_backward.cpp). The callers work out the tiles and the totals of their problem.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "models/common.h"

namespace gpusim::models::detail {

// GroupMM.cu's kernel choice: the Pingpong kernel with 64x128 tiles when M <= 128 or N <= 128
// (M, N as it computes them for the product's layout), else the Cooperative one with 128x256.
bool grouped_gemm_small(std::int64_t M, std::int64_t N);

// What one grouped GEMM launch does in all: its tiles and their total work.
struct GroupedGemmWork {
  std::int64_t groups = 0;  // the group count (the prepare kernel's threads)
  bool small = true;        // grouped_gemm_small
  std::int64_t tiles = 0;
  // The forward product's Pingpong launches: each expert's weight slab streams from DRAM to the
  // tiles of its first rows, its further row tiles read it again from L2.
  bool streams_weights = false;
  double flops = 0, l2_bytes = 0, dram_read_bytes = 0, dram_write_bytes = 0;
  double weight_read_bytes = 0;  // of dram_read_bytes, the experts' weights
  std::int64_t tile_m(const hw::HardwareSpec& hw) const { return !small || !is_hopper(hw) ? 128 : 64; }
  std::int64_t tile_n(const hw::HardwareSpec& hw) const { return !small && is_hopper(hw) ? 256 : 128; }
};

// The prepare kernel (problem sizes and pointers), then the persistent GEMM (grid = SM count)
// over the tiles, spread evenly; `a` and `b` read, `out` written.
std::vector<hw::Launch> grouped_gemm_launches(const GroupedGemmWork& g, hw::DType dtype, const hw::TensorUse& a,
                                              const hw::TensorUse& b, const hw::TensorUse& out,
                                              const hw::HardwareSpec& hw);

}  // namespace gpusim::models::detail
