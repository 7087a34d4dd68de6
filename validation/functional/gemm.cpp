#include "validation/functional/gemm.h"

#include <algorithm>
#include <stdexcept>

namespace gpusim::functional {
namespace {
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

OpRun gemm(const Tensor& a, const Tensor& b, const models::GemmTiling& t, std::int64_t elt_bytes,
           bool b_nk) {
  if (a.shape.size() != 2 || b.shape.size() != 2) throw std::invalid_argument("gemm: 2-D operands");
  const std::int64_t M = a.dim(0), K = a.dim(1);
  const std::int64_t N = b_nk ? b.dim(0) : b.dim(1);
  if ((b_nk ? b.dim(1) : b.dim(0)) != K) throw std::invalid_argument("gemm: K mismatch");
  if (t.tile_m <= 0 || t.tile_n <= 0 || t.tile_k <= 0 || t.split <= 0 || t.k_per_split <= 0) {
    throw std::invalid_argument("gemm: bad tiling");
  }
  const std::int64_t tiles_m = ceil_div(M, t.tile_m), tiles_n = ceil_div(N, t.tile_n);
  const std::int64_t split = t.split, kps = t.k_per_split;
  const std::int64_t part_bytes = split > 1 ? 4 : elt_bytes;

  OpRun run;
  run.out = Tensor({M, N});
  // Split-K partials: [split][M][N] fp32. Without split the units write C directly.
  Tensor partial = split > 1 ? Tensor({split, M, N}) : Tensor();
  float* dst = split > 1 ? partial.data.data() : run.out.data.data();
  Footprint fa(M * K, elt_bytes), fb(K * N, elt_bytes);

  run.kernels.push_back(run_ctas("gemm_tile", split * tiles_m * tiles_n, [&](std::int64_t u,
                                                                              CtaCount& c) {
    const std::int64_t tn = u % tiles_n, tm = (u / tiles_n) % tiles_m, s = u / (tiles_n * tiles_m);
    const std::int64_t i0 = tm * t.tile_m, j0 = tn * t.tile_n, k0 = s * kps;
    const std::int64_t rows = std::min(t.tile_m, M - i0), cols = std::min(t.tile_n, N - j0);
    const std::int64_t len = std::clamp<std::int64_t>(K - k0, 0, kps);
    // The tensor cores run the whole tile over the slice rounded up to the tile depth.
    c.math_flops = 2 * t.tile_m * t.tile_n * ceil_div(len, t.tile_k) * t.tile_k;
    c.useful_flops = 2 * rows * cols * len;
    for (std::int64_t i = 0; i < rows; ++i) count_load(c, fa, (i0 + i) * K + k0, len);
    if (b_nk) {
      for (std::int64_t j = 0; j < cols; ++j) count_load(c, fb, (j0 + j) * K + k0, len);
    } else {
      for (std::int64_t k = 0; k < len; ++k) count_load(c, fb, (k0 + k) * N + j0, cols);
    }
    // fp32 accumulation along k in order, one accumulator per output (as an MMA chain).
    std::vector<float> acc(static_cast<std::size_t>(cols));
    float* out = dst + s * M * N;
    for (std::int64_t i = 0; i < rows; ++i) {
      std::fill(acc.begin(), acc.end(), 0.f);
      const float* arow = &a.data[static_cast<std::size_t>((i0 + i) * K + k0)];
      for (std::int64_t k = 0; k < len; ++k) {
        const float av = arow[k];
        for (std::int64_t j = 0; j < cols; ++j) {
          const float bv = b_nk ? b[(j0 + j) * K + k0 + k] : b[(k0 + k) * N + j0 + j];
          acc[static_cast<std::size_t>(j)] += av * bv;
        }
      }
      for (std::int64_t j = 0; j < cols; ++j) out[(i0 + i) * N + j0 + j] = acc[static_cast<std::size_t>(j)];
    }
    c.bytes_written = rows * cols * part_bytes;
  }));

  if (split > 1) {
    const std::int64_t cb = ceil_div(N, kSplitkReduceCols), rb = ceil_div(M, kSplitkReduceRows);
    Footprint fp(split * M * N, 4);
    run.kernels.push_back(run_ctas("gemm_splitk_reduce", cb * rb, [&](std::int64_t cta, CtaCount& c) {
      const std::int64_t i0 = (cta / cb) * kSplitkReduceRows, j0 = (cta % cb) * kSplitkReduceCols;
      const std::int64_t rows = std::min(kSplitkReduceRows, M - i0);
      const std::int64_t cols = std::min(kSplitkReduceCols, N - j0);
      for (std::int64_t i = i0; i < i0 + rows; ++i) {
        for (std::int64_t j = j0; j < j0 + cols; ++j) {
          float acc = 0.f;  // one add per partial, in slice order
          for (std::int64_t s = 0; s < split; ++s) {
            count_load(c, fp, (s * M + i) * N + j);
            acc += partial[(s * M + i) * N + j];
          }
          run.out[i * N + j] = acc;
        }
      }
      c.math_flops = c.useful_flops = split * rows * cols;
      c.bytes_written = rows * cols * elt_bytes;
    }));
  }
  return run;
}

}  // namespace gpusim::functional
