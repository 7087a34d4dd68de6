#include "validation/functional/dag_interpreter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "validation/functional/synthetic_state.h"

namespace gpusim::functional {
namespace {

using workloads::KernelSemantics;
using Dims = std::vector<std::int64_t>;

std::int64_t product(const Dims& d) {
  return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>());
}

Tensor make(Dims shape) { return Tensor(std::move(shape)); }

std::runtime_error fail(const KernelSemantics& s, const std::string& why) {
  return std::runtime_error(fmt::format("dag interpreter: {} -> {}: {}", s.what, s.output, why));
}

// numpy broadcasting of `inputs` to a common shape, then f over the elements.
Tensor elementwise(const KernelSemantics& s, std::vector<Tensor> in,
                   const std::function<double(const std::vector<double>&)>& f) {
  if (!s.dims.empty()) {
    for (auto& t : in) {
      if (t.numel() == product(s.dims)) t.shape = s.dims;
    }
  }
  std::size_t rank = 0;
  for (const auto& t : in) rank = std::max(rank, t.shape.size());
  Dims out(rank, 1);
  std::vector<Dims> shapes;
  for (const auto& t : in) {
    Dims sh(rank - t.shape.size(), 1);
    sh.insert(sh.end(), t.shape.begin(), t.shape.end());
    for (std::size_t i = 0; i < rank; ++i) {
      if (sh[i] != 1 && out[i] != 1 && sh[i] != out[i]) {
        std::string shapes_text;
        for (const auto& t2 : in) shapes_text += fmt::format(" [{}]", fmt::join(t2.shape, ", "));
        throw fail(s, "shapes do not broadcast:" + shapes_text);
      }
      out[i] = std::max(out[i], sh[i]);
    }
    shapes.push_back(sh);
  }
  Tensor y = make(out);
  std::vector<double> args(in.size());
  Dims idx(rank, 0);
  for (std::int64_t e = 0; e < y.numel(); ++e) {
    std::int64_t rest = e;
    for (std::size_t i = rank; i-- > 0;) {
      idx[i] = rest % out[i];
      rest /= out[i];
    }
    for (std::size_t k = 0; k < in.size(); ++k) {
      std::int64_t off = 0;
      for (std::size_t i = 0; i < rank; ++i) off = off * shapes[k][i] + (shapes[k][i] == 1 ? 0 : idx[i]);
      args[k] = in[k][off];
    }
    y[e] = static_cast<float>(f(args));
  }
  return y;
}

// softmax over the last `width` elements of each row, in place.
void softmax_rows(std::vector<double>& v, std::int64_t width) {
  for (std::size_t r = 0; r < v.size(); r += static_cast<std::size_t>(width)) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::int64_t j = 0; j < width; ++j) mx = std::max(mx, v[r + static_cast<std::size_t>(j)]);
    for (std::int64_t j = 0; j < width; ++j) sum += (v[r + static_cast<std::size_t>(j)] = std::exp(v[r + static_cast<std::size_t>(j)] - mx));
    for (std::int64_t j = 0; j < width; ++j) v[r + static_cast<std::size_t>(j)] /= sum;
  }
}

// scores[b, h, i, j] = q[b, i, h, :] . k[b, h / group, j, :]
Tensor attn_scores(const Dims& d, const Tensor& q, const Tensor& k) {
  const std::int64_t B = d[0], H = d[1], KVH = d[2], S = d[3], L = d[4], D = d[5];
  Tensor y = make({B, H, S, L});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < S; ++i)
        for (std::int64_t j = 0; j < L; ++j) {
          double acc = 0;
          for (std::int64_t c = 0; c < D; ++c) {
            acc += static_cast<double>(q[((b * S + i) * H + h) * D + c]) *
                   k[((b * KVH + h / (H / KVH)) * L + j) * D + c];
          }
          y[((b * H + h) * S + i) * L + j] = static_cast<float>(acc);
        }
  return y;
}

// out[b, i, h, :] = sum_j p[b, h, i, j] v[b, h / group, j, :], as [T, H * D].
Tensor attn_values(const Dims& d, const Tensor& p, const Tensor& v) {
  const std::int64_t B = d[0], H = d[1], KVH = d[2], S = d[3], L = d[4], D = d[5];
  Tensor y = make({B * S, H * D});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < S; ++i)
        for (std::int64_t c = 0; c < D; ++c) {
          double acc = 0;
          for (std::int64_t j = 0; j < L; ++j) {
            acc += static_cast<double>(p[((b * H + h) * S + i) * L + j]) * v[((b * KVH + h / (H / KVH)) * L + j) * D + c];
          }
          y[((b * S + i) * H + h) * D + c] = static_cast<float>(acc);
        }
  return y;
}

// Causal: query i (at position past + i) sees keys 0..past + i.
void causal_mask(Tensor& scores, std::int64_t S, std::int64_t L) {
  const std::int64_t past = L - S;
  for (std::int64_t r = 0; r < scores.numel() / L; ++r) {
    const std::int64_t i = r % S;
    for (std::int64_t j = past + i + 1; j < L; ++j) scores[r * L + j] = -std::numeric_limits<float>::infinity();
  }
}

Tensor softmax_last(const Tensor& x) {
  const std::int64_t w = x.shape.back();
  std::vector<double> v(x.data.begin(), x.data.end());
  softmax_rows(v, w);
  Tensor y = make(x.shape);
  for (std::int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<float>(v[static_cast<std::size_t>(i)]);
  return y;
}

// y[m, n] = x[row(m), :] . w[n, :]
Tensor linear(const KernelSemantics& s, const Tensor& x, const Tensor& w) {
  const std::int64_t M = s.dims.at(0), N = s.dims.at(1), K = s.dims.at(2);
  if (s.scalar != 0) throw fail(s, "linear with a bias is not interpreted");
  const std::int64_t R = x.numel() / K;
  if (R % M != 0 || w.numel() != N * K) throw fail(s, "sizes do not match");
  Tensor y = make({M, N});
  for (std::int64_t m = 0; m < M; ++m) {
    const std::int64_t row = (m + 1) * (R / M) - 1;
    for (std::int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (std::int64_t k = 0; k < K; ++k) acc += static_cast<double>(x[row * K + k]) * w[n * K + k];
      y[m * N + n] = static_cast<float>(acc);
    }
  }
  return y;
}

// Softmax routing over E experts, top-k (renormalized when asked), and each chosen expert's
// SwiGLU: gate/up rows of gate_up [E, 2F, d], then down [E, d, F].
Tensor moe_experts(const KernelSemantics& s, const Tensor& h, const Tensor& logits, const Tensor& gate_up,
                   const Tensor& down) {
  const std::int64_t T = s.dims.at(0), d = s.dims.at(1), E = s.dims.at(2), k = s.dims.at(3), F = s.dims.at(4);
  Tensor y = make({T, d});
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<double> p(logits.data.begin() + t * E, logits.data.begin() + (t + 1) * E);
    softmax_rows(p, E);
    std::vector<std::int64_t> order(static_cast<std::size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return p[static_cast<std::size_t>(a)] > p[static_cast<std::size_t>(b)]; });
    double total = 0;
    for (std::int64_t j = 0; j < k; ++j) total += p[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
    std::vector<double> acc(static_cast<std::size_t>(d), 0.0);
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t e = order[static_cast<std::size_t>(j)];
      const double weight = p[static_cast<std::size_t>(e)] / (s.scalar != 0 ? total : 1.0);
      std::vector<double> mid(static_cast<std::size_t>(F));
      for (std::int64_t f = 0; f < F; ++f) {
        double g = 0, u = 0;
        for (std::int64_t c = 0; c < d; ++c) {
          g += static_cast<double>(h[t * d + c]) * gate_up[(e * 2 * F + f) * d + c];
          u += static_cast<double>(h[t * d + c]) * gate_up[(e * 2 * F + F + f) * d + c];
        }
        mid[static_cast<std::size_t>(f)] = g / (1 + std::exp(-g)) * u;
      }
      for (std::int64_t c = 0; c < d; ++c) {
        double o = 0;
        for (std::int64_t f = 0; f < F; ++f) o += mid[static_cast<std::size_t>(f)] * down[(e * d + c) * F + f];
        acc[static_cast<std::size_t>(c)] += weight * o;
      }
    }
    for (std::int64_t c = 0; c < d; ++c) y[t * d + c] = static_cast<float>(acc[static_cast<std::size_t>(c)]);
  }
  return y;
}

class Interpreter {
 public:
  Interpreter(const workloads::KernelDag& dag, const TensorMap& states) : dag_(dag), env_(states) {
    const auto& g = dag;
    for (std::size_t v = 0; v < dag.size(); ++v) {
      if (g[v].semantics) producer_[g[v].semantics->output] = v;
    }
  }

  TensorMap run(std::string result) {
    const auto& g = dag_;
    if (result.empty()) {
      for (std::size_t v = 0; v < dag_.size(); ++v) {
        if (g[v].semantics) result = g[v].semantics->output;
      }
    }
    // The vertices `result` depends on, by walking the semantics' inputs back.
    std::vector<bool> needed(dag_.size(), false);
    std::vector<std::string> todo{result};
    while (!todo.empty()) {
      const std::string name = todo.back();
      todo.pop_back();
      const auto it = producer_.find(name);
      if (it == producer_.end() || needed[it->second] || env_.count(name)) continue;
      needed[it->second] = true;
      for (const auto& in : g[it->second].semantics->inputs) todo.push_back(in);
    }
    for (std::size_t v = 0; v < dag_.size(); ++v) {
      if (needed[v]) env_[g[v].semantics->output] = execute(*g[v].semantics);
    }
    if (!env_.count(result)) throw std::runtime_error("dag interpreter: no vertex computes " + result);
    return env_;
  }

 private:
  // Tensor `name`; a state not given is made synthetic with the size `n` its reader expects.
  const Tensor& get(const std::string& name, std::int64_t n) {
    if (const auto it = env_.find(name); it != env_.end()) {
      if (n >= 0 && it->second.numel() != n) {
        throw std::runtime_error(fmt::format("dag interpreter: {} has {} elements, not {}", name, it->second.numel(), n));
      }
      return it->second;
    }
    if (producer_.count(name)) throw std::runtime_error("dag interpreter: " + name + " read before it is computed");
    if (n < 0) throw std::runtime_error("dag interpreter: no size for state " + name);
    Tensor t({n});
    t.data = synthetic_tensor(name, n);
    return env_[name] = std::move(t);
  }

  // Input i; a state first read by an elementwise op has the shape of its dims.
  Tensor in(const KernelSemantics& s, std::size_t i, std::int64_t n = -1) {
    if (n < 0 && !s.dims.empty() && !env_.count(s.inputs.at(i))) n = product(s.dims);
    return get(s.inputs.at(i), n);
  }

  Tensor execute(const KernelSemantics& s) {
    const auto& d = s.dims;
    const auto unary = [&](auto f) { return elementwise(s, {in(s, 0)}, [f](const auto& a) { return f(a[0]); }); };
    const auto binary = [&](auto f) { return elementwise(s, {in(s, 0), in(s, 1)}, [f](const auto& a) { return f(a[0], a[1]); }); };
    const double c = s.scalar;
    if (s.what == "add") return binary([](double a, double b) { return a + b; });
    if (s.what == "mul") return binary([](double a, double b) { return a * b; });
    if (s.what == "div") return binary([](double a, double b) { return a / b; });
    if (s.what == "mul_scalar") return unary([c](double a) { return a * c; });
    if (s.what == "add_scalar") return unary([c](double a) { return a + c; });
    if (s.what == "pow_scalar") return unary([c](double a) { return std::pow(a, c); });
    if (s.what == "rsqrt") return unary([](double a) { return 1 / std::sqrt(a); });
    if (s.what == "neg") return unary([](double a) { return -a; });
    if (s.what == "silu") return unary([](double a) { return a / (1 + std::exp(-a)); });
    if (s.what == "cos") return unary([](double a) { return std::cos(a); });
    if (s.what == "sin") return unary([](double a) { return std::sin(a); });
    if (s.what == "tanh") return unary([](double a) { return std::tanh(a); });
    if (s.what == "cast" || s.what == "copy") return in(s, 0);
    if (s.what == "embedding") {
      const std::int64_t B = d.at(0), S = d.at(1), past = d.at(2), dm = d.at(3), V = d.at(4);
      const Tensor table = in(s, 1, V * dm);
      Tensor y = make({B * S, dm});
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < S; ++i)
          for (std::int64_t c2 = 0; c2 < dm; ++c2) y[(b * S + i) * dm + c2] = table[synthetic_token(b, past + i, V) * dm + c2];
      return y;
    }
    if (s.what == "positions") {
      Tensor y = make({d.at(0) * d.at(1)});
      for (std::int64_t t = 0; t < y.numel(); ++t) y[t] = static_cast<float>(d.at(2) + t % d.at(1));
      return y;
    }
    if (s.what == "rope_freqs") {
      const Tensor pos = in(s, 0);
      const std::int64_t T = d.at(0), half = d.at(1);
      Tensor y = make({T, half});
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t j = 0; j < half; ++j) {
          const float inv = static_cast<float>(1.0 / std::pow(c, static_cast<double>(2 * j) / static_cast<double>(2 * half)));
          y[t * half + j] = pos[t] * inv;
        }
      return y;
    }
    if (s.what == "cat_last") {
      const std::int64_t rows = product(d) / d.back();
      Tensor y = make(d);
      std::int64_t col = 0;
      for (std::size_t k = 0; k < s.inputs.size(); ++k) {
        const Tensor x = in(s, k);
        const std::int64_t w = x.numel() / rows;
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t j = 0; j < w; ++j) y[r * d.back() + col + j] = x[r * w + j];
        col += w;
      }
      if (col != d.back()) throw fail(s, "widths do not add up");
      return y;
    }
    if (s.what == "mean_last") {
      const Tensor x = in(s, 0);
      const std::int64_t rows = product(d), w = x.numel() / rows;
      Tensor y = make(d);
      for (std::int64_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (std::int64_t j = 0; j < w; ++j) acc += x[r * w + j];
        y[r] = static_cast<float>(acc / static_cast<double>(w));
      }
      return y;
    }
    if (s.what == "neg_second_half" || s.what == "rotate_half_cat") {
      const std::int64_t D = d.back(), half = D / 2, rows = product(d) / D;
      const bool neg = s.what == "neg_second_half";
      const Tensor a = in(s, 0);
      const Tensor x = neg ? a : in(s, 1);
      Dims shape = d;
      if (neg) shape.back() = half;
      Tensor y = make(shape);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < half; ++j) {
          if (neg) {
            y[r * half + j] = -x[r * D + half + j];
          } else {
            y[r * D + j] = a[r * half + j];
            y[r * D + half + j] = x[r * D + j];
          }
        }
      }
      return y;
    }
    if (s.what == "kv_cat") {
      const std::int64_t B = d.at(0), KVH = d.at(1), P = d.at(2), S = d.at(3), D = d.at(4);
      const Tensor past = in(s, 0, B * KVH * P * D), fresh = in(s, 1, B * S * KVH * D);
      Tensor y = make({B, KVH, P + S, D});
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < KVH; ++h)
          for (std::int64_t j = 0; j < P + S; ++j)
            for (std::int64_t c2 = 0; c2 < D; ++c2) {
              y[((b * KVH + h) * (P + S) + j) * D + c2] =
                  j < P ? past[((b * KVH + h) * P + j) * D + c2] : fresh[((b * S + j - P) * KVH + h) * D + c2];
            }
      return y;
    }
    if (s.what == "attn_scores") return attn_scores(d, in(s, 0), in(s, 1));
    if (s.what == "attn_values") return attn_values(d, in(s, 0), in(s, 1));
    if (s.what == "causal_mask") {
      Tensor y = in(s, 0);
      y.shape = d;
      causal_mask(y, d.at(2), d.at(3));
      return y;
    }
    if (s.what == "softmax_last") return softmax_last(in(s, 0));
    if (s.what == "sdpa") {
      Tensor scores = attn_scores(d, in(s, 0), in(s, 1));
      for (auto& x : scores.data) x = static_cast<float>(x / std::sqrt(static_cast<double>(d.at(5))));
      causal_mask(scores, d.at(3), d.at(4));
      return attn_values(d, softmax_last(scores), in(s, 2));
    }
    if (s.what == "linear") return linear(s, in(s, 0), in(s, 1, d.at(1) * d.at(2)));
    if (s.what == "moe_experts") {
      const std::int64_t dm = d.at(1), E = d.at(2), F = d.at(4);
      return moe_experts(s, in(s, 0), in(s, 1), in(s, 2, E * 2 * F * dm), in(s, 3, E * dm * F));
    }
    throw fail(s, "not interpreted");
  }

  const workloads::KernelDag& dag_;
  TensorMap env_;
  std::map<std::string, std::size_t> producer_;
};

}  // namespace

TensorMap run_dag(const workloads::KernelDag& dag, const TensorMap& states, const std::string& result) {
  return Interpreter(dag, states).run(result);
}

}  // namespace gpusim::functional
