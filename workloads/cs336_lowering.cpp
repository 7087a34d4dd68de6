// The cs336_basics reference model (Stanford CS336, spring 2025: cs336_basics/model.py and
// nn_utils.py as assignment 2 ships them, the model seed 002 benchmarks) in eager PyTorch, as its
// code launches kernels. Written from the source, not from a profile: the package cannot be
// installed on the lent GPU machines (no network). What differs from the hf-eager lowering:
//  * Linear is einsum(x, W, "... d_in, d_out d_in -> ... d_out"): a GEMM, no bias;
//    Embedding is weight[token_ids] (an index gather); lm_head runs on every position;
//  * RMSNorm: x ** 2, mean, + eps, sqrt, x / rms, weight * x (no casts in fp32);
//  * RoPE on the rearranged [B, H, S, D] views: the cos / sin table gathered at the positions
//    (einx.get_at), x1 and x2 the interleaved halves, cos x1 - sin x2 and sin x1 + cos x2
//    (four products, a sub, an add) and the halves interleaved back (one cat);
//  * attention written out: the causal mask from two aranges and a compare each layer,
//    einsum(Q, K) / sqrt(d_k), torch.where(mask, scores, -inf), softmax by hand (amax,
//    subtract, exp, sum, divide), einsum with V (V's rearranged view is copied to a batch of
//    contiguous matrices first), and the heads rearranged back with .contiguous() (a copy);
//  * SwiGLU: w2(silu(w1 x) * w3 x) with silu(x) = x * sigmoid(x).
// A forward pass over whole sequences only: the model keeps no KV cache. A training step
// (workloads/cs336_train_lowering.cpp) runs the same forward with a tape of what autograd saves.
#include <cmath>

#include "models/families.h"
#include "workloads/cs336_pieces.h"
#include "workloads/step_emitter.h"
#include "workloads/transformer_step.h"

namespace gpusim::workloads {
namespace {
using detail::Cs336AttentionTape;
using detail::Cs336ForwardTape;
using detail::Cs336LayerTape;
using detail::Cs336NormTape;
using detail::StepEmitter;
using hw::DType;
using hw::TensorUse;
using models::EwFunc;

// A reduction over the last dimension of `rows` x `width` (mean, amax, sum).
TensorUse reduce_last(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t rows,
                      std::int64_t width, const char* functor) {
  const TensorUse y = e.new_act(label, static_cast<double>(rows));
  e.emit(label, {models::lower_reduce(rows, width, e.act(), e.act(), true, functor, x, y, e.hw())});
  return y;
}

TensorUse rms_norm(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t rows,
                   std::int64_t width, Cs336NormTape* tape) {
  const DType a = e.act();
  const std::int64_t n = rows * width;
  const TensorUse w = e.weight(label + ".weight", static_cast<double>(width));
  const TensorUse xf = e.cast(label + ".to_fp32", n, a, DType::kFp32, x);
  const DType f = xf.tensor == x.tensor ? a : DType::kFp32;
  const TensorUse sq = e.pointwise(label + ".pow", EwFunc::kPowScalar, n, f, f, {xf}, false);
  const TensorUse mean = reduce_last(e, label + ".mean", sq, rows, width, "at::native::MeanOps<float, float, float, float>");
  const TensorUse eps = e.pointwise(label + ".add_eps", EwFunc::kAddScalar, rows, f, f, {mean}, false);
  const TensorUse rms = e.pointwise(label + ".sqrt", EwFunc::kSqrt, rows, f, f, {eps}, false);
  const TensorUse xn = e.pointwise(label + ".div", EwFunc::kDiv, n, f, f, {xf, rms}, true);
  const TensorUse y = e.pointwise(label + ".weight_mul", EwFunc::kMul, n, f, f, {w, xn}, true);
  if (tape) *tape = {xf, rms, xn, w, rows, width};
  return e.cast(label + ".to_in_dtype", n, f, a, y);
}

// RoPE on a [B, H, S, D] view of a projection's [B, S, H * D] output; returns a dense tensor.
// `gathered`, when given, gets the cos / sin rows the products read.
TensorUse rope(StepEmitter& e, const std::string& label, const TensorUse& x, const TensorUse& table,
               TensorUse* gathered) {
  const auto& m = e.m();
  const DType a = e.act();
  const std::int64_t S = e.s().new_tokens, D = m.head_dim, half = e.tokens() * m.heads * D / 2;
  const TensorUse cs = e.new_act(label + ".cos_sin", static_cast<double>(2 * S * (D / 2)));
  e.emit(label + ".cos_sin", {models::lower_embedding_lookup(S, D, a, table, cs, e.hw())});
  if (gathered) *gathered = cs;
  // Every operand is a strided half (stride 2) or the table broadcast over batch and heads.
  const TensorUse c1 = e.pointwise(label + ".cos_x1", EwFunc::kMul, half, a, a, {cs, x}, true);
  const TensorUse s2 = e.pointwise(label + ".sin_x2", EwFunc::kMul, half, a, a, {cs, x}, true);
  const TensorUse r1 = e.pointwise(label + ".sub", EwFunc::kAdd, half, a, a, {c1, s2}, false);
  const TensorUse s1 = e.pointwise(label + ".sin_x1", EwFunc::kMul, half, a, a, {cs, x}, true);
  const TensorUse c2 = e.pointwise(label + ".cos_x2", EwFunc::kMul, half, a, a, {cs, x}, true);
  const TensorUse r2 = e.pointwise(label + ".add", EwFunc::kAdd, half, a, a, {s1, c2}, false);
  const TensorUse out = e.new_act(label + ".interleave", static_cast<double>(2 * half));
  // einx.rearrange('... x_half, ... x_half -> ... (x_half (1 + 1))'): a cat of two [..., half, 1]
  // views along the last axis, whose outputs interleave (strided writes).
  e.emit(label + ".interleave", {models::lower_cat({half, half}, a, false, {r1, r2}, out, e.hw(), {true, true})});
  return out;
}

// scaled_dot_product_attention of cs336_basics over B x H heads of S x S, softmax by hand.
TensorUse attention(StepEmitter& e, const std::string& label, const TensorUse& q, const TensorUse& k,
                    const TensorUse& v, const TensorUse& mask, Cs336AttentionTape* tape) {
  const auto& m = e.m();
  const DType a = e.act();
  const std::int64_t BH = e.s().batch * m.heads, S = e.s().new_tokens, D = m.head_dim;
  const std::int64_t n = BH * S * S, rows = BH * S;
  const TensorUse scores = e.new_act(label + ".scores", static_cast<double>(n));
  e.batched_gemm(label + ".qk", S, S, D, BH, e.math(), q, k, scores);
  const TensorUse scaled = e.pointwise(label + ".scale", EwFunc::kMulScalar, n, a, a, {scores}, false);
  const TensorUse masked = e.pointwise(label + ".where", EwFunc::kWhere, n, a, a, {mask, scaled}, true);
  const TensorUse mx = reduce_last(e, label + ".softmax.amax", masked, rows, S, "at::native::MaxOps<float>");
  const TensorUse shifted = e.pointwise(label + ".softmax.sub", EwFunc::kAdd, n, a, a, {masked, mx}, true);
  const TensorUse ex = e.pointwise(label + ".softmax.exp", EwFunc::kExp, n, a, a, {shifted}, false);
  const TensorUse sum = reduce_last(e, label + ".softmax.sum", ex, rows, S, "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>");
  const TensorUse probs = e.pointwise(label + ".softmax.div", EwFunc::kDiv, n, a, a, {ex, sum}, true);
  // einsum reshapes V's [B, H, S, D] view of [B, S, H * D] to a batch of matrices: a copy.
  const TensorUse vc = e.pointwise(label + ".v_contiguous", EwFunc::kCopy, BH * S * D, a, a, {v}, true);
  const TensorUse out = e.new_act(label + ".out", static_cast<double>(BH * S * D));
  e.batched_gemm(label + ".pv", S, D, S, BH, e.math(), probs, vc, out);
  if (tape) *tape = {q, k, mask, masked, mx, ex, sum, probs, vc};
  return out;
}

void block(StepEmitter& e, std::int64_t i, TensorUse& x, const TensorUse& table, Cs336LayerTape* tape) {
  const auto& m = e.m();
  const DType a = e.act();
  const std::int64_t T = e.tokens(), d = m.d_model, S = e.s().new_tokens;
  const std::int64_t qd = m.heads * m.head_dim, kd = m.kv_heads * m.head_dim;
  const std::string L = "layers[" + std::to_string(i) + "]";
  Cs336LayerTape t;
  const TensorUse h = rms_norm(e, L + ".ln1", x, T, d, &t.ln1);
  t.h = h;
  t.wq = e.weight(L + ".attn.q_proj", static_cast<double>(qd * d));
  t.wk = e.weight(L + ".attn.k_proj", static_cast<double>(kd * d));
  t.wv = e.weight(L + ".attn.v_proj", static_cast<double>(kd * d));
  const TensorUse q = e.linear(L + ".attn.q_proj", T, qd, d, false, h, t.wq);
  const TensorUse k = e.linear(L + ".attn.k_proj", T, kd, d, false, h, t.wk);
  const TensorUse v = e.linear(L + ".attn.v_proj", T, kd, d, false, h, t.wv);
  // Positions and the causal mask, made in every layer's forward: arange, arange, qi >= kj.
  const TensorUse pos = e.new_bytes(L + ".attn.positions", static_cast<double>(S) * 8);
  e.emit(L + ".attn.positions", {models::lower_arange(S, pos, e.hw())});
  const TensorUse seq = e.new_bytes(L + ".attn.seq", static_cast<double>(S) * 8);
  e.emit(L + ".attn.seq", {models::lower_arange(S, seq, e.hw())});
  const TensorUse mask = e.pointwise(L + ".attn.causal_mask", EwFunc::kCompareScalar, S * S, DType::kFp8, DType::kFp8,
                                     {seq}, true);
  const TensorUse qr = rope(e, L + ".attn.rope_q", q, table, &t.rope_q_table);
  const TensorUse kr = rope(e, L + ".attn.rope_k", k, table, &t.rope_k_table);
  const TensorUse att = attention(e, L + ".attn", qr, kr, v, mask, tape ? &t.attn : nullptr);
  t.merged = e.pointwise(L + ".attn.merge_heads", EwFunc::kCopy, T * qd, a, a, {att}, true);
  t.wo = e.weight(L + ".attn.output_proj", static_cast<double>(d * qd));
  const TensorUse proj = e.linear(L + ".attn.output_proj", T, d, qd, false, t.merged, t.wo);
  x = e.pointwise(L + ".residual_attn", EwFunc::kAdd, T * d, a, a, {x, proj}, false);
  t.h2 = rms_norm(e, L + ".ln2", x, T, d, &t.ln2);
  const std::int64_t F = m.d_ff;
  t.w1 = e.weight(L + ".ffn.w1", static_cast<double>(F * d));
  t.w3 = e.weight(L + ".ffn.w3", static_cast<double>(F * d));
  t.w2 = e.weight(L + ".ffn.w2", static_cast<double>(d * F));
  t.gate = e.linear(L + ".ffn.w1", T, F, d, false, t.h2, t.w1);
  t.sigmoid = e.pointwise(L + ".ffn.sigmoid", EwFunc::kSigmoid, T * F, a, a, {t.gate}, false);
  t.act = e.pointwise(L + ".ffn.silu_mul", EwFunc::kMul, T * F, a, a, {t.gate, t.sigmoid}, false);
  t.up = e.linear(L + ".ffn.w3", T, F, d, false, t.h2, t.w3);
  t.prod = e.pointwise(L + ".ffn.mul", EwFunc::kMul, T * F, a, a, {t.act, t.up}, false);
  const TensorUse down = e.linear(L + ".ffn.w2", T, d, F, false, t.prod, t.w2);
  x = e.pointwise(L + ".residual_ffn", EwFunc::kAdd, T * d, a, a, {x, down}, false);
  if (tape) *tape = std::move(t);
}

}  // namespace

namespace detail {

void lower_cs336_forward(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b, Cs336ForwardTape* tape) {
  StepEmitter e(w, s, b);
  const auto& m = w.model;
  const std::int64_t T = e.tokens(), d = m.d_model;
  const TensorUse table = e.weight("token_embeddings", static_cast<double>(m.vocab * d));
  TensorUse x = e.new_act("token_embeddings", static_cast<double>(T * d));
  e.emit("token_embeddings", {models::lower_embedding_lookup(T, d, e.act(), table, x, e.hw())});
  // RotaryEmbedding's cos / sin cache: a buffer, [2, context, D / 2].
  const TensorUse rope_cache = b.state("rope_cache", 2.0 * static_cast<double>(s.new_tokens * (m.head_dim / 2)) *
                                                         hw::bytes_per_element(e.act()));
  const auto layers = static_cast<int>(b.layers_to_lower(m.layers));
  if (tape) tape->layers.resize(static_cast<std::size_t>(layers));
  for (int i = 0; i < layers; ++i) {
    b.begin_layer();
    block(e, i, x, rope_cache, tape ? &tape->layers[static_cast<std::size_t>(i)] : nullptr);
  }
  b.end_layers();
  Cs336NormTape final_norm;
  const TensorUse h = rms_norm(e, "ln_final", x, T, d, &final_norm);
  const TensorUse head = e.weight("lm_head", static_cast<double>(m.vocab * d));
  const TensorUse logits = e.linear("lm_head", T, m.vocab, d, false, h, head);
  if (tape) {
    tape->ids = b.state("token_ids", static_cast<double>(T) * 8);
    tape->embedding = table;
    tape->ln_final = final_norm;
    tape->hidden = h;
    tape->head = head;
    tape->logits = logits;
  }
}

}  // namespace detail

void lower_cs336_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  detail::lower_cs336_forward(w, s, b, nullptr);
}

}  // namespace gpusim::workloads
