#include "validation/functional/training_step.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "validation/functional/activations.h"
#include "validation/functional/activations_backward.h"
#include "validation/functional/attention_backward.h"
#include "validation/functional/cross_entropy.h"
#include "validation/functional/embedding_backward.h"
#include "validation/functional/flash_attention.h"
#include "validation/functional/gemm.h"
#include "validation/functional/gemm_backward.h"
#include "validation/functional/norms.h"
#include "validation/functional/norms_backward.h"
#include "validation/functional/rope.h"
#include "validation/functional/rope_backward.h"
#include "validation/functional/synthetic_state.h"

namespace gpusim::functional {
namespace {

constexpr std::int64_t kElt = 2;  // the modeled bf16 storage (counts only; the math is fp32)

// Small tiles so that the tiny shapes still take edge tiles and split-K slices.
models::GemmTiling tiling(std::int64_t K) {
  const std::int64_t split = K >= 32 ? 2 : 1;
  return {16, 16, 8, split, ((K + split - 1) / split + 7) / 8 * 8};
}
// The flash kernels' tiles: 4 x 4 over 8 positions (two tiles, the diagonal one partly masked).
constexpr FlashTiling kFlashTiling{4, 4, true};
constexpr FlashBwdTiling kFlashBwdTiling{4, 4, 3, 5, 3};

Tensor linear(const Tensor& x, const Tensor& w) {
  return gemm(x, w, tiling(x.dim(1)), kElt, /*b_nk=*/true).out;
}

// [T, heads * D] (T = B * S) <-> [B, heads, S, D]: the transposes around attention (views on
// the GPU).
Tensor to_heads(const Tensor& x, std::int64_t B, std::int64_t S, std::int64_t heads,
                std::int64_t D) {
  Tensor out({B, heads, S, D});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t e = 0; e < D; ++e)
          out[((b * heads + h) * S + s) * D + e] = x[(b * S + s) * heads * D + h * D + e];
  return out;
}
Tensor from_heads(const Tensor& x) {
  const std::int64_t B = x.dim(0), heads = x.dim(1), S = x.dim(2), D = x.dim(3);
  Tensor out({B * S, heads * D});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t e = 0; e < D; ++e)
          out[(b * S + s) * heads * D + h * D + e] = x[((b * heads + h) * S + s) * D + e];
  return out;
}

void add_into(Tensor& x, const Tensor& y) {
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] += y[i];
}
Tensor product(const Tensor& a, const Tensor& b) {
  Tensor out(a.shape);
  for (std::int64_t i = 0; i < a.numel(); ++i) out[i] = a[i] * b[i];
  return out;
}

// What the backward of one layer reads.
struct LayerTape {
  Tensor x_in, h, q_rot, k_rot, v, attn_heads, lse, attn, x_mid, h2, gate, up, act, prod;
  NormStats in_stats, post_stats;
};

struct Weights {
  const Tensor *wq, *wk, *wv, *wo, *wg, *wu, *wd, *g_in, *g_post;
};

}  // namespace

std::vector<Parameter> tiny_llama_parameters(const TinyLlamaConfig& cfg) {
  const std::int64_t d = cfg.d_model, V = cfg.vocab, q = cfg.heads * cfg.head_dim,
                     kv = cfg.kv_heads * cfg.head_dim;
  std::vector<Parameter> out;
  const auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    Parameter p{name, Tensor(std::move(shape))};
    p.value.data = synthetic_tensor(name, p.value.numel());
    out.push_back(std::move(p));
  };
  add("w.embed_tokens", {V, d});
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    const std::string L = fmt::format("w.layers[{}]", i);
    add(L + ".attn.q_proj", {q, d});
    add(L + ".attn.k_proj", {kv, d});
    add(L + ".attn.v_proj", {kv, d});
    add(L + ".attn.o_proj", {d, q});
    add(L + ".mlp.gate_proj", {cfg.d_ff, d});
    add(L + ".mlp.up_proj", {cfg.d_ff, d});
    add(L + ".mlp.down_proj", {d, cfg.d_ff});
    add(L + ".input_norm.weight", {d});
    add(L + ".post_attention_norm.weight", {d});
  }
  add("w.final_norm.weight", {d});
  add("w.lm_head", {V, d});
  return out;
}

TrainingBatch tiny_llama_batch(const TinyLlamaConfig& cfg) {
  TrainingBatch b;
  for (std::int64_t s = 0; s < cfg.batch; ++s) {
    for (std::int64_t p = 0; p < cfg.seq; ++p) {
      b.ids.push_back(synthetic_token(s, p, cfg.vocab));
      b.targets.push_back(p + 1 < cfg.seq ? synthetic_token(s, p + 1, cfg.vocab) : kIgnoreIndex);
    }
  }
  return b;
}

void rope_tables(const TinyLlamaConfig& cfg, Tensor& cos, Tensor& sin) {
  const std::int64_t S = cfg.seq, D = cfg.head_dim, half = D / 2;
  cos = Tensor({S, D});
  sin = Tensor({S, D});
  for (std::int64_t s = 0; s < S; ++s) {
    for (std::int64_t j = 0; j < half; ++j) {
      const double a =
          static_cast<double>(s) *
          std::pow(cfg.rope_theta, -static_cast<double>(2 * j) / static_cast<double>(D));
      cos[s * D + j] = cos[s * D + j + half] = static_cast<float>(std::cos(a));
      sin[s * D + j] = sin[s * D + j + half] = static_cast<float>(std::sin(a));
    }
  }
}

Gradients tiny_llama_gradients(const TinyLlamaConfig& cfg, const std::vector<Parameter>& params,
                               const TrainingBatch& batch) {
  const std::int64_t B = cfg.batch, S = cfg.seq, T = B * S, d = cfg.d_model, V = cfg.vocab;
  const std::int64_t H = cfg.heads, Hk = cfg.kv_heads, Dh = cfg.head_dim;
  if (static_cast<std::int64_t>(params.size()) != 3 + 9 * cfg.layers) {
    throw std::invalid_argument("tiny_llama_gradients: parameters as tiny_llama_parameters");
  }
  const Tensor& embed = params[0].value;
  const Tensor& g_final = params[params.size() - 2].value;
  const Tensor& head = params[params.size() - 1].value;
  const auto layer = [&](std::int64_t i) {
    const auto at = [&](std::int64_t j) {
      return &params[static_cast<std::size_t>(1 + 9 * i + j)].value;
    };
    return Weights{at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8)};
  };
  Tensor cos, sin;
  rope_tables(cfg, cos, sin);
  const RopeLaunch rope_launch{4, false};

  // ---- forward ----
  Tensor x({T, d});
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t c = 0; c < d; ++c)
      x[t * d + c] = embed[batch.ids[static_cast<std::size_t>(t)] * d + c];
  std::vector<LayerTape> tapes(static_cast<std::size_t>(cfg.layers));
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    LayerTape& tp = tapes[static_cast<std::size_t>(i)];
    const Weights w = layer(i);
    tp.x_in = x;
    tp.in_stats = norm_statistics(x, cfg.norm_eps, true);
    tp.h = rms_norm(x, *w.g_in, cfg.norm_eps, kElt).out;
    tp.q_rot = rope(to_heads(linear(tp.h, *w.wq), B, S, H, Dh), cos, sin, rope_launch, kElt).out;
    tp.k_rot = rope(to_heads(linear(tp.h, *w.wk), B, S, Hk, Dh), cos, sin, rope_launch, kElt).out;
    tp.v = to_heads(linear(tp.h, *w.wv), B, S, Hk, Dh);
    tp.attn_heads =
        flash_attention(tp.q_rot, tp.k_rot, tp.v, /*causal=*/true, kFlashTiling, kElt).out;
    tp.lse = attention_lse(tp.q_rot, tp.k_rot, /*causal=*/true);
    tp.attn = from_heads(tp.attn_heads);
    add_into(x, linear(tp.attn, *w.wo));
    tp.x_mid = x;
    tp.post_stats = norm_statistics(x, cfg.norm_eps, true);
    tp.h2 = rms_norm(x, *w.g_post, cfg.norm_eps, kElt).out;
    tp.gate = linear(tp.h2, *w.wg);
    tp.up = linear(tp.h2, *w.wu);
    tp.act = silu(tp.gate, kElt).out;
    tp.prod = product(tp.act, tp.up);
    add_into(x, linear(tp.prod, *w.wd));
  }
  const NormStats final_stats = norm_statistics(x, cfg.norm_eps, true);
  const Tensor hf = rms_norm(x, g_final, cfg.norm_eps, kElt).out;
  const Tensor logits = linear(hf, head);
  CrossEntropy ce = cross_entropy(logits, batch.targets);

  // ---- backward ----
  Gradients out;
  out.loss = ce.loss;
  out.grads.resize(params.size());
  for (std::size_t p = 0; p < params.size(); ++p) out.grads[p] = Tensor(params[p].value.shape);
  const auto grad_of = [&](std::int64_t i, std::int64_t j) -> Tensor& {
    return out.grads[static_cast<std::size_t>(1 + 9 * i + j)];
  };
  out.grads.back() = linear_grad_weight(ce.dlogits, hf, tiling(T), kElt).out;
  NormGrads fn = rms_norm_backward(x, g_final, final_stats,
                                   linear_grad_input(ce.dlogits, head, tiling(V), kElt).out, kElt);
  out.grads[params.size() - 2] = std::move(fn.dgamma);
  Tensor dx = std::move(fn.dx);  // the residual stream's gradient
  for (std::int64_t i = cfg.layers - 1; i >= 0; --i) {
    const LayerTape& tp = tapes[static_cast<std::size_t>(i)];
    const Weights w = layer(i);
    // MLP: down, the product, SiLU, up and gate.
    grad_of(i, 6) = linear_grad_weight(dx, tp.prod, tiling(T), kElt).out;
    const Tensor dprod = linear_grad_input(dx, *w.wd, tiling(d), kElt).out;
    const Tensor dup = product(dprod, tp.act);
    const Tensor dgate = silu_backward(product(dprod, tp.up), tp.gate, kElt).out;
    grad_of(i, 5) = linear_grad_weight(dup, tp.h2, tiling(T), kElt).out;
    grad_of(i, 4) = linear_grad_weight(dgate, tp.h2, tiling(T), kElt).out;
    Tensor dh2 = linear_grad_input(dup, *w.wu, tiling(cfg.d_ff), kElt).out;
    add_into(dh2, linear_grad_input(dgate, *w.wg, tiling(cfg.d_ff), kElt).out);
    NormGrads post = rms_norm_backward(tp.x_mid, *w.g_post, tp.post_stats, dh2, kElt);
    grad_of(i, 8) = std::move(post.dgamma);
    add_into(dx, post.dx);
    // Attention: o_proj, the attention's backward, RoPE's, the projections.
    grad_of(i, 3) = linear_grad_weight(dx, tp.attn, tiling(T), kElt).out;
    const Tensor dattn = to_heads(linear_grad_input(dx, *w.wo, tiling(d), kElt).out, B, S, H, Dh);
    const AttentionGrads ag = flash_attention_backward(tp.q_rot, tp.k_rot, tp.v, tp.attn_heads,
                                                       dattn, tp.lse, true, kFlashBwdTiling, kElt);
    const Tensor dq = from_heads(rope_backward(ag.dq, cos, sin, kElt).out);
    const Tensor dk = from_heads(rope_backward(ag.dk, cos, sin, kElt).out);
    const Tensor dv = from_heads(ag.dv);
    grad_of(i, 0) = linear_grad_weight(dq, tp.h, tiling(T), kElt).out;
    grad_of(i, 1) = linear_grad_weight(dk, tp.h, tiling(T), kElt).out;
    grad_of(i, 2) = linear_grad_weight(dv, tp.h, tiling(T), kElt).out;
    Tensor dh = linear_grad_input(dv, *w.wv, tiling(Hk * Dh), kElt).out;
    add_into(dh, linear_grad_input(dk, *w.wk, tiling(Hk * Dh), kElt).out);
    add_into(dh, linear_grad_input(dq, *w.wq, tiling(H * Dh), kElt).out);
    NormGrads in = rms_norm_backward(tp.x_in, *w.g_in, tp.in_stats, dh, kElt);
    grad_of(i, 7) = std::move(in.dgamma);
    add_into(dx, in.dx);
  }
  out.grads[0] = embedding_backward(batch.ids, dx, V, kElt).out;
  return out;
}

}  // namespace gpusim::functional
