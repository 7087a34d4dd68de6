#include "validation/functional/attention_backward.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "validation/functional/gemm.h"
#include "validation/functional/gemm_backward.h"
#include "validation/functional/softmax.h"
#include "validation/functional/softmax_backward.h"

namespace gpusim::functional {
namespace {
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Dims {
  std::int64_t B, H, Sq, D, Hk, Sk;
};

Dims check(const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.shape.size() != 4 || k.shape.size() != 4 || k.shape != v.shape) {
    throw std::invalid_argument("attention: q [B, H, Sq, D], k and v [B, Hk, Sk, D]");
  }
  const Dims d{q.dim(0), q.dim(1), q.dim(2), q.dim(3), k.dim(1), k.dim(2)};
  if (k.dim(0) != d.B || k.dim(3) != d.D || d.Hk <= 0 || d.H % d.Hk != 0) {
    throw std::invalid_argument("attention: shape mismatch");
  }
  return d;
}

// The last key query i sees (inclusive; may be < 0).
std::int64_t last_key(const Dims& d, std::int64_t i, bool causal) {
  return causal ? i + d.Sk - d.Sq : d.Sk - 1;
}

float dot(const float* a, const float* b, std::int64_t n) {
  float s = 0.f;
  for (std::int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Rows [r0, r0 + rows) of head (b, h) of a [B, H, S, D] tensor: the row kernels' CTA.
struct RowBlock {
  std::int64_t b, h, r0, rows;
};
RowBlock row_block(std::int64_t cta, std::int64_t B, std::int64_t S, std::int64_t per_cta) {
  const std::int64_t gx = ceil_div(S, per_cta);
  const std::int64_t x = cta % gx, b = (cta / gx) % B, h = cta / (gx * B);
  return {b, h, x * per_cta, std::min(per_cta, S - x * per_cta)};
}

// [S, D] copy of head (b, h) of a [B, H, S, D] tensor, and the sum of such a slice into it.
Tensor head_of(const Tensor& t, std::int64_t b, std::int64_t h) {
  const std::int64_t H = t.dim(1), S = t.dim(2), D = t.dim(3);
  Tensor out({S, D});
  std::copy_n(t.data.begin() + ((b * H + h) * S * D), S * D, out.data.begin());
  return out;
}
void add_head(Tensor& t, std::int64_t b, std::int64_t h, const Tensor& slice) {
  const std::int64_t H = t.dim(1), S = t.dim(2), D = t.dim(3);
  for (std::int64_t i = 0; i < S * D; ++i) t[(b * H + h) * S * D + i] += slice[i];
}

// Whole problem as one GEMM tile per 32 x 32 outputs, K unsplit (numerics only).
models::GemmTiling plain_tiling(std::int64_t K) {
  return {32, 32, 16, 1, ceil_div(std::max<std::int64_t>(K, 1), 16) * 16};
}

}  // namespace

FlashBwdTiling cudnn_bwd_tiling(std::int64_t D) {
  const std::int64_t dt = D <= 64 ? 64 : (D <= 128 ? 128 : 256);
  FlashBwdTiling t;
  t.dot_rows = t.reduce_rows = std::max<std::int64_t>(1, 1024 / dt);
  t.convert_rows = std::max<std::int64_t>(1, 2048 / dt);
  return t;
}

Tensor attention_lse(const Tensor& q, const Tensor& k, bool causal) {
  const Dims d = check(q, k, k);
  const float scale = 1.f / std::sqrt(static_cast<float>(d.D));
  Tensor lse({d.B, d.H, d.Sq});
  tbb::parallel_for(std::int64_t{0}, d.B * d.H * d.Sq, [&](std::int64_t row) {
    const std::int64_t i = row % d.Sq, h = (row / d.Sq) % d.H, b = row / (d.Sq * d.H);
    const float* qi = &q.data[static_cast<std::size_t>(row * d.D)];
    const std::int64_t kv = (b * d.Hk + h / (d.H / d.Hk)) * d.Sk * d.D,
                       last = last_key(d, i, causal);
    float mx = kNegInf, sum = 0.f;
    for (std::int64_t j = 0; j <= std::min(last, d.Sk - 1); ++j) {
      const float s = dot(qi, &k.data[static_cast<std::size_t>(kv + j * d.D)], d.D) * scale;
      // Online: rescale the running sum to the new maximum.
      if (s > mx) {
        sum = sum * std::exp(mx - s) + 1.f;
        mx = s;
      } else {
        sum += std::exp(s - mx);
      }
    }
    lse[row] = sum > 0.f ? mx + std::log(sum) : kNegInf;
  });
  return lse;
}

AttentionGrads flash_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& o, const Tensor& dout, const Tensor& lse,
                                        bool causal, const FlashBwdTiling& t,
                                        std::int64_t elt_bytes) {
  const Dims d = check(q, k, v);
  if (o.shape != q.shape || dout.shape != q.shape || lse.numel() != d.B * d.H * d.Sq) {
    throw std::invalid_argument("flash_attention_backward: o and dout as q, lse [B, H, Sq]");
  }
  const std::int64_t B = d.B, H = d.H, Sq = d.Sq, D = d.D, Hk = d.Hk, Sk = d.Sk, group = H / Hk;
  const std::int64_t bm = t.block_m, bn = t.block_n, mb = ceil_div(Sq, bm), nb = ceil_div(Sk, bn);
  const bool gqa = H > Hk;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  AttentionGrads g;
  g.dq = Tensor(q.shape);
  g.dk = Tensor(k.shape);
  g.dv = Tensor(v.shape);

  // D = rowsum(dO * O); the accumulator's zeroing has no functional trace here (the partials
  // start at zero).
  Tensor delta({B, H, Sq});
  {
    Footprint fo(o.numel(), elt_bytes), fdo(dout.numel(), elt_bytes);
    g.kernels.push_back(
        run_ctas("dot_do_o", ceil_div(Sq, t.dot_rows) * B * H, [&](std::int64_t cta, CtaCount& c) {
          const RowBlock rb = row_block(cta, B, Sq, t.dot_rows);
          const std::int64_t base = (rb.b * H + rb.h) * Sq + rb.r0;
          count_load(c, fo, base * D, rb.rows * D);
          count_load(c, fdo, base * D, rb.rows * D);
          for (std::int64_t r = 0; r < rb.rows; ++r) {
            delta[base + r] = dot(&dout.data[static_cast<std::size_t>((base + r) * D)],
                                  &o.data[static_cast<std::size_t>((base + r) * D)], D);
          }
          c.math_flops = c.useful_flops = 2 * D * rb.rows;
          c.bytes_written = rb.rows * 4 + rb.rows * D * 4;
        }));
  }

  // The KV-stationary units. dq_part[n]: unit n's contributions to dQ (the atomics' addends).
  Tensor dq_part({nb, B, H, Sq, D});
  // With grouped heads: dK and dV per query head, [B, H, Sk, D].
  Tensor dk_head = gqa ? Tensor({B, H, Sk, D}) : Tensor(),
         dv_head = gqa ? Tensor({B, H, Sk, D}) : Tensor();
  {
    Footprint fq(q.numel(), elt_bytes), fk(k.numel(), elt_bytes), fv(v.numel(), elt_bytes),
        fdo(dout.numel(), elt_bytes), flse(lse.numel(), 4), fdelta(delta.numel(), 4);
    g.kernels.push_back(run_ctas("flash_bwd", nb * B * H, [&](std::int64_t u, CtaCount& c) {
      const std::int64_t h = u % H, b = (u / H) % B, n = u / (H * B), hk = h / group;
      const std::int64_t j0 = n * bn, keys = std::min(bn, Sk - j0);
      const std::int64_t kvbase = ((b * Hk + hk) * Sk + j0) * D, qhead = (b * H + h) * Sq;
      count_load(c, fk, kvbase, keys * D);
      count_load(c, fv, kvbase, keys * D);
      // Query tiles holding a query that sees one of the keys: all, or from the tile of the
      // first query whose last visible key reaches j0.
      const std::int64_t m_first =
          causal ? std::clamp<std::int64_t>(j0 - (Sk - Sq), 0, Sq) / bm : 0;
      std::vector<float> dk(static_cast<std::size_t>(keys * D), 0.f),
          dv(static_cast<std::size_t>(keys * D), 0.f);
      std::vector<float> dq(static_cast<std::size_t>(D));
      for (std::int64_t m = m_first; m < mb; ++m) {
        const std::int64_t i0 = m * bm, rows = std::min(bm, Sq - i0);
        count_load(c, fq, (qhead + i0) * D, rows * D);
        count_load(c, fdo, (qhead + i0) * D, rows * D);
        count_load(c, flse, qhead + i0, rows);
        count_load(c, fdelta, qhead + i0, rows);
        c.math_flops += 10 * bm * bn * D;
        c.bytes_written += rows * D * 4;  // the tile's dQ atomics
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t i = i0 + r;
          const std::int64_t visible =
              std::clamp<std::int64_t>(last_key(d, i, causal) - j0 + 1, 0, keys);
          if (visible == 0) continue;
          const float* qi = &q.data[static_cast<std::size_t>((qhead + i) * D)];
          const float* doi = &dout.data[static_cast<std::size_t>((qhead + i) * D)];
          const float li = lse[qhead + i], di = delta[qhead + i];
          std::fill(dq.begin(), dq.end(), 0.f);
          for (std::int64_t j = 0; j < visible; ++j) {
            const float* kj = &k.data[static_cast<std::size_t>(kvbase + j * D)];
            const float* vj = &v.data[static_cast<std::size_t>(kvbase + j * D)];
            const float p = std::exp(dot(qi, kj, D) * scale - li);
            const float ds = p * (dot(doi, vj, D) - di);
            float* dkj = &dk[static_cast<std::size_t>(j * D)];
            float* dvj = &dv[static_cast<std::size_t>(j * D)];
            for (std::int64_t e = 0; e < D; ++e) {
              dvj[e] += p * doi[e];
              dkj[e] += ds * qi[e];
              dq[static_cast<std::size_t>(e)] += ds * kj[e];
            }
          }
          float* part =
              &dq_part.data[static_cast<std::size_t>(((n * B + b) * H + h) * Sq * D + i * D)];
          for (std::int64_t e = 0; e < D; ++e) part[e] = scale * dq[static_cast<std::size_t>(e)];
          c.useful_flops += 10 * D * visible;
        }
      }
      // dK and dV's tile: to the KV head, or with grouped heads to this query head's slice.
      const std::int64_t head_base = ((b * H + h) * Sk + j0) * D;
      float* dk_out = gqa ? &dk_head.data[static_cast<std::size_t>(head_base)]
                          : &g.dk.data[static_cast<std::size_t>(kvbase)];
      float* dv_out = gqa ? &dv_head.data[static_cast<std::size_t>(head_base)]
                          : &g.dv.data[static_cast<std::size_t>(kvbase)];
      for (std::int64_t e = 0; e < keys * D; ++e) {
        dk_out[e] = scale * dk[static_cast<std::size_t>(e)];
        dv_out[e] = dv[static_cast<std::size_t>(e)];
      }
      c.bytes_written += 2 * keys * D * elt_bytes;
    }));
  }

  {
    Footprint facc(q.numel(), 4);
    const std::int64_t ctas = ceil_div(Sq, t.convert_rows) * B * H;
    g.kernels.push_back(run_ctas("convert_dq", ctas, [&](std::int64_t cta, CtaCount& c) {
      const RowBlock rb = row_block(cta, B, Sq, t.convert_rows);
      const std::int64_t base = ((rb.b * H + rb.h) * Sq + rb.r0) * D;
      count_load(c, facc, base, rb.rows * D);
      for (std::int64_t e = base; e < base + rb.rows * D; ++e) {
        float acc = 0.f;  // the accumulator's sum, in key-tile order
        for (std::int64_t n = 0; n < nb; ++n) acc += dq_part[n * B * H * Sq * D + e];
        g.dq[e] = acc;
      }
      c.bytes_written = rb.rows * D * elt_bytes;
    }));
  }

  if (gqa) {
    struct Reduce {
      const char* name;
      const Tensor* from;
      Tensor* to;
    };
    for (const Reduce& red :
         {Reduce{"reduce_dk", &dk_head, &g.dk}, Reduce{"reduce_dv", &dv_head, &g.dv}}) {
      Footprint fp(red.from->numel(), elt_bytes);
      g.kernels.push_back(run_ctas(
          red.name, ceil_div(Sk, t.reduce_rows) * B * Hk, [&](std::int64_t cta, CtaCount& c) {
            const RowBlock rb = row_block(cta, B, Sk, t.reduce_rows);  // rb.h: the KV head
            const std::int64_t out = ((rb.b * Hk + rb.h) * Sk + rb.r0) * D;
            Tensor& to = *red.to;
            for (std::int64_t e = 0; e < rb.rows * D; ++e) to[out + e] = 0.f;
            for (std::int64_t j = 0; j < group; ++j) {  // the group's heads, one after another
              const std::int64_t in = ((rb.b * H + rb.h * group + j) * Sk + rb.r0) * D;
              count_load(c, fp, in, rb.rows * D);
              for (std::int64_t e = 0; e < rb.rows * D; ++e) to[out + e] += (*red.from)[in + e];
            }
            c.math_flops = c.useful_flops = group * rb.rows * D;
            c.bytes_written = rb.rows * D * elt_bytes;
          }));
    }
  }
  return g;
}

NaiveAttention naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const Dims d = check(q, k, v);
  const float scale = 1.f / std::sqrt(static_cast<float>(d.D));
  NaiveAttention r;
  r.probs = Tensor({d.B, d.H, d.Sq, d.Sk});
  r.out = Tensor(q.shape);
  for (std::int64_t b = 0; b < d.B; ++b) {
    for (std::int64_t h = 0; h < d.H; ++h) {
      const std::int64_t hk = h / (d.H / d.Hk);
      const Tensor qh = head_of(q, b, h), kh = head_of(k, b, hk), vh = head_of(v, b, hk);
      Tensor scores = gemm(qh, kh, plain_tiling(d.D), 4, /*b_nk=*/true).out;
      for (std::int64_t i = 0; i < d.Sq; ++i) {
        for (std::int64_t j = 0; j < d.Sk; ++j) {
          float& s = scores[i * d.Sk + j];
          s = j <= last_key(d, i, causal) ? s * scale : kNegInf;
        }
      }
      const Tensor p = softmax(scores, softmax_rows_per_cta(d.Sk, 4), 4).out;
      const Tensor o = gemm(p, vh, plain_tiling(d.Sk), 4).out;
      std::copy(p.data.begin(), p.data.end(), r.probs.data.begin() + (b * d.H + h) * d.Sq * d.Sk);
      std::copy(o.data.begin(), o.data.end(), r.out.data.begin() + (b * d.H + h) * d.Sq * d.D);
    }
  }
  return r;
}

AttentionGrads naive_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& probs, const Tensor& dout) {
  const Dims d = check(q, k, v);
  if (dout.shape != q.shape || probs.numel() != d.B * d.H * d.Sq * d.Sk) {
    throw std::invalid_argument("naive_attention_backward: dout as q, probs [B, H, Sq, Sk]");
  }
  const float scale = 1.f / std::sqrt(static_cast<float>(d.D));
  AttentionGrads g;
  g.dq = Tensor(q.shape);
  g.dk = Tensor(k.shape);
  g.dv = Tensor(v.shape);
  for (std::int64_t b = 0; b < d.B; ++b) {
    for (std::int64_t h = 0; h < d.H; ++h) {  // query heads in order: a group's sums are ordered
      const std::int64_t hk = h / (d.H / d.Hk);
      const Tensor qh = head_of(q, b, h), kh = head_of(k, b, hk), vh = head_of(v, b, hk),
                   doh = head_of(dout, b, h);
      Tensor p({d.Sq, d.Sk});
      std::copy_n(probs.data.begin() + (b * d.H + h) * d.Sq * d.Sk, d.Sq * d.Sk, p.data.begin());
      // O = P V: dV = P^T dO, dP = dO V^T.
      add_head(g.dv, b, hk, linear_grad_weight(p, doh, plain_tiling(d.Sq), 4).out);
      const Tensor dp = gemm(doh, vh, plain_tiling(d.D), 4, /*b_nk=*/true).out;
      // P = softmax(S); S = scale Q K^T: dQ = scale dS K, dK = scale dS^T Q (masked entries have
      // P = 0, so dS = 0 there).
      Tensor ds =
          softmax_backward(p, dp, /*log=*/false, softmax_backward_rows_per_cta(d.Sk, 4), 4).out;
      for (auto& x : ds.data) x *= scale;
      const Tensor dqh = gemm(ds, kh, plain_tiling(d.Sk), 4).out;
      std::copy(dqh.data.begin(), dqh.data.end(), g.dq.data.begin() + (b * d.H + h) * d.Sq * d.D);
      add_head(g.dk, b, hk, linear_grad_weight(ds, qh, plain_tiling(d.Sq), 4).out);
    }
  }
  return g;
}

}  // namespace gpusim::functional
