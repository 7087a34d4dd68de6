#include "validation/functional/reference_transformer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "validation/functional/synthetic_state.h"

namespace gpusim::functional {
namespace {

using Mat = std::vector<std::vector<double>>;  // [rows][cols]

std::vector<double> weights(const std::string& name, std::int64_t n) {
  const auto f = synthetic_tensor(name, n);
  return {f.begin(), f.end()};
}

// x @ W^T with W [out, in] named `name`.
Mat linear(const Mat& x, const std::string& name, std::int64_t out) {
  const auto in = static_cast<std::int64_t>(x[0].size());
  const auto w = weights(name, out * in);
  Mat y(x.size(), std::vector<double>(static_cast<std::size_t>(out), 0.0));
  for (std::size_t r = 0; r < x.size(); ++r)
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t i = 0; i < in; ++i) y[r][static_cast<std::size_t>(o)] += x[r][static_cast<std::size_t>(i)] * w[static_cast<std::size_t>(o * in + i)];
  return y;
}

Mat rms_norm(const Mat& x, const std::string& name, double eps) {
  const auto w = weights(name, static_cast<std::int64_t>(x[0].size()));
  Mat y = x;
  for (auto& row : y) {
    double ms = 0;
    for (const double v : row) ms += v * v;
    const double r = 1 / std::sqrt(ms / static_cast<double>(row.size()) + eps);
    for (std::size_t c = 0; c < row.size(); ++c) row[c] *= r * w[c];
  }
  return y;
}

double silu(double v) { return v / (1 + std::exp(-v)); }

Mat swiglu(const Mat& x, const std::string& label, std::int64_t width) {
  const Mat g = linear(x, "w." + label + ".gate_proj", width), u = linear(x, "w." + label + ".up_proj", width);
  Mat p = g;
  for (std::size_t r = 0; r < p.size(); ++r)
    for (std::size_t c = 0; c < p[r].size(); ++c) p[r][c] = silu(g[r][c]) * u[r][c];
  return linear(p, "w." + label + ".down_proj", static_cast<std::int64_t>(x[0].size()));
}

Mat moe(const workloads::ModelConfig& m, const Mat& x, const std::string& label) {
  const auto& cfg = *m.moe;
  const std::int64_t d = m.d_model, E = cfg.experts, F = cfg.expert_d_ff;
  const Mat logits = linear(x, "w." + label + ".gate", E);
  const auto gate_up = weights("w." + label + ".experts.gate_up_proj", E * 2 * F * d);
  const auto down = weights("w." + label + ".experts.down_proj", E * d * F);
  Mat y(x.size(), std::vector<double>(static_cast<std::size_t>(d), 0.0));
  for (std::size_t t = 0; t < x.size(); ++t) {
    std::vector<double> p = logits[t];
    const double mx = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (auto& v : p) sum += (v = std::exp(v - mx));
    for (auto& v : p) v /= sum;
    std::vector<std::size_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return p[a] > p[b]; });
    double chosen = 0;
    for (std::int64_t j = 0; j < cfg.top_k; ++j) chosen += p[order[static_cast<std::size_t>(j)]];
    for (std::int64_t j = 0; j < cfg.top_k; ++j) {
      const auto e = static_cast<std::int64_t>(order[static_cast<std::size_t>(j)]);
      const double wgt = p[static_cast<std::size_t>(e)] / (cfg.norm_topk_prob.value_or(false) ? chosen : 1.0);
      std::vector<double> mid(static_cast<std::size_t>(F));
      for (std::int64_t f = 0; f < F; ++f) {
        double g = 0, u = 0;
        for (std::int64_t c = 0; c < d; ++c) {
          g += x[t][static_cast<std::size_t>(c)] * gate_up[static_cast<std::size_t>((e * 2 * F + f) * d + c)];
          u += x[t][static_cast<std::size_t>(c)] * gate_up[static_cast<std::size_t>((e * 2 * F + F + f) * d + c)];
        }
        mid[static_cast<std::size_t>(f)] = silu(g) * u;
      }
      for (std::int64_t c = 0; c < d; ++c) {
        double o = 0;
        for (std::int64_t f = 0; f < F; ++f) o += mid[static_cast<std::size_t>(f)] * down[static_cast<std::size_t>((e * d + c) * F + f)];
        y[t][static_cast<std::size_t>(c)] += wgt * o;
      }
    }
  }
  if (cfg.shared_experts > 0) {
    const Mat s = swiglu(x, label + ".shared_experts", cfg.shared_experts * cfg.shared_expert_d_ff);
    for (std::size_t t = 0; t < y.size(); ++t)
      for (std::size_t c = 0; c < y[t].size(); ++c) y[t][c] += s[t][c];
  }
  return y;
}

// Rotates each head of x [S][heads * D] at positions 0..S-1 (rotate_half convention).
void rope(Mat& x, std::int64_t heads, std::int64_t D, double theta) {
  const std::int64_t half = D / 2;
  for (std::size_t s = 0; s < x.size(); ++s)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t j = 0; j < half; ++j) {
        const double a = static_cast<double>(s) * std::pow(theta, -static_cast<double>(2 * j) / static_cast<double>(D));
        auto& x1 = x[s][static_cast<std::size_t>(h * D + j)];
        auto& x2 = x[s][static_cast<std::size_t>(h * D + half + j)];
        const double r1 = x1 * std::cos(a) - x2 * std::sin(a), r2 = x2 * std::cos(a) + x1 * std::sin(a);
        x1 = r1;
        x2 = r2;
      }
}

Mat attention(const workloads::ModelConfig& m, const Mat& h, const std::string& L) {
  const std::int64_t H = m.heads, KVH = m.kv_heads, D = m.head_dim, S = static_cast<std::int64_t>(h.size());
  Mat q = linear(h, "w." + L + ".attn.q_proj", H * D), k = linear(h, "w." + L + ".attn.k_proj", KVH * D);
  const Mat v = linear(h, "w." + L + ".attn.v_proj", KVH * D);
  const double theta = m.rope_theta.value_or(10000.0);
  rope(q, H, D, theta);
  rope(k, KVH, D, theta);
  Mat out(h.size(), std::vector<double>(static_cast<std::size_t>(H * D), 0.0));
  for (std::int64_t hd = 0; hd < H; ++hd) {
    const std::int64_t kv = hd / (H / KVH);
    for (std::int64_t i = 0; i < S; ++i) {
      std::vector<double> p(static_cast<std::size_t>(i + 1));
      double mx = -1e300, sum = 0;
      for (std::int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (std::int64_t c = 0; c < D; ++c) dot += q[static_cast<std::size_t>(i)][static_cast<std::size_t>(hd * D + c)] * k[static_cast<std::size_t>(j)][static_cast<std::size_t>(kv * D + c)];
        mx = std::max(mx, p[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(D)));
      }
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (std::int64_t j = 0; j <= i; ++j)
        for (std::int64_t c = 0; c < D; ++c)
          out[static_cast<std::size_t>(i)][static_cast<std::size_t>(hd * D + c)] += p[static_cast<std::size_t>(j)] / sum * v[static_cast<std::size_t>(j)][static_cast<std::size_t>(kv * D + c)];
    }
  }
  return linear(out, "w." + L + ".attn.o_proj", m.d_model);
}

void add(Mat& x, const Mat& y) {
  for (std::size_t r = 0; r < x.size(); ++r)
    for (std::size_t c = 0; c < x[r].size(); ++c) x[r][c] += y[r][c];
}

}  // namespace

std::vector<double> reference_logits(const workloads::ModelConfig& m, std::int64_t batch, std::int64_t positions) {
  if (m.norm != workloads::Norm::kRmsNorm || m.activation != workloads::Activation::kSwiglu ||
      m.positions != workloads::Positions::kRope || m.qkv_bias || m.attn_out_bias || m.mlp_bias) {
    throw std::invalid_argument("reference_logits: Llama-style models only (RMSNorm, SwiGLU, RoPE, no biases)");
  }
  const std::int64_t d = m.d_model, V = m.vocab;
  const double eps = m.norm_eps.value_or(1e-5);
  const auto table = weights("w.embed_tokens", V * d);
  std::vector<double> logits;
  for (std::int64_t b = 0; b < batch; ++b) {
    Mat x;
    for (std::int64_t s = 0; s < positions; ++s) {
      const auto tok = synthetic_token(b, s, V);
      x.emplace_back(table.begin() + tok * d, table.begin() + (tok + 1) * d);
    }
    for (std::int64_t i = 0; i < m.layers; ++i) {
      const std::string L = fmt::format("layers[{}]", i);
      add(x, attention(m, rms_norm(x, "w." + L + ".input_norm.weight", eps), L));
      const Mat h = rms_norm(x, "w." + L + ".post_attention_norm.weight", eps);
      const bool dense = !m.moe || i < m.moe->dense_layers;
      add(x, dense ? swiglu(h, L + ".mlp", m.d_ff) : moe(m, h, L + ".moe"));
    }
    const Mat last{rms_norm(x, "w.final_norm.weight", eps).back()};
    const Mat y = linear(last, m.tied_embeddings ? "w.embed_tokens" : "w.lm_head", V);
    logits.insert(logits.end(), y[0].begin(), y[0].end());
  }
  return logits;
}

}  // namespace gpusim::functional
