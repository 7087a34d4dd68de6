// The kernels Hugging Face transformers 5.x launches for one forward step in eager mode
// (attn_implementation="sdpa", DynamicCache, bf16), piece by piece as the modeling code runs:
//   LlamaModel.forward: embedding, the attention-mask check (create_causal_mask reads the mask
//     back to skip it), the rotary table (inv_freq @ positions, cat, cos, sin, scaling, casts);
//   per layer: RMSNorm in fp32 (cast, pow, mean, +eps, rsqrt, mul, cast back, weight mul),
//     q/k/v projections, RoPE (q*cos + rotate_half(q)*sin: mul, neg, cat, mul, add, for q and
//     k), the DynamicCache torch.cat of K and V, F.scaled_dot_product_attention (cuDNN), o_proj,
//     residual add; then the MLP (gate, SiLU, up, mul, down, residual add) or the MoE block
//     (router, softmax, top-k, and the grouped_mm experts path of integrations/moe.py);
//   the final norm and lm_head on the last position only (logits_to_keep=1, as generate does).
// GPT-2 differs: learned positions, LayerNorm kernels, a fused QKV Conv1D (addmm with bias)
// whose K/V views make the cache cat strided, and gelu_new written out as 8 pointwise kernels.
// Checked against the calibration cases of validation/data/hf_models_h100.json.gz.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/common.h"
#include "models/training_kernels.h"
#include "sim/error.h"
#include "workloads/hf_eager_pieces.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads {
std::int64_t detail::rotary_dim(const ModelConfig& m) {
  if (m.mla) return m.mla->qk_rope_head_dim;
  return std::max<std::int64_t>(2, 2 * static_cast<std::int64_t>(std::llround(m.rotary_fraction * static_cast<double>(m.head_dim) / 2)));
}

namespace {
using detail::StepEmitter;
using hw::DType;
using hw::TensorUse;
using models::EwFunc;
using Sem = KernelSemantics;

// The semantics of an elementwise op with a scalar operand (its function is filled in).
Sem with_scalar(double v) { return Sem{"", {}, "", {}, v}; }

constexpr DType kF32 = DType::kFp32;

bool is_gpt2_style(const ModelConfig& m) { return m.positions == Positions::kLearned; }

// GPT-2 in a training step (model.train()): nn.Dropout after the embeddings and after each
// c_proj (fused_dropout_kernel_vec, a bool mask kept for the backward), and dropout inside sdpa.
bool gpt2_dropout(const StepEmitter& e) { return is_gpt2_style(e.m()) && e.workload().phase == Phase::kTrain; }

TensorUse dropout(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t n, TensorUse* mask_out) {
  const TensorUse y = e.new_act(label, static_cast<double>(n));
  const TensorUse mask = e.new_bytes(label + ".mask", static_cast<double>(n));
  e.emit(label, {models::lower_dropout(n, e.act(), x, y, mask, e.hw())});
  if (mask_out) *mask_out = mask;
  return y;
}

// create_causal_mask checks whether the 2-D mask is all ones (then sdpa runs with is_causal and
// no mask): two copies of the mask, a sum, a compare and a read-back to the host.
void mask_check(StepEmitter& e) {
  const std::int64_t n = e.s().batch * (e.s().past_tokens + e.s().new_tokens);
  const TensorUse mask = e.b().state("attention_mask", static_cast<double>(n) * 8);
  const TensorUse a = e.pointwise("mask_check.copy", EwFunc::kCast, n, DType::kBf16, kF32, {mask}, false);
  const TensorUse c = e.pointwise("mask_check.copy", EwFunc::kCast, n, DType::kBf16, kF32, {a}, false);
  const TensorUse sum = e.new_act("mask_check.sum", 1, kF32);
  e.emit("mask_check.sum", {models::lower_reduce(1, n, kF32, kF32, true,
                                                 "at::native::func_wrapper_t<long, at::native::sum_functor<long, long, long> >",
                                                 c, sum, e.hw())});
  const TensorUse eq = e.pointwise("mask_check.eq", EwFunc::kCompareScalar, 1, kF32, kF32, {sum}, false);
  e.emit("mask_check.item", {models::detail::memcpy_launch(true, 1, eq, eq, e.hw())});
  e.b().mark_host_sync();
}

using detail::rotary_dim;

// LlamaRotaryEmbedding: inv_freq[B, D/2, 1] @ positions[B, 1, q] in fp32, then the table. Gemma 3
// builds a second one (prefix "rotary_local") for its windowed layers.
std::pair<TensorUse, TensorUse> rotary_table(StepEmitter& e, const std::string& prefix = "rotary",
                                             double theta = 0) {
  const auto& s = e.s();
  const std::int64_t half = rotary_dim(e.m()) / 2, T = e.tokens();
  if (theta <= 0) theta = e.m().rope_theta.value_or(10000.0);
  const TensorUse pos = e.b().state("position_ids", static_cast<double>(T) * 8);
  const TensorUse posf = e.pointwise(prefix + ".positions", EwFunc::kCast, T, DType::kBf16, kF32, {pos}, false,
                                     Sem{"positions", {}, "", {s.batch, s.new_tokens, s.past_tokens}});
  const TensorUse inv = e.b().state(prefix + ".inv_freq", static_cast<double>(half) * 4);
  const TensorUse freqs = e.new_act(prefix + ".freqs", static_cast<double>(T * half), kF32);
  e.batched_gemm(prefix + ".matmul", half, s.new_tokens, 1, s.batch, kF32, inv, posf, freqs,
               Sem{"rope_freqs", {posf.tensor}, freqs.tensor, {T, half}, theta});
  const TensorUse emb = e.new_act(prefix + ".emb", static_cast<double>(T * 2 * half), kF32);
  e.emit(prefix + ".cat", {models::lower_cat({T * half, T * half}, kF32, s.new_tokens == 1, {freqs, freqs}, emb, e.hw())},
         Sem{"cat_last", {freqs.tensor, freqs.tensor}, emb.tensor, {T, 1, 2 * half}});
  const std::int64_t n = T * 2 * half;
  const TensorUse cos = e.pointwise(prefix + ".cos", EwFunc::kCos, n, kF32, kF32, {emb}, false);
  // attention_scaling is 1 for the default rope type.
  const TensorUse cs = e.pointwise(prefix + ".cos_scale", EwFunc::kMulScalar, n, kF32, kF32, {cos}, false, with_scalar(1.0));
  const TensorUse sin = e.pointwise(prefix + ".sin", EwFunc::kSin, n, kF32, kF32, {emb}, false);
  const TensorUse ss = e.pointwise(prefix + ".sin_scale", EwFunc::kMulScalar, n, kF32, kF32, {sin}, false, with_scalar(1.0));
  return {e.cast(prefix + ".cos_cast", n, kF32, e.act(), cs), e.cast(prefix + ".sin_cast", n, kF32, e.act(), ss)};
}

}  // namespace

namespace {
// LlamaRMSNorm under autocast on an input in the autocast type (Qwen3's q/k norms): x.float(),
// the fp32 statistics, .to(input dtype), then the fp32 weight times it, which promotes the
// result to fp32.
TensorUse amp_rms_norm_rows(StepEmitter& e, const std::string& label, const TensorUse& x, const TensorUse& w,
                            std::int64_t rows, std::int64_t width, detail::RmsNormTape* tape) {
  const std::int64_t n = rows * width;
  const DType xt = e.dtype_of(x);
  const TensorUse xf = e.cast(label + ".to_fp32", n, xt, kF32, x);
  const TensorUse sq = e.pointwise(label + ".pow", EwFunc::kPowScalar, n, kF32, kF32, {xf}, false, with_scalar(2.0));
  const TensorUse var = e.new_act(label + ".mean", static_cast<double>(rows), kF32);
  e.emit(label + ".mean", {models::lower_reduce(rows, width, kF32, kF32, true, "at::native::MeanOps<float, float, float, float>",
                                                sq, var, e.hw())});
  const TensorUse ve = e.pointwise(label + ".add_eps", EwFunc::kAddScalar, rows, kF32, kF32, {var}, false,
                                   with_scalar(e.m().norm_eps.value_or(1e-5)));
  const TensorUse r = e.pointwise(label + ".rsqrt", EwFunc::kRsqrt, rows, kF32, kF32, {ve}, false);
  const TensorUse xn = e.pointwise(label + ".scale", EwFunc::kMul, n, kF32, kF32, {xf, r}, true);
  const TensorUse xb = e.cast(label + ".to_act", n, kF32, xt, xn);
  if (tape) *tape = detail::RmsNormTape{x, xf, r, xb, w, rows, width, {}};
  return e.promoted(label + ".weight_mul", EwFunc::kMul, n, {w, xb}, kF32, rows > 1);
}
}  // namespace

namespace detail {
// LlamaRMSNorm over `rows` rows of `width`: computed in fp32 and cast back before the weight
// multiply; Gemma's (norm_weight_offset) multiplies by 1 + weight in fp32 and casts last. A
// strided input (a split view) is read by the legacy copy kernel.
TensorUse rms_norm_rows(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t rows,
                        std::int64_t width, bool strided_input, RmsNormTape* tape) {
  const std::int64_t n = rows * width;
  const TensorUse w = e.weight(label + ".weight", static_cast<double>(width));
  if (e.amp() && e.dtype_of(x) != e.act()) return amp_rms_norm_rows(e, label, x, w, rows, width, tape);
  const TensorUse xf = strided_input ? e.pointwise(label + ".to_fp32", EwFunc::kCast, n, e.act(), kF32, {x}, true)
                                     : e.cast(label + ".to_fp32", n, e.act(), kF32, x);
  const TensorUse sq = e.pointwise(label + ".pow", EwFunc::kPowScalar, n, kF32, kF32, {xf}, false, with_scalar(2.0));
  const TensorUse var = e.new_act(label + ".mean", static_cast<double>(rows), kF32);
  e.emit(label + ".mean", {models::lower_reduce(rows, width, kF32, kF32, true,
                                                "at::native::MeanOps<float, float, float, float>",
                                                sq, var, e.hw())},
         Sem{"mean_last", {sq.tensor}, var.tensor, {rows, 1}});
  const TensorUse ve = e.pointwise(label + ".add_eps", EwFunc::kAddScalar, rows, kF32, kF32, {var}, false,
                                   with_scalar(e.m().norm_eps.value_or(1e-5)));
  const TensorUse r = e.pointwise(label + ".rsqrt", EwFunc::kRsqrt, rows, kF32, kF32, {ve}, false);
  const TensorUse xn = e.pointwise(label + ".scale", EwFunc::kMul, n, kF32, kF32, {xf, r}, true);
  if (e.m().norm_weight_offset) {
    const TensorUse wf = e.cast(label + ".weight_to_fp32", width, e.act(), kF32, w);
    const TensorUse w1 = e.pointwise(label + ".weight_add_one", EwFunc::kAddScalar, width, kF32, kF32, {wf}, false,
                                     with_scalar(1.0));
    const TensorUse y = e.pointwise(label + ".weight_mul", EwFunc::kMul, n, kF32, kF32, {xn, w1}, rows > 1);
    if (tape) *tape = RmsNormTape{x, xf, r, xn, w, rows, width, w1};
    return e.cast(label + ".to_act", n, kF32, e.act(), y);
  }
  const TensorUse xb = e.cast(label + ".to_act", n, kF32, e.act(), xn);
  if (tape) *tape = RmsNormTape{x, xf, r, xb, w, rows, width, {}};
  // weight[d] * x[T, d]: a broadcast unless there is a single row.
  return e.pointwise(label + ".weight_mul", EwFunc::kMul, n, e.act(), e.act(), {w, xb}, rows > 1, Sem{"mul", {}, "", {width}});
}

}  // namespace detail

namespace {
using detail::rms_norm_rows;

TensorUse rms_norm(StepEmitter& e, const std::string& label, const TensorUse& x,
                   detail::RmsNormTape* tape = nullptr) {
  return rms_norm_rows(e, label, x, e.tokens(), e.m().d_model, false, tape);
}

// nn.LayerNorm; `tape`, when given, gets its input and its weight (weight and bias together).
TensorUse layer_norm(StepEmitter& e, const std::string& label, const TensorUse& x, detail::RmsNormTape* tape) {
  const std::int64_t T = e.tokens(), d = e.m().d_model;
  const TensorUse y = e.new_act(label, static_cast<double>(T * d));
  const TensorUse w = e.weight(label + ".weight", 2.0 * static_cast<double>(d));
  e.b().emit_op(label, models::Op(models::OpKind::kLayerNorm, e.act(), models::RowShape{T, d}),
                {{"x", x}, {"y", y}, {"weight", w}});
  if (tape) *tape = detail::RmsNormTape{x, {}, {}, {}, w, T, d, {}};
  return y;
}

TensorUse norm(StepEmitter& e, const std::string& label, const TensorUse& x,
               detail::RmsNormTape* tape = nullptr) {
  return e.m().norm == Norm::kRmsNorm ? rms_norm(e, label, x, tape) : layer_norm(e, label, x, tape);
}

// apply_rotary_pos_emb for `heads` heads: x*cos + rotate_half(x)*sin. q and k are transposed
// views of the projection ([B, S, H, D] memory), and cos/sin broadcast over the heads, so with
// more than one head the multiplies take the strided path (a single head is dense); the final add
// is dense for a single token. Phi-3 rotates the first rotary_dim dimensions and cats the rest
// back on (a cat even when nothing passes through).
TensorUse rope(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t heads,
               const TensorUse& cos, const TensorUse& sin) {
  const auto& m = e.m();
  const std::int64_t rot = rotary_dim(m);
  const std::int64_t n = e.tokens() * heads * rot;
  const DType a = e.act();
  const bool broadcast = heads > 1 || rot < m.head_dim;
  const std::vector<std::int64_t> shape{e.tokens(), heads, m.head_dim};
  if (e.amp() && e.dtype_of(x) != e.dtype_of(cos)) {
    // Autocast leaves these products alone: a projection's bf16 output times the fp32 table is
    // promoted to fp32 (the casting legacy kernel); the rotated half stays in x's type.
    const DType xt = e.dtype_of(x);
    const TensorUse xc = e.promoted(label + ".mul_cos", EwFunc::kMul, n, {x, cos}, kF32, broadcast);
    const TensorUse ng = e.pointwise(label + ".neg", EwFunc::kNeg, n / 2, xt, xt, {x}, true);
    const TensorUse rt = e.new_act(label + ".rotate_half", static_cast<double>(n), xt);
    e.emit(label + ".cat", {models::lower_cat({n / 2, n / 2}, xt, false, {ng, x}, rt, e.hw())});
    const TensorUse rs = e.promoted(label + ".mul_sin", EwFunc::kMul, n, {rt, sin}, kF32, broadcast);
    return e.pointwise(label + ".add", EwFunc::kAdd, n, kF32, kF32, {xc, rs}, e.s().new_tokens > 1 && broadcast);
  }
  const TensorUse xc = e.pointwise(label + ".mul_cos", EwFunc::kMul, n, a, a, {x, cos}, broadcast, Sem{"mul", {}, "", shape});
  const TensorUse ng = e.pointwise(label + ".neg", EwFunc::kNeg, n / 2, a, a, {x}, true,
                                   Sem{"neg_second_half", {}, "", shape});
  const TensorUse rt = e.new_act(label + ".rotate_half", static_cast<double>(n));
  e.emit(label + ".cat", {models::lower_cat({n / 2, n / 2}, a, false, {ng, x}, rt, e.hw())},
         Sem{"rotate_half_cat", {ng.tensor, x.tensor}, rt.tensor, shape});
  const TensorUse rs = e.pointwise(label + ".mul_sin", EwFunc::kMul, n, a, a, {rt, sin}, broadcast);
  // Several tokens: the products keep the projection's [B, S, H, D] layout, so the sum is strided.
  const bool strided_sum = e.s().new_tokens > 1 && broadcast;
  const TensorUse out = e.pointwise(label + ".add", EwFunc::kAdd, n, a, a, {xc, rs}, strided_sum);
  // The unrotated dimensions are catted back on; Phi-3's apply_rotary_pos_emb (the
  // fused-projection family) cats even when nothing passes through.
  if (!m.fused_qkv && rot == m.head_dim) return out;
  const std::int64_t pass = e.tokens() * heads * (m.head_dim - rot);
  const TensorUse joined = e.new_act(label + ".pass_cat", static_cast<double>(n + pass));
  std::vector<std::int64_t> parts{n};
  std::vector<TensorUse> inputs{out};
  if (pass > 0) {
    parts.push_back(pass);
    inputs.push_back(x);
  } else {
    parts.push_back(0);
  }
  // Only a dense rotated part alone takes the vectorized kernel (a strided sum, as in prefill,
  // takes the strided one: hf_models3_h100.json.gz, Phi-3 prefill).
  e.emit(label + ".pass_cat", {models::lower_cat(parts, a, pass == 0 && !strided_sum, inputs, joined, e.hw(),
                                                 {!strided_sum, false})});
  return joined;
}

// DynamicCache.update: torch.cat([cache, new], dim=-2) allocates the grown cache.
// A windowed layer (DynamicSlidingWindowLayer) keeps the last window - 1 tokens: `past` is what
// the layer holds, and once the window is full it holds a view of the previous step's cat, which
// the next cat reads strided.
TensorUse cache_append(StepEmitter& e, const std::string& label, const std::string& which,
                       const TensorUse& fresh, bool dense_inputs, std::int64_t held, bool window_full) {
  StepShape s = e.s();
  s.past_tokens = held;
  const std::int64_t per_token = s.batch * e.m().kv_heads * e.m().head_dim;
  const double eb = e.act_bytes();
  const TensorUse past = e.b().state(fmt::format("{}.{}.cache", label, which),
                                     static_cast<double>(per_token * s.past_tokens) * eb);
  const TensorUse grown = e.b().state(fmt::format("{}.{}.cache_new", label, which),
                                      static_cast<double>(per_token * (s.past_tokens + s.new_tokens)) * eb);
  if (e.amp() && e.dtype_of(fresh) != e.act()) {
    // DynamicLayer creates its empty caches in the keys' type (fp32 after RoPE under autocast):
    // the values' cat promotes them, copying through the casting legacy kernel.
    return e.promoted(label + "." + which + "_cat", EwFunc::kCopy, per_token * s.new_tokens, {fresh}, e.act(), true);
  }
  // The first update concatenates onto an empty tensor: the strided kernel.
  const bool vectorized = dense_inputs && !window_full && s.past_tokens > 0 && s.new_tokens == 1;
  e.emit(label + "." + which + "_cat",
         {models::lower_cat({per_token * s.past_tokens, per_token * s.new_tokens}, e.act(), vectorized,
                            {past, fresh}, grown, e.hw(), {!window_full, dense_inputs})},
         Sem{"kv_cat", {past.tensor, fresh.tensor}, grown.tensor,
             {s.batch, e.m().kv_heads, s.past_tokens, s.new_tokens, e.m().head_dim}});
  return grown;
}

// Attention written out (CS336-style): scores = q k^T, scale, causal mask, softmax, @ v.
TensorUse naive_attention(StepEmitter& e, const std::string& label, const TensorUse& q,
                          const TensorUse& k, const TensorUse& v) {
  const auto& s = e.s();
  const auto& m = e.m();
  const std::int64_t BH = s.batch * m.heads, Lq = s.new_tokens, Lk = s.past_tokens + s.new_tokens;
  const std::vector<std::int64_t> dims{s.batch, m.heads, m.kv_heads, Lq, Lk, m.head_dim};
  const TensorUse scores = e.new_act(label + ".scores", static_cast<double>(BH * Lq * Lk));
  e.batched_gemm(label + ".qk", Lq, Lk, m.head_dim, BH, e.math(), q, k, scores,
               Sem{"attn_scores", {q.tensor, k.tensor}, scores.tensor, dims});
  const std::int64_t n = BH * Lq * Lk;
  TensorUse scaled = e.pointwise(label + ".scale", EwFunc::kMulScalar, n, e.act(), e.act(), {scores}, false,
                                 with_scalar(1.0 / std::sqrt(static_cast<double>(m.head_dim))));
  if (Lq > 1) {
    models::ElementwiseProblem p;
    p.func = EwFunc::kMaskedFill;
    p.n = n;
    p.in = p.out = e.act();
    p.mask_bytes = Lq * Lk;
    p.inputs = {scaled.tensor};
    const TensorUse masked = e.new_act(label + ".masked", static_cast<double>(n));
    p.output = masked.tensor;
    e.emit(label + ".mask", models::lower_elementwise(p, e.hw(), ""),
           Sem{"causal_mask", {scaled.tensor}, masked.tensor, {s.batch, m.heads, Lq, Lk}});
    scaled = masked;
  }
  const TensorUse probs = e.new_act(label + ".probs", static_cast<double>(n));
  e.emit(label + ".softmax",
         models::lower_softmax(BH * Lq, Lk, e.act(), scaled.tensor, probs.tensor, e.hw(), ""),
         Sem{"softmax_last", {scaled.tensor}, probs.tensor, {}});
  const TensorUse out = e.new_act(label + ".out", static_cast<double>(BH * Lq * m.head_dim));
  e.batched_gemm(label + ".pv", Lq, m.head_dim, Lk, BH, e.math(), probs, v, out,
               Sem{"attn_values", {probs.tensor, v.tensor}, out.tensor, dims});
  return out;
}

// transformers' flash_attention_2 (flash_attn_func on the [B, S, H, D] views of q and the cache;
// the all-ones mask's unpadding of transformers 4.46 is left out): FlashAttention-2's forward for
// prefill, its split-KV kernel and combine for decode (models/decode_attention_model.cpp).
TensorUse flash_attention_2(StepEmitter& e, const std::string& label, const TensorUse& q, const TensorUse& k,
                            const TensorUse& v, std::int64_t keys) {
  const auto& s = e.s();
  const auto& m = e.m();
  const TensorUse o = e.new_act(label + ".out", static_cast<double>(e.tokens() * m.heads * m.head_dim));
  const std::map<std::string, TensorUse> names{{"q", q}, {"k", k}, {"v", v}, {"o", o}};
  if (s.new_tokens == 1 && s.past_tokens > 0) {
    e.b().emit_op(label + ".flash_decode",
                  models::Op(models::OpKind::kSdpaDecode, e.act(),
                             models::SdpaDecodeShape{s.batch, m.heads, m.kv_heads, keys, m.head_dim}),
                  names);
  } else {
    e.b().emit_op(label + ".flash_attention",
                  models::Op(models::OpKind::kSdpa, e.act(), models::SdpaShape{s.batch, m.heads, s.new_tokens, m.head_dim, true}),
                  names);
  }
  return o;
}

// F.scaled_dot_product_attention over `keys` keys. With a materialized mask (a windowed layer
// whose window is exceeded) transformers expands grouped K and V to every head (repeat_kv: a copy
// each unless one KV head), turns the boolean mask into an additive one (fill, fill, where) and
// cuDNN runs its masked kernels: the decode kernel without head grouping, the prefill kernel over
// every key tile (no causal skipping).
TensorUse attention_core(StepEmitter& e, const std::string& label, const TensorUse& q,
                         const TensorUse& k, const TensorUse& v, std::int64_t keys,
                         const std::optional<TensorUse>& window_mask) {
  const bool masked = window_mask.has_value();
  const auto& s = e.s();
  const auto& m = e.m();
  if (s.past_tokens > 0 && s.new_tokens > 1) {
    throw ModelError("attention: several new tokens against a filled cache (chunked prefill) is not modeled");
  }
  TensorUse kk = k, vv = v;
  std::int64_t kv_heads = m.kv_heads;
  if (masked) {
    if (m.kv_heads > 1 && m.heads > m.kv_heads) {
      const std::int64_t n = s.batch * m.heads * keys * m.head_dim;
      kk = e.pointwise(label + ".repeat_k", EwFunc::kCopy, n, e.act(), e.act(), {k}, true);
      vv = e.pointwise(label + ".repeat_v", EwFunc::kCopy, n, e.act(), e.act(), {v}, true);
    }
    kv_heads = m.heads;
    const TensorUse& mask = *window_mask;
    e.pointwise(label + ".mask_fill", EwFunc::kFill, 1, e.act(), e.act(), {}, false);
    e.pointwise(label + ".mask_fill", EwFunc::kFill, 1, e.act(), e.act(), {}, false);
    e.pointwise(label + ".mask_where", EwFunc::kMaskedFill, s.batch * s.new_tokens * keys, e.act(), e.act(), {mask}, true);
  }
  const TensorUse o = e.new_act(label + ".sdpa", static_cast<double>(e.tokens() * m.heads * m.head_dim), e.lin());
  const std::map<std::string, TensorUse> names{{"q", q}, {"k", kk}, {"v", vv}, {"o", o}};
  const Sem sem{"sdpa", {q.tensor, k.tensor, v.tensor}, o.tensor,
                {s.batch, m.heads, m.kv_heads, s.new_tokens, s.past_tokens + s.new_tokens, m.head_dim}};
  if (s.past_tokens > 0) {
    e.b().emit_op(label + ".sdpa",
                  models::Op(models::OpKind::kSdpaDecode, e.act(),
                             models::SdpaDecodeShape{s.batch, m.heads, kv_heads, keys, m.head_dim}),
                  names, masked ? std::nullopt : std::optional<Sem>(sem));
  } else {
    e.b().emit_op(label + ".sdpa",
                  models::Op(models::OpKind::kSdpa, e.lin(),
                             models::SdpaShape{s.batch, m.heads, s.new_tokens, m.head_dim, !masked, 0, masked,
                                               gpt2_dropout(e)}),
                  names, masked ? std::nullopt : std::optional<Sem>(sem));
  }
  return o;
}

// The dense MLP: SwiGLU (gate, SiLU, up, mul, down) or GPT-2's fc, gelu_new, proj.
TensorUse mlp(StepEmitter& e, const std::string& label, const TensorUse& h, std::int64_t width,
              detail::LayerTape* tape = nullptr) {
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), d = m.d_model, n = T * width;
  const DType a = e.lin();  // the projections' output type
  const double dw = static_cast<double>(d * width);
  if (m.activation != Activation::kGelu && m.fused_gate_up) {
    // Phi3MLP: one gate_up_proj, then act(gate) * up on the two halves (strided views).
    const TensorUse wgu = e.weight(label + ".gate_up_proj", 2 * dw);
    const TensorUse gu = e.linear(label + ".gate_up_proj", T, 2 * width, d, m.mlp_bias, h, wgu);
    const EwFunc f = m.activation == Activation::kGeglu ? EwFunc::kGelu : EwFunc::kSilu;
    const TensorUse sg = e.pointwise(label + ".act", f, n, a, a, {gu}, true);
    const TensorUse p = e.pointwise(label + ".mul", EwFunc::kMul, n, a, a, {gu, sg}, true);
    const TensorUse wd = e.weight(label + ".down_proj", dw);
    if (tape) {
      tape->h2 = h;
      tape->gate_up = gu;
      tape->gate_act = sg;
      tape->prod = p;
      tape->wgu = wgu;
      tape->wd = wd;
    }
    return e.linear(label + ".down_proj", T, d, width, m.mlp_bias, p, wd);
  }
  if (m.activation != Activation::kGelu) {
    const TensorUse wg = e.weight(label + ".gate_proj", dw);
    const TensorUse g = e.linear(label + ".gate_proj", T, width, d, m.mlp_bias, h, wg);
    // Gemma's GeGLU: gelu with the tanh approximation on the gate.
    const EwFunc f = m.activation == Activation::kGeglu ? EwFunc::kGelu : EwFunc::kSilu;
    const TensorUse sg = e.pointwise(label + ".act", f, n, a, a, {g}, false);
    const TensorUse wu = e.weight(label + ".up_proj", dw);
    const TensorUse u = e.linear(label + ".up_proj", T, width, d, m.mlp_bias, h, wu);
    const TensorUse p = e.pointwise(label + ".mul", EwFunc::kMul, n, a, a, {sg, u}, false);
    const TensorUse wd = e.weight(label + ".down_proj", dw);
    if (tape) {
      tape->h2 = h;
      tape->gate = g;
      tape->gate_act = sg;
      tape->up = u;
      tape->prod = p;
      tape->wg = wg;
      tape->wu = wu;
      tape->wd = wd;
    }
    return e.linear(label + ".down_proj", T, d, width, m.mlp_bias, p, wd);
  }
  const TensorUse w_fc = e.weight(label + ".c_fc", dw);
  const TensorUse f = e.linear(label + ".c_fc", T, width, d, m.mlp_bias, h, w_fc);
  // NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
  const TensorUse half = e.pointwise(label + ".gelu.half", EwFunc::kMulScalar, n, a, a, {f}, false);
  const TensorUse cube = e.pointwise(label + ".gelu.pow", EwFunc::kPowScalar, n, a, a, {f}, false);
  const TensorUse c3 = e.pointwise(label + ".gelu.mul", EwFunc::kMulScalar, n, a, a, {cube}, false);
  const TensorUse inner = e.pointwise(label + ".gelu.add", EwFunc::kAdd, n, a, a, {f, c3}, false);
  const TensorUse sc = e.pointwise(label + ".gelu.scale", EwFunc::kMulScalar, n, a, a, {inner}, false);
  const TensorUse th = e.pointwise(label + ".gelu.tanh", EwFunc::kTanh, n, a, a, {sc}, false);
  const TensorUse one = e.pointwise(label + ".gelu.add_one", EwFunc::kAddScalar, n, a, a, {th}, false);
  const TensorUse act = e.pointwise(label + ".gelu.mul_out", EwFunc::kMul, n, a, a, {half, one}, false);
  const TensorUse w_proj = e.weight(label + ".c_proj", dw);
  if (tape) {
    tape->h2 = h;
    auto& g = tape->gpt2;
    g.w_fc = w_fc;
    g.w_mlp_proj = w_proj;
    g.fc = f;
    g.gelu_half = half;
    g.gelu_tanh = th;
    g.gelu_one = one;
    g.gelu_out = act;
  }
  return e.linear(label + ".c_proj", T, d, width, m.mlp_bias, act, w_proj);
}

// DeepseekV2Moe / DeepseekV3MoE's router: F.linear(hidden.float(), weight.float()), softmax or
// sigmoid scores, top-k (greedy; group-limited: the best groups first; noaux_tc: with the
// correction bias, groups ranked by their two best scores), optional renormalization, times
// routed_scaling_factor. Returns the top-k weights; `logits` gets the router's output.
TensorUse deepseek_router(StepEmitter& e, const std::string& label, const TensorUse& h, const TensorUse& w_router,
                          TensorUse& logits, detail::MoeTape* tape = nullptr) {
  const auto& cfg = *e.m().moe;
  const auto& hw = e.hw();
  const std::int64_t T = e.tokens(), d = e.m().d_model, E = cfg.experts, k = cfg.top_k, S = T * k;
  const std::int64_t G = std::max<std::int64_t>(1, cfg.groups);
  const TensorUse hf = e.cast(label + ".router.hidden_fp32", T * d, e.act(), kF32, h);
  const TensorUse wf = e.cast(label + ".router.weight_fp32", E * d, e.act(), kF32, w_router);
  logits = e.new_act(label + ".gate", static_cast<double>(T * E), kF32);
  e.b().emit_op(label + ".gate", models::Op(models::OpKind::kLinear, kF32, models::LinearShape{T, E, d, false}),
                {{"x", hf}, {"w", wf}, {"y", logits}});
  TensorUse scores;
  if (cfg.scoring == RouterScoring::kSigmoid) {
    scores = e.pointwise(label + ".router.sigmoid", EwFunc::kSilu, T * E, kF32, kF32, {logits}, false);
  } else {
    scores = e.new_act(label + ".router.softmax", static_cast<double>(T * E), kF32);
    e.emit(label + ".router.softmax", models::lower_softmax(T, E, kF32, logits.tensor, scores.tensor, hw, ""));
  }
  TensorUse choice = scores;
  if (cfg.topk_method == TopkMethod::kNoauxTc) {
    choice = e.pointwise(label + ".router.bias", EwFunc::kAdd, T * E, kF32, kF32, {scores}, true);
  }
  // (Run also with a single group, as transformers does.)
  if (cfg.topk_method != TopkMethod::kGreedy) {
    // Group scores (noaux_tc: the sum of each group's two best; else its best), the best
    // topk_group groups, and the other groups' experts masked out.
    const TensorUse gtop = e.new_bytes(label + ".router.group_topk", static_cast<double>(T * G * 2) * 12);
    if (cfg.topk_method == TopkMethod::kNoauxTc) {
      e.emit(label + ".router.group_topk", models::lower_topk(T * G, E / G, 2, choice, gtop, hw));
    }
    const TensorUse gs = e.new_act(label + ".router.group_scores", static_cast<double>(T * G), kF32);
    e.emit(label + ".router.group_scores",
           {models::lower_reduce(T * G, cfg.topk_method == TopkMethod::kNoauxTc ? 2 : E / G, kF32, kF32, true,
                                 "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float> >",
                                 cfg.topk_method == TopkMethod::kNoauxTc ? gtop : choice, gs, hw)});
    const TensorUse gidx = e.new_bytes(label + ".router.group_idx", static_cast<double>(T * cfg.topk_groups) * 12);
    e.emit(label + ".router.group_idx", {models::lower_topk(T, G, cfg.topk_groups, gs, gidx, hw).front()});
    TensorUse gm = e.pointwise(label + ".router.group_mask", EwFunc::kFill, T * G, kF32, kF32, {}, false);
    gm = e.pointwise(label + ".router.group_mask", EwFunc::kCopy, T * G, kF32, kF32, {gm, gidx}, false);
    gm = e.pointwise(label + ".router.score_mask", EwFunc::kCopy, T * E, kF32, kF32, {gm}, true);
    gm = e.pointwise(label + ".router.score_mask", EwFunc::kCast, T * E, kF32, kF32, {gm}, false);
    gm = e.pointwise(label + ".router.not", EwFunc::kNeg, T * E, DType::kFp8, DType::kFp8, {gm}, false);
    const TensorUse cl = e.new_act(label + ".router.masked", static_cast<double>(T * E), kF32);
    e.emit(label + ".router.masked", {models::detail::memcpy_launch(false, static_cast<double>(T * E) * 4, choice, cl, hw)});
    choice = e.pointwise(label + ".router.masked", EwFunc::kMaskedFill, T * E, kF32, kF32, {cl, gm}, false);
  }
  const TensorUse top = e.new_bytes(label + ".router.topk", static_cast<double>(S) * 12);
  if (tape) {
    tape->h_fp32 = hf;
    tape->w_router_fp32 = wf;
    tape->probs = scores;
    tape->top = top;
  }
  auto topk = models::lower_topk(T, E, k, choice, top, hw);
  if (cfg.topk_method == TopkMethod::kNoauxTc) topk.resize(1);  // sorted=False: no sort kernel
  e.emit(label + ".router.topk", std::move(topk));
  TensorUse weights = top;
  if (cfg.topk_method == TopkMethod::kNoauxTc) {
    weights = e.new_act(label + ".router.gather", static_cast<double>(S), kF32);
    e.emit(label + ".router.gather", {models::lower_index_scalars(S, false, scores, weights, hw)});
  }
  if (cfg.norm_topk_prob.value_or(false)) {
    const TensorUse sum = e.new_act(label + ".router.sum", static_cast<double>(T), kF32);
    e.emit(label + ".router.sum", {models::lower_reduce(T, k, kF32, kF32, true,
                                                        "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float> >",
                                                        weights, sum, hw)});
    const TensorUse se = e.pointwise(label + ".router.eps", EwFunc::kAddScalar, T, kF32, kF32, {sum}, false);
    weights = e.pointwise(label + ".router.div", EwFunc::kDiv, S, kF32, kF32, {weights, se}, true);
  }
  return e.pointwise(label + ".router.scale", EwFunc::kMulScalar, S, kF32, kF32, {weights}, false);
}

// The routed experts' output plus the shared experts' (one MLP of their summed width), if any.
TensorUse with_shared_experts(StepEmitter& e, const std::string& label, const TensorUse& h, const TensorUse& routed,
                              detail::MoeTape* tape = nullptr) {
  const auto& cfg = *e.m().moe;
  if (cfg.shared_experts == 0) return routed;
  detail::LayerTape st;
  const TensorUse shared = mlp(e, label + ".shared_experts", h, cfg.shared_experts * cfg.shared_expert_d_ff,
                               tape ? &st : nullptr);
  if (tape) {
    tape->sh_gate = st.gate;
    tape->sh_act = st.gate_act;
    tape->sh_up = st.up;
    tape->sh_prod = st.prod;
    tape->sh_wg = st.wg;
    tape->sh_wu = st.wu;
    tape->sh_wd = st.wd;
  }
  return e.pointwise(label + ".shared_add", EwFunc::kAdd, e.tokens() * e.m().d_model, e.act(), e.act(), {routed, shared}, false);
}

// DeepseekV2MoE.moe_infer of DeepSeek's remote code (run by transformers 4.46, as seed 003
// did): count tokens per expert (zeros, scatter, sum), argsort the token-expert pairs, gather
// the tokens, copy the counts to the host (the loop needs them), then one DeepseekV2MLP per
// expert that got tokens (gate_proj, SiLU, up_proj, mul, down_proj), cat the outputs, scatter
// them back in token order, weight them in fp32 and sum over the k slots.
TensorUse moe_loop(StepEmitter& e, const std::string& label, const TensorUse& h,
                   const std::vector<double>& expert_weights) {
  const auto& m = e.m();
  const auto& cfg = *m.moe;
  const std::int64_t T = e.tokens(), d = m.d_model, E = cfg.experts, k = cfg.top_k;
  const std::int64_t S = T * k, F = cfg.expert_d_ff;
  const DType a = e.act();
  const auto& hw = e.hw();
  const TensorUse w_router = e.weight(label + ".gate", static_cast<double>(E * d));
  TensorUse logits;
  const TensorUse weights = deepseek_router(e, label, h, w_router, logits);
  const TensorUse cnts = e.pointwise(label + ".moe_infer.cnts", EwFunc::kFill, T * E, kF32, kF32, {}, false);
  e.emit(label + ".moe_infer.scatter", {models::lower_index_scalars(S, true, weights, cnts, hw)});
  const TensorUse per_expert = e.new_bytes(label + ".moe_infer.tokens_per_expert", static_cast<double>(E) * 8);
  e.emit(label + ".moe_infer.count", {models::lower_reduce(E, T, kF32, kF32, false,
                                                          "at::native::func_wrapper_t<long, at::native::sum_functor<long, long, long> >",
                                                          cnts, per_expert, hw)});
  const TensorUse idxs = e.new_bytes(label + ".moe_infer.idxs", static_cast<double>(S) * 8);
  e.emit(label + ".moe_infer.argsort", models::lower_sort(S, idxs, hw));
  e.pointwise(label + ".moe_infer.token_index", EwFunc::kFloorDivide, S, kF32, kF32, {idxs}, false);
  const TensorUse sorted = e.new_act(label + ".moe_infer.sorted_tokens", static_cast<double>(S * d));
  e.emit(label + ".moe_infer.gather", {models::lower_row_gather(S, static_cast<double>(d) * e.act_bytes(), h, sorted, hw)});
  const TensorUse host_counts = e.new_bytes(label + ".moe_infer.host_counts", static_cast<double>(E) * 8);
  e.emit(label + ".moe_infer.to_host", {models::detail::memcpy_launch(true, static_cast<double>(E) * 8, per_expert, host_counts, hw)});
  e.b().mark_host_sync();  // tokens_per_expert.cpu().numpy(): the loop runs on the host's copy
  std::vector<TensorUse> outs;
  std::vector<std::int64_t> out_elems;
  const auto rows = expert_rows(T, k, E, expert_weights);
  for (std::int64_t x = 0; x < E; ++x) {
    const std::int64_t r = rows[static_cast<std::size_t>(x)];
    if (r == 0) continue;
    const std::string X = label + ".experts[" + std::to_string(x) + "]";
    const TensorUse g = e.linear(X + ".gate_proj", r, F, d, false, sorted, e.weight(X + ".gate_proj", static_cast<double>(F * d)));
    const TensorUse act = e.pointwise(X + ".act", EwFunc::kSilu, r * F, a, a, {g}, false);
    const TensorUse u = e.linear(X + ".up_proj", r, F, d, false, sorted, e.weight(X + ".up_proj", static_cast<double>(F * d)));
    const TensorUse p = e.pointwise(X + ".mul", EwFunc::kMul, r * F, a, a, {act, u}, false);
    outs.push_back(e.linear(X + ".down_proj", r, d, F, false, p, e.weight(X + ".down_proj", static_cast<double>(d * F))));
    out_elems.push_back(r * d);
  }
  const TensorUse cat = e.new_act(label + ".moe_infer.cat", static_cast<double>(S * d));
  e.emit(label + ".moe_infer.cat", {models::lower_cat(out_elems, a, true, outs, cat, hw)});
  const TensorUse back = e.new_act(label + ".moe_infer.unsort", static_cast<double>(S * d));
  e.emit(label + ".moe_infer.unsort", {models::lower_row_gather(S, static_cast<double>(d) * e.act_bytes(), cat, back, hw)});
  const TensorUse bf = e.cast(label + ".moe_infer.to_fp32", S * d, a, kF32, back);
  const TensorUse weighted = e.pointwise(label + ".moe_infer.weight", EwFunc::kMul, S * d, kF32, kF32, {bf, weights}, true);
  const TensorUse summed = e.new_act(label + ".moe_infer.sum", static_cast<double>(T * d), kF32);
  e.emit(label + ".moe_infer.sum", {models::lower_reduce(T * d, k, kF32, kF32, false,
                                                         "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float> >",
                                                         weighted, summed, hw)});
  return with_shared_experts(e, label, h, e.cast(label + ".moe_infer.to_act", T * d, kF32, a, summed));
}

// MixtralSparseMoeBlock / DeepseekV2Moe with transformers' grouped_mm experts path. With a
// `tape` (a training step), as hf_train3_h100.json.gz shows it under autograd: the top-k values
// are normalized in place (a clone first), and Qwen3-MoE's router casts its weights to the
// hidden states' type, so the experts' weighting, the scatter back and the sum over the k slots
// stay in it; the tape gets what the backward reads.
TensorUse moe(StepEmitter& e, const std::string& label, const TensorUse& h,
              const std::vector<double>& expert_weights, detail::MoeTape* tape = nullptr) {
  if (e.workload().moe == MoePath::kLoop) return moe_loop(e, label, h, expert_weights);
  const auto& m = e.m();
  const auto& cfg = *m.moe;
  const std::int64_t T = e.tokens(), d = m.d_model, E = cfg.experts, k = cfg.top_k;
  const std::int64_t S = T * k, F = cfg.expert_d_ff;
  const DType a = e.act();
  const auto& hw = e.hw();
  const TensorUse w_gate_up = e.weight(label + ".experts.gate_up_proj", static_cast<double>(E * 2 * F * d));
  const TensorUse w_down = e.weight(label + ".experts.down_proj", static_cast<double>(E * F * d));
  const TensorUse w_router = e.weight(label + ".gate", static_cast<double>(E * d));
  TensorUse logits, weights, top;
  if (!cfg.router_fp32) {
    // Router: logits in the model dtype, then fp32: softmax, top-k, optional renormalization.
    logits = e.linear(label + ".gate", T, E, d, false, h, w_router);
    const TensorUse lf = e.cast(label + ".router.to_fp32", T * E, a, kF32, logits);
    const TensorUse probs = e.new_act(label + ".router.softmax", static_cast<double>(T * E), kF32);
    e.emit(label + ".router.softmax", models::lower_softmax(T, E, kF32, lf.tensor, probs.tensor, hw, ""));
    top = e.new_bytes(label + ".router.topk", static_cast<double>(S) * 12);
    e.emit(label + ".router.topk", models::lower_topk(T, E, k, probs, top, hw));
    weights = top;
    if (cfg.norm_topk_prob.value_or(false)) {
      const TensorUse sum = e.new_act(label + ".router.sum", static_cast<double>(T), kF32);
      e.emit(label + ".router.sum", {models::lower_reduce(T, k, kF32, kF32, true,
                                                          "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float> >",
                                                          top, sum, hw)});
      if (tape) {
        // router_top_value /= sum: autograd keeps the top-k output, the division runs on a clone.
        e.emit(label + ".router.clone", {models::detail::memcpy_launch(false, static_cast<double>(S) * 4, top, top, hw)});
        tape->sum = sum;
      }
      weights = e.pointwise(label + ".router.div", EwFunc::kDiv, S, kF32, kF32, {top, sum}, true);
    }
    if (tape) {
      tape->probs = probs;
      tape->top = top;
      tape->weights_cast = cfg.weights_in_dtype;
      if (cfg.weights_in_dtype) weights = e.cast(label + ".router.to_act", S, kF32, a, weights);
    }
  } else {
    weights = top = deepseek_router(e, label, h, w_router, logits, tape);
  }
  // grouped_mm_experts_forward: sort the (token, expert) pairs by expert, gather the tokens,
  // count tokens per expert (histc, cumsum), two grouped GEMMs around the gated activation,
  // weight, scatter back and sum over the k slots.
  const auto pair_bytes = static_cast<double>(S) * 8;
  const TensorUse ids = e.new_bytes(label + ".experts.ids", pair_bytes);
  e.emit(label + ".experts.sort_setup", {models::detail::memcpy_launch(false, pair_bytes, top, ids, hw),
                                         models::lower_arange(S, ids, hw),
                                         models::detail::memcpy_launch(false, pair_bytes, ids, ids, hw),
                                         models::detail::memcpy_launch(false, pair_bytes, ids, ids, hw)});
  e.emit(label + ".experts.sort", models::lower_sort(S, ids, hw));
  e.pointwise(label + ".experts.token_index", EwFunc::kFloorDivide, S, kF32, kF32, {ids}, false);
  const TensorUse xg = e.new_act(label + ".experts.gathered", static_cast<double>(S * d));
  e.emit(label + ".experts.gather", {models::lower_row_gather(S, static_cast<double>(d) * e.act_bytes(), h, xg, hw)});
  const bool wcast = tape && tape->weights_cast;
  const DType wt = wcast ? a : kF32;  // the routing weights' type, and the weighting's
  const TensorUse wg = e.new_act(label + ".experts.weights", static_cast<double>(S), wt);
  e.emit(label + ".experts.weight_gather", {models::lower_index_scalars(S, false, weights, wg, hw)});
  const TensorUse ids32 = e.pointwise(label + ".experts.ids_int", EwFunc::kCast, S, DType::kBf16, kF32, {ids}, false);
  const TensorUse counts = e.pointwise(label + ".experts.histc_zero", EwFunc::kFill, E, kF32, kF32, {}, false);
  e.emit(label + ".experts.histc", {models::lower_histogram(S, E, ids32, counts, hw)});
  const TensorUse offsets = e.new_act(label + ".experts.offsets", static_cast<double>(E), kF32);
  e.emit(label + ".experts.cumsum", models::lower_cumsum(E, counts, offsets, hw));
  e.pointwise(label + ".experts.sentinel", EwFunc::kCompareScalar, S, kF32, kF32, {ids}, false);
  e.pointwise(label + ".experts.clamp", EwFunc::kClamp, S, kF32, kF32, {ids}, false);
  const TensorUse xm = e.pointwise(label + ".experts.pre_mask", EwFunc::kMaskedFill, S * d, a, a, {xg}, true);
  const auto rows = expert_rows(T, k, E, expert_weights);
  const TensorUse up = e.new_act(label + ".experts.gate_up", static_cast<double>(S * 2 * F));
  e.emit(label + ".experts.gate_up_proj",
         models::lower_grouped_gemm(rows, 2 * F, d, e.math(), xm, w_gate_up, up, hw));
  const double up_bytes = static_cast<double>(S * 2 * F) * e.act_bytes();
  const TensorUse upc = e.new_act(label + ".experts.gate_up_clone", static_cast<double>(S * 2 * F));
  e.emit(label + ".experts.post_mask", {models::detail::memcpy_launch(false, up_bytes, up, upc, hw)});
  const TensorUse upm = e.pointwise(label + ".experts.post_mask", EwFunc::kMaskedFill, S * 2 * F, a, a, {upc}, true);
  const TensorUse act = e.pointwise(label + ".experts.act", EwFunc::kSilu, S * F, a, a, {upm}, true);
  const TensorUse gated = e.pointwise(label + ".experts.mul", EwFunc::kMul, S * F, a, a, {act, upm}, true);
  const TensorUse down = e.new_act(label + ".experts.down", static_cast<double>(S * d));
  e.emit(label + ".experts.down_proj",
         models::lower_grouped_gemm(rows, d, F, e.math(), gated, w_down, down, hw));
  const TensorUse dc = e.new_act(label + ".experts.down_clone", static_cast<double>(S * d));
  e.emit(label + ".experts.down_mask", {models::detail::memcpy_launch(false, static_cast<double>(S * d) * e.act_bytes(), down, dc, hw)});
  const TensorUse dm = e.pointwise(label + ".experts.down_mask", EwFunc::kMaskedFill, S * d, a, a, {dc}, true);
  // proj_out * weights[:, None] promotes to fp32 (unless the weights were cast to a).
  const TensorUse weighted = e.pointwise(label + ".experts.weighted", EwFunc::kMul, S * d, a, wt, {dm, wg}, true);
  const TensorUse order = e.new_bytes(label + ".experts.order", static_cast<double>(S) * 8);
  e.emit(label + ".experts.unsort", {models::lower_arange(S, order, hw), models::lower_index_scalars(S, true, ids, order, hw)});
  const TensorUse back = e.new_act(label + ".experts.restored", static_cast<double>(S * d), wt);
  e.emit(label + ".experts.restore", {models::lower_row_gather(S, static_cast<double>(d) * hw::bytes_per_element(wt), weighted, back, hw)});
  const TensorUse summed = e.new_act(label + ".experts.sum", static_cast<double>(T * d), wt);
  e.emit(label + ".experts.sum", {models::lower_reduce(T * d, k, wt, wt, false,
                                                       fmt::format("at::native::func_wrapper_t<{0}, at::native::sum_functor<{0}, float, {0}> >",
                                                                   models::detail::aten_type_name(wt)),
                                                       back, summed, hw)},
         // The routed experts as one function of the block's input and router logits (its
         // kernels sort, gather and scatter rows): see the interpreter's "moe_experts".
         Sem{"moe_experts", {h.tensor, logits.tensor, w_gate_up.tensor, w_down.tensor}, summed.tensor,
             {T, d, E, k, F}, cfg.norm_topk_prob.value_or(false) ? 1.0 : 0.0});
  if (tape) {
    tape->h = h;
    tape->w_router = w_router;
    tape->w_gate_up = w_gate_up;
    tape->w_down = w_down;
    tape->ids = ids;
    tape->order = order;
    tape->wg = wg;
    tape->xm = xm;
    tape->upm = upm;
    tape->act = act;
    tape->gated = gated;
    tape->dm = dm;
    tape->rows = rows;
  }
  return with_shared_experts(e, label, h, e.cast(label + ".experts.to_act", T * d, wt, a, summed), tape);
}

// What a layer's attention sees of the cache: the tokens it holds before this step, whether a
// windowed layer's window is full (it then holds a strided view), the keys attended and whether
// the window mask is materialized.
struct LayerKeys {
  std::int64_t past = 0;
  bool window_full = false;
  std::int64_t keys = 0;
  bool masked = false;
};
LayerKeys layer_keys(const ModelConfig& m, const StepShape& s, std::int64_t i) {
  LayerKeys k{s.past_tokens, false, s.past_tokens + s.new_tokens, false};
  if (!m.sliding_layer(i)) return k;
  const std::int64_t w = *m.sliding_window;
  k.past = std::min(s.past_tokens, w - 1);
  k.window_full = s.past_tokens >= w - 1 && s.past_tokens > 0;
  k.keys = k.past + s.new_tokens;
  k.masked = s.past_tokens + s.new_tokens > w;
  return k;
}

// Whether any layer attends within a window that this step exceeds (the mask is then built).
bool window_mask_built(const ModelConfig& m, const StepShape& s) {
  for (std::int64_t i = 0; i < m.layers; ++i) {
    if (layer_keys(m, s, i).masked) return true;
  }
  return false;
}

// create_sliding_window_causal_mask when the window matters: positions and cache indices
// (arange, add, index), then the boolean mask over [B, q, kv] (gt, and, le, and, and).
TensorUse window_mask(StepEmitter& e) {
  const auto& s = e.s();
  const std::int64_t w = *e.m().sliding_window;
  const std::int64_t kv = s.past_tokens > 0 ? std::min(s.past_tokens, w - 1) + s.new_tokens : s.new_tokens;
  const std::int64_t n = s.batch * s.new_tokens * kv;
  const TensorUse m2 = e.b().state("attention_mask", static_cast<double>(s.batch * (s.past_tokens + s.new_tokens)) * 8);
  TensorUse t = e.pointwise("window_mask.copy", EwFunc::kCast, s.batch * (s.past_tokens + s.new_tokens), DType::kBf16, kF32, {m2}, false);
  for (int i = 0; i < 4; ++i) {
    const TensorUse r = e.new_bytes("window_mask.arange", static_cast<double>(kv) * 8);
    e.emit("window_mask.arange", {models::lower_arange(i == 3 ? kv : 1, r, e.hw())});
    t = e.pointwise("window_mask.add", EwFunc::kAddScalar, 1, kF32, kF32, {r}, false);
  }
  e.pointwise("window_mask.fill", EwFunc::kFill, 1, kF32, kF32, {}, false);
  e.pointwise("window_mask.fill", EwFunc::kFill, 1, kF32, kF32, {}, false);
  e.pointwise("window_mask.sub", EwFunc::kAddScalar, 1, kF32, kF32, {t}, false);
  // Booleans: one byte an element.
  const DType b8 = DType::kFp8;
  TensorUse b = e.pointwise("window_mask.gt", EwFunc::kCompareScalar, n, b8, b8, {t}, true);
  b = e.pointwise("window_mask.and", EwFunc::kMul, n, b8, b8, {b}, true);
  b = e.pointwise("window_mask.le", EwFunc::kCompareScalar, n, b8, b8, {b}, true);
  b = e.pointwise("window_mask.and", EwFunc::kMul, n, b8, b8, {b}, false);
  b = e.pointwise("window_mask.and", EwFunc::kMul, n, b8, b8, {b}, true);
  const TensorUse idx = e.new_bytes("window_mask.index", static_cast<double>(s.batch * kv));
  e.emit("window_mask.index", {models::lower_index_scalars(s.batch * kv, false, b, idx, e.hw())});
  return e.pointwise("window_mask.and", EwFunc::kMul, n, b8, b8, {b, idx}, true);
}

// The residual stream plus a branch's output; under autocast an fp32 stream plus a bf16 branch,
// promoted (the unrolled casting kernel).
TensorUse residual_add(StepEmitter& e, const std::string& label, const TensorUse& x, const TensorUse& branch) {
  const std::int64_t n = e.tokens() * e.m().d_model;
  if (e.amp() && e.dtype_of(branch) != e.dtype_of(x)) return e.promoted(label, EwFunc::kAdd, n, {x, branch}, e.act(), false);
  return e.pointwise(label, EwFunc::kAdd, n, e.act(), e.act(), {x, branch}, false);
}

void layer(StepEmitter& e, int i, TensorUse& x, const std::pair<TensorUse, TensorUse>& rot,
           const std::pair<TensorUse, TensorUse>& rot_local, const std::optional<TensorUse>& window,
           const std::vector<double>& expert_weights, detail::LayerTape* tape) {
  const auto& m = e.m();
  const std::string L = fmt::format("layers[{}]", i);
  const std::int64_t T = e.tokens(), d = m.d_model, q_dim = m.heads * m.head_dim, kv_dim = m.kv_heads * m.head_dim;
  const DType a = e.lin();
  if (tape) tape->x_in = x;
  const TensorUse h = norm(e, L + ".input_norm", x, tape ? &tape->input_norm : nullptr);
  TensorUse proj;
  if (m.mla) {
    proj = detail::mla_attention(e, L + ".attn", h, rot, tape ? &tape->mla : nullptr);
  } else {
    TensorUse q, k, v;
    bool dense_k = true, dense_v = true;
    if (is_gpt2_style(m)) {
      // Conv1D c_attn: one addmm, then q, k, v are strided views of its output.
      const TensorUse w_attn = e.weight(L + ".attn.c_attn", static_cast<double>(d * (q_dim + 2 * kv_dim)));
      const TensorUse qkv = e.linear(L + ".attn.c_attn", T, q_dim + 2 * kv_dim, d, m.qkv_bias, h, w_attn);
      q = k = v = qkv;
      dense_k = dense_v = false;
      if (tape) {
        tape->h = h;
        tape->v = qkv;
        tape->gpt2.w_attn = w_attn;
      }
    } else if (m.fused_qkv) {
      // Phi3Attention: one qkv_proj; q, k, v are slices of it (k is rotated into a new tensor).
      const TensorUse wqkv = e.weight(L + ".attn.qkv_proj", static_cast<double>(d * (q_dim + 2 * kv_dim)));
      const TensorUse qkv = e.linear(L + ".attn.qkv_proj", T, q_dim + 2 * kv_dim, d, m.qkv_bias, h, wqkv);
      q = k = v = qkv;
      dense_v = false;
      if (tape) {
        tape->h = h;
        tape->qkv = tape->q = tape->k = tape->v = qkv;
        tape->wqkv = wqkv;
      }
    } else {
      const TensorUse wq = e.weight(L + ".attn.q_proj", static_cast<double>(d * q_dim));
      q = e.linear(L + ".attn.q_proj", T, q_dim, d, m.qkv_bias, h, wq);
      if (tape) tape->q = q;
      if (m.qk_norm) q = rms_norm_rows(e, L + ".attn.q_norm", q, T * m.heads, m.head_dim, false, tape ? &tape->q_norm : nullptr);
      const TensorUse wk = e.weight(L + ".attn.k_proj", static_cast<double>(d * kv_dim));
      k = e.linear(L + ".attn.k_proj", T, kv_dim, d, m.qkv_bias, h, wk);
      if (tape) tape->k = k;
      if (m.qk_norm) k = rms_norm_rows(e, L + ".attn.k_norm", k, T * m.kv_heads, m.head_dim, false, tape ? &tape->k_norm : nullptr);
      const TensorUse wv = e.weight(L + ".attn.v_proj", static_cast<double>(d * kv_dim));
      v = e.linear(L + ".attn.v_proj", T, kv_dim, d, m.qkv_bias, h, wv);
      if (tape) {
        tape->h = h;
        tape->v = v;
        tape->wq = wq;
        tape->wk = wk;
        tape->wv = wv;
      }
    }
    const bool local = m.sliding_layer(i) && m.rope_local_theta;
    if (tape) tape->local = local;
    const auto& table = local ? rot_local : rot;
    if (m.positions == Positions::kRope) {
      q = rope(e, L + ".attn.rope_q", q, m.heads, table.first, table.second);
      k = rope(e, L + ".attn.rope_k", k, m.kv_heads, table.first, table.second);
    }
    if (tape) {
      tape->q_rot = q;
      tape->k_rot = k;
    }
    if (e.packed()) {
      // Continuous batching's packed batch: the paged cache and one masked SDPA.
      const TensorUse att = detail::paged_sdpa(e, L + ".attn", q, k, v);
      const TensorUse wo = e.weight(L + ".attn.o_proj", static_cast<double>(q_dim * d));
      proj = e.linear(L + ".attn.o_proj", T, d, q_dim, m.attn_out_bias, att, wo);
    } else {
      const LayerKeys keys = layer_keys(m, e.s(), i);
      if (m.sliding_layer(i) && e.s().past_tokens == 0) {
        // DynamicSlidingWindowLayer's first update moves its window size to the device.
        const TensorUse sw = e.b().state(L + ".attn.window_size", 8);
        e.emit(L + ".attn.window_size", {models::detail::memcpy_launch(false, 8, sw, sw, e.hw())});
      }
      // Several tokens of one projection's heads are strided in [B, H, S, D] order (unless one KV
      // head): a rotated k is the RoPE sum in the projection's layout, except Phi-3's (its pass cat
      // writes a new tensor).
      if (e.s().new_tokens > 1 && m.kv_heads > 1) {
        dense_k = dense_k && m.fused_qkv;
        dense_v = false;
      }
      // Gradient checkpointing turns the cache off (use_cache=False): attention reads k and v.
      const bool no_cache = e.workload().phase == Phase::kTrain && e.workload().checkpointing == Checkpointing::kFull;
      const TensorUse kc = no_cache ? k : cache_append(e, L + ".attn", "k", k, dense_k, keys.past, keys.window_full);
      const TensorUse vc = no_cache ? v : cache_append(e, L + ".attn", "v", v, dense_v, keys.past, keys.window_full);
      if (tape) tape->gpt2.cached = !no_cache;
      // sdpa with dropout_p > 0 (GPT-2 in training): cuDNN's Philox seed and offset unpacked first.
      if (gpt2_dropout(e)) e.emit(L + ".attn.philox_unpack", {models::lower_philox_unpack(e.b().state("philox_seed", 16), e.hw())});
      // An fp32 training step runs SDPA's math backend as PyTorch composes it (hf_sdpa_math.cpp).
      // Otherwise fp32 SDPA is charged as written-out attention (its fused kernels are not modeled).
      const bool math = detail::uses_sdpa_math(e);
      const bool naive = !math && (e.workload().attention == Attention::kNaive || e.lin() == DType::kFp32);
      TensorUse qa = q, ka = kc, va = vc;
      if (e.amp()) {
        // Autocast casts sdpa's fp32 operands (the rotated q and k, the promoted v cache).
        ka = e.cast(L + ".attn.k_cast", T * kv_dim, e.dtype_of(kc), e.lin(), kc);
        va = e.cast(L + ".attn.v_cast", T * kv_dim, e.dtype_of(vc), e.lin(), vc);
        qa = e.cast(L + ".attn.q_cast", T * q_dim, e.dtype_of(q), e.lin(), q);
        if (tape) {
          tape->q_sdpa = qa;
          tape->k_sdpa = ka;
          tape->v_sdpa = va;
        }
      }
      const TensorUse att = math    ? detail::sdpa_math(e, L + ".attn", q, kc, vc, tape ? &tape->math : nullptr)
                            : naive ? naive_attention(e, L + ".attn", q, kc, vc)
                            : e.workload().attention == Attention::kFlash2
                                ? flash_attention_2(e, L + ".attn", q, kc, vc, keys.keys)
                                : attention_core(e, L + ".attn", qa, ka, va, keys.keys,
                                                 keys.masked ? window : std::optional<TensorUse>());
      TensorUse out = att;
      if (m.fused_qkv && e.s().past_tokens == 0 && !naive && !math) {
        // Phi-3's q is a slice of qkv: sdpa's output keeps its strides and the transpose back is a copy.
        out = e.pointwise(L + ".attn.out_contiguous", EwFunc::kCopy, T * q_dim, a, a, {att}, true);
      }
      const TensorUse wo = e.weight(L + ".attn.o_proj", static_cast<double>(q_dim * d));
      proj = e.linear(L + (is_gpt2_style(m) ? ".attn.c_proj" : ".attn.o_proj"), T, d, q_dim, m.attn_out_bias, out, wo);
      if (gpt2_dropout(e)) proj = dropout(e, L + ".attn.resid_dropout", proj, T * d, tape ? &tape->gpt2.attn_drop_mask : nullptr);
      if (tape) {
        tape->attn = att;
        tape->attn_out = out;
        tape->wo = wo;
      }
    }
  }
  // Row-parallel o_proj: each GPU holds a partial sum of the projection (Megatron's all-reduce).
  proj = e.tp_all_reduce(L + ".attn.allreduce", proj, T * d);
  if (m.sandwich_norms) proj = norm(e, L + ".post_attention_norm", proj, tape ? &tape->attn_out_norm : nullptr);
  x = residual_add(e, L + ".residual_attn", x, proj);
  if (tape) tape->x_mid = x;
  const TensorUse h2 = norm(e, L + (m.sandwich_norms ? ".pre_feedforward_norm" : ".post_attention_norm"), x,
                            tape ? &tape->post_norm : nullptr);
  if (tape) tape->sparse = m.moe_layer(i);
  TensorUse f;
  if (m.moe_layer(i)) {
    // Expert parallelism over a data-parallel group: the routed rows go to their experts' GPUs
    // and come back (the routed pairs of T tokens, top_k each, d wide).
    const std::int64_t routed = T * m.moe->top_k * d;
    const TensorUse dispatched = e.expert_all_to_all(L + ".moe.dispatch", h2, routed);
    f = moe(e, L + ".moe", dispatched, expert_weights, tape ? &tape->moe : nullptr);
    f = e.expert_all_to_all(L + ".moe.combine", f, routed);
  } else {
    f = mlp(e, L + ".mlp", h2, m.d_ff, tape);
  }
  f = e.tp_all_reduce(L + ".mlp.allreduce", f, T * d);
  if (gpt2_dropout(e)) f = dropout(e, L + ".mlp.dropout", f, T * d, tape ? &tape->gpt2.mlp_drop_mask : nullptr);
  if (m.sandwich_norms) f = norm(e, L + ".post_feedforward_norm", f, tape ? &tape->mlp_out_norm : nullptr);
  x = residual_add(e, L + ".residual_mlp", x, f);
}

// The token embedding (and GPT-2's positions) of a forward: the residual stream's start.
TensorUse embed(StepEmitter& e, const TensorUse& ids, const TensorUse& table, detail::ForwardTape* tape) {
  const ModelWorkload& w = e.workload();
  const StepShape& s = e.s();
  const auto& m = w.model;
  const std::int64_t T = e.tokens(), d = m.d_model;
  TensorUse x = e.new_act("embed_tokens", static_cast<double>(T * d));
  e.emit("embed_tokens", {models::lower_embedding_lookup(T, d, e.act(), table, x, e.hw())},
         KernelSemantics{"embedding", {ids.tensor, table.tensor}, x.tensor, {s.batch, s.new_tokens, s.past_tokens, d, m.vocab}});
  // A vocabulary-parallel embedding: each GPU looks up the ids in its rows, zeros the rest, and
  // the group sums them.
  x = e.tp_all_reduce("embed_tokens.allreduce", x, T * d);
  if (m.embed_scale) {
    // Gemma: hidden * normalizer, a 0-dim tensor (the broadcasting kernel).
    x = e.pointwise("embed_scale", EwFunc::kMul, T * d, e.act(), e.act(), {x}, true);
  }
  if (is_gpt2_style(m) && w.phase == Phase::kTrain) {
    // GPT2Model in training: position_ids from cache_position (arange, + past length), wpe
    // gathered for one sequence and broadcast over the batch, then drop(...).
    const TensorUse wpe = e.weight("embed_positions", static_cast<double>(*m.max_positions * d));
    const TensorUse posr = e.new_bytes("positions", static_cast<double>(s.new_tokens) * 8);
    e.emit("positions.arange", {models::lower_arange(s.new_tokens, posr, e.hw())});
    const TensorUse pos_ids = e.pointwise("positions.add", EwFunc::kAddScalar, s.new_tokens, kF32, kF32, {posr}, false);
    const TensorUse pos = e.new_act("embed_positions", static_cast<double>(s.new_tokens * d));
    e.emit("embed_positions", {models::lower_embedding_lookup(s.new_tokens, d, e.act(), wpe, pos, e.hw())});
    x = e.pointwise("embed_add", EwFunc::kAdd, T * d, e.act(), e.act(), {x, pos}, true);
    x = dropout(e, "embed_dropout", x, T * d, tape ? &tape->embed_drop_mask : nullptr);
    if (tape) {
      tape->positions = pos_ids;
      tape->wpe = wpe;
    }
  } else if (is_gpt2_style(m)) {
    const TensorUse wpe = e.weight("embed_positions", static_cast<double>(*m.max_positions * d));
    const TensorUse pos = e.new_act("embed_positions", static_cast<double>(T * d));
    e.emit("embed_positions", {models::lower_embedding_lookup(T, d, e.act(), wpe, pos, e.hw())});
    x = e.pointwise("embed_add", EwFunc::kAdd, T * d, e.act(), e.act(), {x, pos}, false);
  }
  return x;
}

}  // namespace

void lower_hf_eager_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  if (!s.ragged()) {
    detail::lower_hf_eager_forward(w, s, b, nullptr);
    return;
  }
  // A serving step (gpusim serve): transformers' continuous batching packs every scheduled
  // token into one sequence that attends the keys of all its sequences through one mask.
  if (w.serving.attention != ModelWorkload::ServingKernels::Attention::kPagedSdpa) {
    throw ModelError("hf-eager serving steps run transformers' continuous batching: attention paged-sdpa");
  }
  if (w.model.mla || w.model.sliding_window || w.model.moe) {
    throw ModelError("transformers' continuous batching is modeled for dense models with full attention only");
  }
  std::int64_t keys = s.pad_keys;
  for (const SeqSlice& q : s.seqs) keys += q.past_tokens + q.new_tokens;
  const std::int64_t T = s.tokens();
  keys += s.pad_tokens;
  detail::StepEmitter e(w, StepShape(1, T, keys - T), b);
  e.set_packed({s, keys});
  detail::lower_hf_eager_forward(e, nullptr);
}

void detail::lower_hf_eager_forward(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b, ForwardTape* tape) {
  StepEmitter e(w, s, b);
  lower_hf_eager_forward(e, tape);
}

void detail::lower_hf_eager_forward(StepEmitter& e, ForwardTape* tape) {
  const ModelWorkload& w = e.workload();
  const StepShape& s = e.s();
  ProgramBuilder& b = e.b();
  const auto& m = w.model;
  e.begin_autocast();
  const std::int64_t T = e.tokens(), d = m.d_model;
  const TensorUse ids = b.state("input_ids", static_cast<double>(T) * 8);
  const TensorUse table = e.weight("embed_tokens", static_cast<double>(m.vocab * d));
  if (tape) {
    tape->ids = ids;
    tape->embed_table = table;
  }
  // A pipeline's later stages receive the hidden states instead.
  TensorUse x = w.first_stage() ? embed(e, ids, table, tape) : e.pp_receive("pp.receive", T * d);
  // create_causal_mask for full-attention layers and create_sliding_window_causal_mask for
  // windowed ones each check the 2-D mask; the windowed one builds its mask instead when the
  // window is exceeded.
  bool any_full = false, any_window = false;
  for (std::int64_t i = 0; i < m.layers; ++i) (m.sliding_layer(i) ? any_window : any_full) = true;
  const bool built = window_mask_built(m, s);
  // A training step passes no attention mask: nothing to check. Continuous batching passes its
  // own, prepared before the forward.
  if (e.packed()) {
    // The engine's Python launches these while it prepares the batch (its host time per request,
    // serve's request_overhead); the model's forward follows.
    b.begin_phase("engine_prepare");
    detail::paged_batch_prep(e);
    b.begin_phase("forward");
  } else if (any_full && !tape) {
    mask_check(e);
  }
  if (any_window && !built && !tape && !e.packed()) mask_check(e);
  std::optional<TensorUse> window;
  if (built) window = window_mask(e);
  std::pair<TensorUse, TensorUse> rot, rot_local;
  if (m.mla && !m.mla->rope_interleave) {
    rot = detail::mla_rotary_table(e);
  } else if (m.positions == Positions::kRope) {
    rot = rotary_table(e);
    if (m.rope_local_theta && any_window) rot_local = rotary_table(e, "rotary_local", *m.rope_local_theta);
  }
  if (tape) {
    tape->cos = rot.first;
    tape->sin = rot.second;
    tape->cos_local = rot_local.first;
    tape->sin_local = rot_local.second;
  }
  // torch.utils.checkpoint runs a checkpointed layer's forward without saving its activations.
  const bool checkpointed = tape && w.checkpointing == Checkpointing::kFull;
  for (int i = 0; i < static_cast<int>(b.layers_to_lower(m.layers)); ++i) {
    b.begin_layer();
    detail::LayerTape* lt = nullptr;
    if (checkpointed) tape->layer_inputs.push_back(x);
    else if (tape) lt = &tape->layers.emplace_back();
    layer(e, i, x, rot, rot_local, window, w.expert_weights_for(i), lt);
  }
  b.end_layers();
  if (!w.last_stage()) {
    e.pp_send("pp.send", x, T * d);
    if (tape) tape->hidden = x;
    return;
  }
  const TensorUse h = norm(e, "final_norm", x, tape ? &tape->final_norm : nullptr);
  // logits_to_keep=1: the head runs on each sequence's last position only (generate); a
  // training step's loss needs every position.
  const TensorUse head = m.tied_embeddings ? table : e.weight("lm_head", static_cast<double>(m.vocab * d));
  const std::int64_t rows = tape ? T : e.packed() ? e.packed()->ragged.sampled() : s.batch;
  TensorUse logits = e.linear("lm_head", rows, m.vocab, d, false, h, head);
  // A vocabulary-parallel lm_head: every GPU's slice of the logits gathered (a training step's
  // loss is vocabulary-parallel instead: hf_train_lowering.cpp).
  if (!tape) logits = e.tp_all_gather("lm_head.allgather", logits, rows * m.vocab);
  if (e.packed()) {
    // The model runner's logits.float() and greedy argmax over the sampled rows.
    const TensorUse lf = e.cast("logits_float", rows * m.vocab, e.act(), kF32, logits);
    const TensorUse next = e.new_bytes("next_tokens", static_cast<double>(rows) * 8);
    e.emit("argmax", {models::lower_reduce(rows, m.vocab, kF32, kF32, true,
                                           "at::native::ArgMaxOps<float>", lf, next, e.hw())});
  }
  if (tape) {
    tape->hidden = h;
    tape->head = head;
    tape->logits = logits;
  }
  if (m.final_softcap) {
    // Gemma 2: logits / cap, tanh, * cap.
    const std::int64_t n = s.batch * m.vocab;
    logits = e.pointwise("final_softcap.div", EwFunc::kMulScalar, n, e.act(), e.act(), {logits}, false);
    logits = e.pointwise("final_softcap.tanh", EwFunc::kTanh, n, e.act(), e.act(), {logits}, false);
    e.pointwise("final_softcap.mul", EwFunc::kMulScalar, n, e.act(), e.act(), {logits}, false);
  }
}

void detail::lower_hf_eager_layer(StepEmitter& e, int i, TensorUse& x, const ForwardTape& tape, LayerTape* lt) {
  layer(e, i, x, {tape.cos, tape.sin}, {tape.cos_local, tape.sin_local}, std::nullopt,
        e.workload().expert_weights_for(i), lt);
}

void lower_hf_generate_bookkeeping(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  StepEmitter e(w, s, b);
  const std::int64_t B = s.batch, V = w.model.vocab;
  const DType a = e.act();
  const TensorUse mask = b.state("attention_mask", static_cast<double>(B * (s.past_tokens + s.new_tokens)) * 8);
  // Before the forward call: next positions, cache position, the grown attention mask.
  if (s.past_tokens > 0) {
    const TensorUse cp = e.pointwise("generate.cache_position", EwFunc::kAddScalar, 1, kF32, kF32, {mask}, false);
    e.pointwise("generate.positions", EwFunc::kAdd, B, kF32, kF32, {cp, mask}, true);
    e.pointwise("generate.positions", EwFunc::kAddScalar, B, kF32, kF32, {cp}, false);
    const TensorUse grown = e.new_bytes("generate.mask", static_cast<double>(B * (s.past_tokens + 1)) * 8);
    e.emit("generate.mask_cat", {models::lower_cat({B * s.past_tokens, B}, kF32, true, {mask}, grown, e.hw())});
  }
  // After it: the last logits in fp32, greedy argmax, append the token, stopping criteria.
  const TensorUse logits = b.state("logits", static_cast<double>(B * V) * e.act_bytes());
  const TensorUse lf = e.cast("generate.logits_to_fp32", B * V, a == kF32 ? DType::kBf16 : a, kF32, logits);
  const TensorUse next = e.new_bytes("generate.argmax", static_cast<double>(B) * 8);
  e.emit("generate.argmax", {models::lower_reduce(B, V, kF32, kF32, true, "at::native::ArgMaxOps<float>", lf, next, e.hw())});
  const TensorUse ids = e.new_bytes("generate.input_ids", static_cast<double>(B) * 8);
  e.emit("generate.append", {models::lower_cat({B * (s.past_tokens + s.new_tokens), B}, kF32, true, {next}, ids, e.hw())});
  TensorUse flag = e.pointwise("generate.stop", EwFunc::kFill, B, kF32, kF32, {}, false);
  for (const EwFunc f : {EwFunc::kFill, EwFunc::kAdd, EwFunc::kNeg, EwFunc::kMul}) {
    flag = e.pointwise("generate.stop", f, B, kF32, kF32, {flag}, false);
  }
  const TensorUse done = e.new_act("generate.done", 8, kF32);
  e.emit("generate.stop", {models::lower_reduce(1, B, kF32, kF32, true, "at::native::func_wrapper_t<long, at::native::MaxNanFunctor<long> >", flag, done, e.hw())});
  const TensorUse eq = e.pointwise("generate.stop", EwFunc::kCompareScalar, 1, kF32, kF32, {done}, false);
  e.emit("generate.stop", {models::detail::memcpy_launch(true, 1, eq, eq, e.hw())});
  e.b().mark_host_sync();
}

std::vector<std::int64_t> expert_rows(std::int64_t tokens, std::int64_t top_k, std::int64_t experts,
                                      const std::vector<double>& weights) {
  const std::int64_t pairs = tokens * top_k;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(experts), 0);
  if (weights.empty()) {
    // Each token picks top_k distinct experts near uniformly at random (random or balanced
    // routers), so an expert gets none of T tokens with probability (1 - k/E)^T: the pairs
    // land on E (1 - (1 - k/E)^T) experts on average, not all E (4 decode tokens of Mixtral's
    // top-2 of 8 hit 5.5 experts; HF's grouped GEMMs measured 4.4-6.8 a layer).
    const double k = static_cast<double>(std::min(top_k, experts)),
                 e = static_cast<double>(experts);
    const double expected = e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(tokens)));
    const std::int64_t hit = std::clamp<std::int64_t>(
        std::llround(expected), std::min(top_k, experts), std::min(pairs, experts));
    for (std::int64_t x = 0; x < hit; ++x)
      rows[static_cast<std::size_t>(x)] = pairs / hit + (x < pairs % hit ? 1 : 0);
    return rows;
  }
  // Largest remainders: each expert gets floor(share), the leftovers go to the largest
  // fractional parts (ties to the lower index), so the rows add up to `tokens` exactly.
  double total = 0;
  for (const double w : weights) total += w;
  std::vector<std::pair<double, std::int64_t>> rest;
  std::int64_t given = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    const double share = static_cast<double>(pairs) * weights[static_cast<std::size_t>(e)] / total;
    rows[static_cast<std::size_t>(e)] = static_cast<std::int64_t>(std::floor(share));
    given += rows[static_cast<std::size_t>(e)];
    rest.push_back({share - std::floor(share), e});
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (std::int64_t i = 0; i < pairs - given; ++i)
    ++rows[static_cast<std::size_t>(rest[static_cast<std::size_t>(i)].second)];
  return rows;
}

}  // namespace gpusim::workloads
