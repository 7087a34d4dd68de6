#include "validation/functional/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace gpusim::functional {
namespace {
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

OpRun flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                      const FlashTiling& t, std::int64_t elt_bytes) {
  if (q.shape.size() != 4 || k.shape != v.shape || k.shape.size() != 4) {
    throw std::invalid_argument("flash_attention: q, k, v must be [B, H, S, D]");
  }
  const std::int64_t B = q.dim(0), H = q.dim(1), Sq = q.dim(2), D = q.dim(3);
  const std::int64_t Hk = k.dim(1), Sk = k.dim(2);
  if (k.dim(0) != B || k.dim(3) != D || Hk <= 0 || H % Hk != 0) {
    throw std::invalid_argument("flash_attention: shape mismatch");
  }
  const std::int64_t bm = t.block_m, bn = t.block_n;
  const std::int64_t m_blocks = ceil_div(Sq, bm), n_blocks_all = ceil_div(Sk, bn);
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  OpRun run;
  run.out = Tensor({B, H, Sq, D});
  Footprint fq(q.numel(), elt_bytes), fk(k.numel(), elt_bytes), fv(v.numel(), elt_bytes);
  run.kernels.push_back(run_ctas("flash_fwd", m_blocks * B * H, [&](std::int64_t u, CtaCount& c) {
    const std::int64_t m = u % m_blocks, b = (u / m_blocks) % B, h = u / (m_blocks * B);
    const std::int64_t hk = h / (H / Hk);
    const std::int64_t r0 = m * bm, rows = std::min(bm, Sq - r0);
    std::int64_t n_blocks = n_blocks_all;
    if (causal) {
      // n_block_max of the kernels: the tile holding the last key the tile's last (padded)
      // row may see.
      n_blocks = std::clamp<std::int64_t>(ceil_div((m + 1) * bm + Sk - Sq, bn), 0, n_blocks_all);
    }
    const std::int64_t qbase = ((b * H + h) * Sq + r0) * D, kvbase = (b * Hk + hk) * Sk * D;
    count_load(c, fq, qbase, rows * D);

    std::vector<float> row_max(static_cast<std::size_t>(rows), kNegInf);
    std::vector<float> row_sum(static_cast<std::size_t>(rows), 0.f);
    std::vector<float> acc(static_cast<std::size_t>(rows * D), 0.f);
    std::vector<float> s(static_cast<std::size_t>(bn));
    for (std::int64_t n = 0; n < n_blocks; ++n) {
      const std::int64_t j0 = n * bn, keys = std::min(bn, Sk - j0);
      count_load(c, fk, kvbase + j0 * D, keys * D);
      count_load(c, fv, kvbase + j0 * D, keys * D);
      c.math_flops += 4 * bm * bn * D;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float* qr = &q.data[static_cast<std::size_t>(qbase + r * D)];
        const std::int64_t last_key = causal ? r0 + r + Sk - Sq : Sk - 1;  // inclusive
        float tile_max = kNegInf;
        std::int64_t visible = 0;
        for (std::int64_t j = 0; j < keys; ++j) {
          if (j0 + j > last_key) {
            s[static_cast<std::size_t>(j)] = kNegInf;
            continue;
          }
          const float* kr = &k.data[static_cast<std::size_t>(kvbase + (j0 + j) * D)];
          float dot = 0.f;
          for (std::int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
          s[static_cast<std::size_t>(j)] = dot * scale;
          tile_max = std::max(tile_max, s[static_cast<std::size_t>(j)]);
          ++visible;
        }
        c.useful_flops += 4 * visible * D;
        if (visible == 0) continue;  // nothing of this tile is visible to the row
        // Online softmax: rescale what has been accumulated to the new running max.
        float& mx = row_max[static_cast<std::size_t>(r)];
        const float new_max = std::max(mx, tile_max);
        const float correction = mx == kNegInf ? 0.f : std::exp(mx - new_max);
        mx = new_max;
        float* ar = &acc[static_cast<std::size_t>(r * D)];
        for (std::int64_t d = 0; d < D; ++d) ar[d] *= correction;
        float sum = 0.f;
        for (std::int64_t j = 0; j < keys; ++j) {
          if (s[static_cast<std::size_t>(j)] == kNegInf) continue;
          const float p = std::exp(s[static_cast<std::size_t>(j)] - new_max);
          sum += p;
          const float* vr = &v.data[static_cast<std::size_t>(kvbase + (j0 + j) * D)];
          for (std::int64_t d = 0; d < D; ++d) ar[d] += p * vr[d];
        }
        row_sum[static_cast<std::size_t>(r)] = row_sum[static_cast<std::size_t>(r)] * correction + sum;
      }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const float l = row_sum[static_cast<std::size_t>(r)];
      const float inv = l > 0.f ? 1.f / l : 0.f;  // a row that sees no key outputs zeros
      for (std::int64_t d = 0; d < D; ++d) {
        run.out[qbase + r * D + d] = acc[static_cast<std::size_t>(r * D + d)] * inv;
      }
    }
    c.bytes_written = rows * D * elt_bytes + (t.write_lse ? 4 * rows : 0);
  }));
  return run;
}

}  // namespace gpusim::functional
