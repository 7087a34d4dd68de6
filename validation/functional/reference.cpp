#include "validation/functional/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace gpusim::functional::reference {
namespace {
double at(const Tensor& t, std::int64_t i) { return static_cast<double>(t[i]); }
double silu1(double v) { return v / (1.0 + std::exp(-v)); }

void softmax_inplace(std::vector<double>& row) {
  const double mx = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (auto& x : row) sum += (x = std::exp(x - mx));
  for (auto& x : row) x /= sum;
}
}  // namespace

std::vector<double> gemm(const Tensor& a, const Tensor& b, bool b_nk) {
  const std::int64_t M = a.dim(0), K = a.dim(1), N = b_nk ? b.dim(0) : b.dim(1);
  std::vector<double> c(static_cast<std::size_t>(M * N), 0.0);
  for (std::int64_t i = 0; i < M; ++i) {
    for (std::int64_t kk = 0; kk < K; ++kk) {
      const double av = at(a, i * K + kk);
      for (std::int64_t j = 0; j < N; ++j) {
        c[static_cast<std::size_t>(i * N + j)] += av * at(b, b_nk ? j * K + kk : kk * N + j);
      }
    }
  }
  return c;
}

std::vector<double> attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const std::int64_t B = q.dim(0), H = q.dim(1), Sq = q.dim(2), D = q.dim(3);
  const std::int64_t Hk = k.dim(1), Sk = k.dim(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> o(static_cast<std::size_t>(q.numel()), 0.0);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t kv = (b * Hk + h / (H / Hk)) * Sk * D;
      for (std::int64_t i = 0; i < Sq; ++i) {
        const std::int64_t qi = ((b * H + h) * Sq + i) * D;
        const std::int64_t visible = causal ? std::clamp<std::int64_t>(i + Sk - Sq + 1, 0, Sk) : Sk;
        if (visible == 0) continue;
        std::vector<double> p(static_cast<std::size_t>(visible));
        for (std::int64_t j = 0; j < visible; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += at(q, qi + d) * at(k, kv + j * D + d);
          p[static_cast<std::size_t>(j)] = dot * scale;
        }
        softmax_inplace(p);
        for (std::int64_t j = 0; j < visible; ++j) {
          for (std::int64_t d = 0; d < D; ++d) {
            o[static_cast<std::size_t>(qi + d)] += p[static_cast<std::size_t>(j)] * at(v, kv + j * D + d);
          }
        }
      }
    }
  }
  return o;
}

std::vector<double> decode_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  // One query per (batch, head): attention with Sq = 1 (no mask).
  Tensor q4({q.dim(0), q.dim(1), 1, q.dim(2)});
  q4.data = q.data;
  return attention(q4, k, v, false);
}

std::vector<double> softmax(const Tensor& x) {
  const std::int64_t R = x.dim(0), C = x.dim(1);
  std::vector<double> y(static_cast<std::size_t>(R * C));
  for (std::int64_t r = 0; r < R; ++r) {
    std::vector<double> row(static_cast<std::size_t>(C));
    for (std::int64_t j = 0; j < C; ++j) row[static_cast<std::size_t>(j)] = at(x, r * C + j);
    softmax_inplace(row);
    std::copy(row.begin(), row.end(), y.begin() + r * C);
  }
  return y;
}

std::vector<double> layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  const std::int64_t R = x.dim(0), C = x.dim(1);
  std::vector<double> y(static_cast<std::size_t>(R * C));
  for (std::int64_t r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < C; ++j) mean += at(x, r * C + j);
    mean /= static_cast<double>(C);
    for (std::int64_t j = 0; j < C; ++j) var += (at(x, r * C + j) - mean) * (at(x, r * C + j) - mean);
    const double rstd = 1.0 / std::sqrt(var / static_cast<double>(C) + eps);
    for (std::int64_t j = 0; j < C; ++j) {
      y[static_cast<std::size_t>(r * C + j)] = (at(x, r * C + j) - mean) * rstd * at(gamma, j) + at(beta, j);
    }
  }
  return y;
}

std::vector<double> rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
  const std::int64_t R = x.dim(0), C = x.dim(1);
  std::vector<double> y(static_cast<std::size_t>(R * C));
  for (std::int64_t r = 0; r < R; ++r) {
    double sq = 0;
    for (std::int64_t j = 0; j < C; ++j) sq += at(x, r * C + j) * at(x, r * C + j);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(C) + eps);
    for (std::int64_t j = 0; j < C; ++j) {
      y[static_cast<std::size_t>(r * C + j)] = at(x, r * C + j) * rstd * at(gamma, j);
    }
  }
  return y;
}

std::vector<double> silu(const Tensor& x) {
  std::vector<double> y(x.data.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = silu1(x.data[i]);
  return y;
}

std::vector<double> gelu_erf(const Tensor& x) {
  std::vector<double> y(x.data.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double v = x.data[i];
    y[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  }
  return y;
}

std::vector<double> gelu_tanh(const Tensor& x) {
  const double c = std::sqrt(2.0 / std::acos(-1.0));
  std::vector<double> y(x.data.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double v = x.data[i];
    y[i] = 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
  }
  return y;
}

std::vector<double> rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const std::int64_t S = x.dim(2), D = x.dim(3), half = D / 2;
  std::vector<double> y(x.data.size());
  for (std::int64_t e = 0; e < x.numel(); ++e) {
    const std::int64_t d = e % D, sd = e % (S * D);
    // rotate_half: (-x2, x1)
    const double rot = d < half ? -at(x, e + half) : at(x, e - half);
    y[static_cast<std::size_t>(e)] = at(x, e) * at(cos, sd) + rot * at(sin, sd);
  }
  return y;
}

std::vector<double> moe(const Tensor& x, const MoeWeights& w, std::int64_t top_k, bool renormalize) {
  const std::int64_t T = x.dim(0), d = x.dim(1), E = w.router.dim(0), F = w.down.dim(2);
  std::vector<double> out(static_cast<std::size_t>(T * d), 0.0);
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<double> p(static_cast<std::size_t>(E), 0.0);
    for (std::int64_t e = 0; e < E; ++e) {
      for (std::int64_t j = 0; j < d; ++j) p[static_cast<std::size_t>(e)] += at(x, t * d + j) * at(w.router, e * d + j);
    }
    softmax_inplace(p);
    std::vector<std::int64_t> order(static_cast<std::size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return p[static_cast<std::size_t>(a)] > p[static_cast<std::size_t>(b)];
    });
    double sum = 0;
    for (std::int64_t s = 0; s < top_k; ++s) sum += p[static_cast<std::size_t>(order[static_cast<std::size_t>(s)])];
    for (std::int64_t s = 0; s < top_k; ++s) {
      const std::int64_t e = order[static_cast<std::size_t>(s)];
      const double weight = renormalize ? p[static_cast<std::size_t>(e)] / sum : p[static_cast<std::size_t>(e)];
      std::vector<double> h(static_cast<std::size_t>(F));
      for (std::int64_t f = 0; f < F; ++f) {
        double g = 0, u = 0;
        for (std::int64_t j = 0; j < d; ++j) {
          g += at(x, t * d + j) * at(w.gate_up, (e * 2 * F + f) * d + j);
          u += at(x, t * d + j) * at(w.gate_up, (e * 2 * F + F + f) * d + j);
        }
        h[static_cast<std::size_t>(f)] = silu1(g) * u;
      }
      for (std::int64_t j = 0; j < d; ++j) {
        double y = 0;
        for (std::int64_t f = 0; f < F; ++f) y += h[static_cast<std::size_t>(f)] * at(w.down, (e * d + j) * F + f);
        out[static_cast<std::size_t>(t * d + j)] += weight * y;
      }
    }
  }
  return out;
}

}  // namespace gpusim::functional::reference
