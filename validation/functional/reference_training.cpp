#include "validation/functional/reference_training.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "validation/functional/cross_entropy.h"

namespace gpusim::functional::reference {
namespace {

using Vec = std::vector<double>;

// y[T, out] = x[T, in] W[out, in]^T. (Row pointers: the finite differences run this some 10^5
// times, also under the sanitizers.)
Vec linear(const Vec& x, const Vec& w, std::int64_t T, std::int64_t in, std::int64_t out) {
  Vec y(static_cast<std::size_t>(T * out), 0.0);
  for (std::int64_t t = 0; t < T; ++t) {
    const double* xr = x.data() + t * in;
    for (std::int64_t o = 0; o < out; ++o) {
      const double* wr = w.data() + o * in;
      double s = 0;
      for (std::int64_t i = 0; i < in; ++i) s += xr[i] * wr[i];
      y[static_cast<std::size_t>(t * out + o)] = s;
    }
  }
  return y;
}

Vec rms_norm(const Vec& x, const Vec& g, std::int64_t T, std::int64_t d, double eps) {
  Vec y(x.size());
  for (std::int64_t t = 0; t < T; ++t) {
    double ms = 0;
    for (std::int64_t c = 0; c < d; ++c)
      ms += x[static_cast<std::size_t>(t * d + c)] * x[static_cast<std::size_t>(t * d + c)];
    const double r = 1.0 / std::sqrt(ms / static_cast<double>(d) + eps);
    for (std::int64_t c = 0; c < d; ++c) {
      y[static_cast<std::size_t>(t * d + c)] =
          x[static_cast<std::size_t>(t * d + c)] * r * g[static_cast<std::size_t>(c)];
    }
  }
  return y;
}

// cos and sin of the rotation angles s theta^(-2j / D), [S][D / 2].
struct Angles {
  Vec cos, sin;
};
Angles angles(std::int64_t S, std::int64_t D, double theta) {
  Angles a;
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t j = 0; j < D / 2; ++j) {
      const double x = static_cast<double>(s) *
                       std::pow(theta, -static_cast<double>(2 * j) / static_cast<double>(D));
      a.cos.push_back(std::cos(x));
      a.sin.push_back(std::sin(x));
    }
  return a;
}

// Rotates each head of x [T, heads * D] at its position t % S: (x1, x2) ->
// (x1 cos - x2 sin, x2 cos + x1 sin).
void rope(Vec& x, std::int64_t T, std::int64_t S, std::int64_t heads, std::int64_t D,
          const Angles& a) {
  const std::int64_t half = D / 2;
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t j = 0; j < half; ++j) {
        const double c = a.cos[static_cast<std::size_t>((t % S) * half + j)],
                     s = a.sin[static_cast<std::size_t>((t % S) * half + j)];
        double& x1 = x[static_cast<std::size_t>(t * heads * D + h * D + j)];
        double& x2 = x[static_cast<std::size_t>(t * heads * D + h * D + half + j)];
        const double r1 = x1 * c - x2 * s, r2 = x2 * c + x1 * s;
        x1 = r1;
        x2 = r2;
      }
}

}  // namespace

Params to_double(const std::vector<Parameter>& params) {
  Params out;
  for (const auto& p : params) out.emplace_back(p.value.data.begin(), p.value.data.end());
  return out;
}

namespace {

// The residual stream after the embedding, [T, d].
Vec embed(const TinyLlamaConfig& cfg, const Params& p, const TrainingBatch& batch) {
  const std::int64_t T = cfg.batch * cfg.seq, d = cfg.d_model;
  Vec x(static_cast<std::size_t>(T * d));
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t c = 0; c < d; ++c) {
      x[static_cast<std::size_t>(t * d + c)] =
          p[0][static_cast<std::size_t>(batch.ids[static_cast<std::size_t>(t)] * d + c)];
    }
  return x;
}

// Decoder layer i on the residual stream x.
void layer(const TinyLlamaConfig& cfg, const Params& p, std::int64_t i, Vec& x) {
  const std::int64_t B = cfg.batch, S = cfg.seq, T = B * S, d = cfg.d_model, F = cfg.d_ff;
  const std::int64_t H = cfg.heads, Hk = cfg.kv_heads, D = cfg.head_dim, group = H / Hk;
  const double eps = cfg.norm_eps;
  const Angles rot = angles(S, D, cfg.rope_theta);
  const auto w = [&](std::int64_t j) -> const Vec& {
    return p[static_cast<std::size_t>(1 + 9 * i + j)];
  };
  const Vec h = rms_norm(x, w(7), T, d, eps);
  Vec q = linear(h, w(0), T, d, H * D), k = linear(h, w(1), T, d, Hk * D);
  const Vec v = linear(h, w(2), T, d, Hk * D);
  rope(q, T, S, H, D, rot);
  rope(k, T, S, Hk, D, rot);
  Vec attn(static_cast<std::size_t>(T * H * D), 0.0);
  Vec pr(static_cast<std::size_t>(S));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t hd = 0; hd < H; ++hd) {
      const std::int64_t kv = hd / group;
      for (std::int64_t s = 0; s < S; ++s) {
        const std::int64_t ti = b * S + s;
        double mx = -1e300, sum = 0;
        for (std::int64_t j = 0; j <= s; ++j) {
          double dot = 0;
          for (std::int64_t e = 0; e < D; ++e) {
            dot += q[static_cast<std::size_t>(ti * H * D + hd * D + e)] *
                   k[static_cast<std::size_t>((b * S + j) * Hk * D + kv * D + e)];
          }
          pr[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(D));
          mx = std::max(mx, pr[static_cast<std::size_t>(j)]);
        }
        for (std::int64_t j = 0; j <= s; ++j)
          sum += (pr[static_cast<std::size_t>(j)] = std::exp(pr[static_cast<std::size_t>(j)] - mx));
        for (std::int64_t j = 0; j <= s; ++j)
          for (std::int64_t e = 0; e < D; ++e) {
            attn[static_cast<std::size_t>(ti * H * D + hd * D + e)] +=
                pr[static_cast<std::size_t>(j)] / sum *
                v[static_cast<std::size_t>((b * S + j) * Hk * D + kv * D + e)];
          }
      }
    }
  const Vec o = linear(attn, w(3), T, H * D, d);
  for (std::size_t e = 0; e < x.size(); ++e) x[e] += o[e];
  const Vec h2 = rms_norm(x, w(8), T, d, eps);
  const Vec gate = linear(h2, w(4), T, d, F), up = linear(h2, w(5), T, d, F);
  Vec mid(gate.size());
  for (std::size_t e = 0; e < mid.size(); ++e) mid[e] = gate[e] / (1 + std::exp(-gate[e])) * up[e];
  const Vec down = linear(mid, w(6), T, F, d);
  for (std::size_t e = 0; e < x.size(); ++e) x[e] += down[e];
}

// The loss from the residual stream entering layer `first` (cfg.layers: the final norm).
double loss_from(const TinyLlamaConfig& cfg, const Params& p, const TrainingBatch& batch,
                 std::int64_t first, Vec x) {
  const std::int64_t T = cfg.batch * cfg.seq, d = cfg.d_model, V = cfg.vocab;
  for (std::int64_t i = first; i < cfg.layers; ++i) layer(cfg, p, i, x);
  const Vec hf = rms_norm(x, p[p.size() - 2], T, d, cfg.norm_eps);
  const Vec logits = linear(hf, p[p.size() - 1], T, d, V);
  // Cross-entropy, mean over the positions whose target is not ignored.
  double loss = 0, counted = 0;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t target = batch.targets[static_cast<std::size_t>(t)];
    if (target == kIgnoreIndex) continue;
    const double* row = &logits[static_cast<std::size_t>(t * V)];
    const double mx = *std::max_element(row, row + V);
    double sum = 0;
    for (std::int64_t c = 0; c < V; ++c) sum += std::exp(row[c] - mx);
    loss += mx + std::log(sum) - row[target];
    counted += 1;
  }
  return loss / counted;
}

void check(const TinyLlamaConfig& cfg, const Params& p) {
  if (static_cast<std::int64_t>(p.size()) != 3 + 9 * cfg.layers)
    throw std::invalid_argument("training_loss: parameters");
}

}  // namespace

double training_loss(const TinyLlamaConfig& cfg, const Params& p, const TrainingBatch& batch) {
  check(cfg, p);
  return loss_from(cfg, p, batch, 0, embed(cfg, p, batch));
}

Params finite_difference_gradients(const TinyLlamaConfig& cfg, const Params& params,
                                   const TrainingBatch& batch, double h) {
  // Every element by a flat index: parameter p, element e.
  std::vector<std::pair<std::size_t, std::size_t>> index;
  Params grads;
  for (std::size_t p = 0; p < params.size(); ++p) {
    grads.emplace_back(params[p].size(), 0.0);
    for (std::size_t e = 0; e < params[p].size(); ++e) index.emplace_back(p, e);
  }
  check(cfg, params);
  // A parameter of layer i changes nothing before it: the differences start from the residual
  // stream entering that layer (the unperturbed one), the same arithmetic as the whole loss.
  std::vector<Vec> entering{embed(cfg, params, batch)};
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    entering.push_back(entering.back());
    layer(cfg, params, i, entering.back());
  }
  const auto first_layer = [&](std::size_t p) -> std::int64_t {
    if (p == 0) return -1;  // the embedding
    return std::min<std::int64_t>((static_cast<std::int64_t>(p) - 1) / 9, cfg.layers);
  };
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, index.size(), 64),
                    [&](const tbb::blocked_range<std::size_t>& r) {
                      Params local = params;
                      const auto loss = [&](std::size_t p) {
                        const std::int64_t first = first_layer(p);
                        return first < 0 ? loss_from(cfg, local, batch, 0, embed(cfg, local, batch))
                                         : loss_from(cfg, local, batch, first,
                                                     entering[static_cast<std::size_t>(first)]);
                      };
                      for (std::size_t i = r.begin(); i != r.end(); ++i) {
                        const auto [p, e] = index[i];
                        const double x = params[p][e];
                        local[p][e] = x + h;
                        const double up = loss(p);
                        local[p][e] = x - h;
                        const double down = loss(p);
                        local[p][e] = x;
                        grads[p][e] = (up - down) / (2 * h);
                      }
                    });
  return grads;
}

void adamw(Params& params, const Params& grads, Params& m, Params& v, std::int64_t& steps,
           const AdamWConfig& cfg) {
  ++steps;
  const double bc1 = 1 - std::pow(cfg.beta1, static_cast<double>(steps));
  const double bc2 = 1 - std::pow(cfg.beta2, static_cast<double>(steps));
  for (std::size_t p = 0; p < params.size(); ++p) {
    for (std::size_t e = 0; e < params[p].size(); ++e) {
      double& x = params[p][e];
      const double g = grads[p][e];
      x -= cfg.lr * cfg.weight_decay * x;
      m[p][e] = cfg.beta1 * m[p][e] + (1 - cfg.beta1) * g;
      v[p][e] = cfg.beta2 * v[p][e] + (1 - cfg.beta2) * g * g;
      const double mhat = m[p][e] / bc1, vhat = v[p][e] / bc2;
      x -= cfg.lr * mhat / (std::sqrt(vhat) + cfg.eps);
    }
  }
}

void sgd(Params& params, const Params& grads, Params& buffers, const SgdConfig& cfg) {
  const bool first = buffers.empty();
  if (first) buffers.resize(params.size());
  for (std::size_t p = 0; p < params.size(); ++p) {
    if (first) buffers[p].assign(params[p].size(), 0.0);
    for (std::size_t e = 0; e < params[p].size(); ++e) {
      const double g = grads[p][e] + cfg.weight_decay * params[p][e];
      double& b = buffers[p][e];
      b = first ? g : cfg.momentum * b + (1 - cfg.dampening) * g;
      params[p][e] -= cfg.lr * (cfg.momentum != 0 ? b : g);
    }
  }
}

}  // namespace gpusim::functional::reference
