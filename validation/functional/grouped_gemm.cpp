#include "validation/functional/grouped_gemm.h"

#include <algorithm>
#include <stdexcept>

namespace gpusim::functional {
namespace {
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

GroupedTiling grouped_gemm_tiling(std::int64_t total_rows, std::int64_t groups, std::int64_t N, bool hopper) {
  if (!hopper) return {128, 128};
  const std::int64_t mean_rows = groups > 0 ? total_rows / groups : 0;
  return mean_rows <= 128 || N <= 128 ? GroupedTiling{64, 128} : GroupedTiling{128, 256};
}

OpRun grouped_gemm(const Tensor& in, const std::vector<std::int64_t>& rows_per_expert,
                   const Tensor& w, const GroupedTiling& t, std::int64_t elt_bytes) {
  if (in.shape.size() != 2 || w.shape.size() != 3 || w.dim(2) != in.dim(1) ||
      static_cast<std::int64_t>(rows_per_expert.size()) != w.dim(0)) {
    throw std::invalid_argument("grouped_gemm: in [S, K], w [E, N, K], one row count per expert");
  }
  const std::int64_t S = in.dim(0), K = in.dim(1), N = w.dim(1);
  struct Unit {
    std::int64_t expert, row0, rows, col0, cols;
  };
  std::vector<Unit> units;
  std::int64_t offset = 0;
  for (std::size_t e = 0; e < rows_per_expert.size(); ++e) {
    const std::int64_t m = rows_per_expert[e];
    for (std::int64_t tm = 0; tm < ceil_div(m, t.tile_m); ++tm) {
      for (std::int64_t tn = 0; tn < ceil_div(N, t.tile_n); ++tn) {
        units.push_back({static_cast<std::int64_t>(e), offset + tm * t.tile_m,
                         std::min(t.tile_m, m - tm * t.tile_m), tn * t.tile_n,
                         std::min(t.tile_n, N - tn * t.tile_n)});
      }
    }
    offset += m;
  }
  if (offset != S) throw std::invalid_argument("grouped_gemm: row counts do not add up to S");

  OpRun run;
  run.out = Tensor({S, N});
  Footprint fin(in.numel(), elt_bytes), fw(w.numel(), elt_bytes);
  run.kernels.push_back(run_ctas("grouped_gemm", static_cast<std::int64_t>(units.size()),
                                 [&](std::int64_t ui, CtaCount& c) {
    const Unit& u = units[static_cast<std::size_t>(ui)];
    const std::int64_t wbase = u.expert * N * K;
    c.math_flops = 2 * t.tile_m * t.tile_n * K;
    c.useful_flops = 2 * u.rows * u.cols * K;
    count_load(c, fin, u.row0 * K, u.rows * K);
    count_load(c, fw, wbase + u.col0 * K, u.cols * K);
    for (std::int64_t r = u.row0; r < u.row0 + u.rows; ++r) {
      const float* a = &in.data[static_cast<std::size_t>(r * K)];
      for (std::int64_t j = u.col0; j < u.col0 + u.cols; ++j) {
        const float* b = &w.data[static_cast<std::size_t>(wbase + j * K)];
        float acc = 0.f;
        for (std::int64_t k = 0; k < K; ++k) acc += a[k] * b[k];
        run.out[r * N + j] = acc;
      }
    }
    c.bytes_written = u.rows * u.cols * elt_bytes;
  }));
  return run;
}

}  // namespace gpusim::functional
