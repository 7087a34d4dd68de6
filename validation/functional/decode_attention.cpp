#include "validation/functional/decode_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace gpusim::functional {
namespace {
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

OpRun decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, const DecodePlan& plan,
                       std::int64_t elt_bytes) {
  if (q.shape.size() != 3 || k.shape.size() != 4 || k.shape != v.shape) {
    throw std::invalid_argument("decode_attention: q [B, Hq, D], k and v [B, Hkv, L, D]");
  }
  const std::int64_t B = q.dim(0), Hq = q.dim(1), D = q.dim(2), Hkv = k.dim(1), L = k.dim(2);
  if (k.dim(0) != B || k.dim(3) != D || Hkv <= 0 || Hq % Hkv != 0) {
    throw std::invalid_argument("decode_attention: shape mismatch");
  }
  const std::int64_t splits = plan.splits, kps = plan.keys_per_split, bn = plan.block_n;
  if (splits <= 0 || kps <= 0 || bn <= 0 || plan.rows_per_cta <= 0 || splits * kps < L) {
    throw std::invalid_argument("decode_attention: the plan does not cover the keys");
  }
  const std::int64_t g = Hq / Hkv, chunks = ceil_div(g, plan.rows_per_cta);
  const std::int64_t head_tiles = Hkv * chunks;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  const std::int64_t row_floats = D + 2;  // partial O row, max, sum

  OpRun run;
  run.out = Tensor({B, Hq, D});
  // partial[split][b * Hq + hq][D + 2]
  Tensor partial = splits > 1 ? Tensor({splits, B * Hq, row_floats}) : Tensor();
  Footprint fq(q.numel(), elt_bytes), fk(k.numel(), elt_bytes), fv(v.numel(), elt_bytes);

  run.kernels.push_back(run_ctas("decode_split", splits * head_tiles * B, [&](std::int64_t u,
                                                                               CtaCount& c) {
    const std::int64_t sp = u % splits, ht = (u / splits) % head_tiles, b = u / (splits * head_tiles);
    const std::int64_t hk = ht / chunks, first_row = (ht % chunks) * plan.rows_per_cta;
    const std::int64_t rows = std::min(plan.rows_per_cta, g - first_row);
    const std::int64_t k0 = sp * kps, keys = std::clamp<std::int64_t>(L - k0, 0, kps);
    const std::int64_t tiles = ceil_div(keys, bn);
    const std::int64_t kvbase = (b * Hkv + hk) * L * D;
    c.math_flops = 4 * plan.rows_per_cta * bn * D * tiles;
    c.useful_flops = 4 * rows * keys * D;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t hq = hk * g + first_row + r;
      count_load(c, fq, (b * Hq + hq) * D, D);
    }
    count_load(c, fk, kvbase + k0 * D, keys * D);
    count_load(c, fv, kvbase + k0 * D, keys * D);
    std::vector<float> acc(static_cast<std::size_t>(D)), s(static_cast<std::size_t>(bn));
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t hq = hk * g + first_row + r;
      const float* qr = &q.data[static_cast<std::size_t>((b * Hq + hq) * D)];
      float mx = kNegInf, sum = 0.f;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (std::int64_t t = 0; t < tiles; ++t) {
        const std::int64_t j0 = k0 + t * bn, n = std::min(bn, k0 + keys - j0);
        float tile_max = kNegInf;
        for (std::int64_t j = 0; j < n; ++j) {
          const float* kr = &k.data[static_cast<std::size_t>(kvbase + (j0 + j) * D)];
          float dot = 0.f;
          for (std::int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
          s[static_cast<std::size_t>(j)] = dot * scale;
          tile_max = std::max(tile_max, s[static_cast<std::size_t>(j)]);
        }
        const float new_max = std::max(mx, tile_max);
        const float corr = mx == kNegInf ? 0.f : std::exp(mx - new_max);
        mx = new_max;
        for (auto& x : acc) x *= corr;
        sum *= corr;
        for (std::int64_t j = 0; j < n; ++j) {
          const float p = std::exp(s[static_cast<std::size_t>(j)] - new_max);
          sum += p;
          const float* vr = &v.data[static_cast<std::size_t>(kvbase + (j0 + j) * D)];
          for (std::int64_t d = 0; d < D; ++d) acc[static_cast<std::size_t>(d)] += p * vr[d];
        }
      }
      const std::int64_t row = b * Hq + hq;
      if (splits > 1) {
        float* pr = &partial.data[static_cast<std::size_t>((sp * B * Hq + row) * row_floats)];
        std::copy(acc.begin(), acc.end(), pr);
        pr[D] = mx;
        pr[D + 1] = sum;
      } else {
        for (std::int64_t d = 0; d < D; ++d) run.out[row * D + d] = acc[static_cast<std::size_t>(d)] / sum;
      }
    }
    c.bytes_written = rows * (splits > 1 ? row_floats * 4 : D * elt_bytes);
  }));

  if (splits > 1) {
    const std::int64_t R = B * Hq, per = plan.combine_rows_per_cta;
    Footprint fp(partial.numel(), 4);
    run.kernels.push_back(run_ctas("decode_combine", ceil_div(R, per), [&](std::int64_t cta,
                                                                          CtaCount& c) {
      const std::int64_t r0 = cta * per, rows = std::min(per, R - r0);
      for (std::int64_t row = r0; row < r0 + rows; ++row) {
        const auto at = [&](std::int64_t sp, std::int64_t i) {
          const std::int64_t idx = (sp * R + row) * row_floats + i;
          count_load(c, fp, idx);
          return partial[idx];
        };
        std::vector<float> mx(static_cast<std::size_t>(splits)), sum(static_cast<std::size_t>(splits));
        float gmax = kNegInf;
        for (std::int64_t sp = 0; sp < splits; ++sp) {
          mx[static_cast<std::size_t>(sp)] = at(sp, D);
          sum[static_cast<std::size_t>(sp)] = at(sp, D + 1);
          gmax = std::max(gmax, mx[static_cast<std::size_t>(sp)]);
        }
        // Each split's partial is relative to its own max: rescale to the common one (a split
        // without keys has max -inf and weight 0).
        float total = 0.f;
        std::vector<float> w(static_cast<std::size_t>(splits));
        for (std::int64_t sp = 0; sp < splits; ++sp) {
          const float m = mx[static_cast<std::size_t>(sp)];
          w[static_cast<std::size_t>(sp)] = m == kNegInf ? 0.f : std::exp(m - gmax);
          total += w[static_cast<std::size_t>(sp)] * sum[static_cast<std::size_t>(sp)];
        }
        for (std::int64_t d = 0; d < D; ++d) {
          float o = 0.f;
          for (std::int64_t sp = 0; sp < splits; ++sp) o += w[static_cast<std::size_t>(sp)] * at(sp, d);
          run.out[row * D + d] = o / total;
        }
      }
      // Per row: max over splits, a weight and a weighted sum per split, 2 FLOPs per split
      // and element of O, one division per element.
      c.math_flops = c.useful_flops = rows * (splits * (2 * D + 3) + D);
      c.bytes_written = rows * D * elt_bytes;
    }));
  }
  return run;
}

}  // namespace gpusim::functional
