// One optimizer step of a Hugging Face causal LM in eager PyTorch, as a training loop runs it
// (zero_grad(set_to_none=True); loss = model(input_ids, labels=input_ids).loss; loss.backward();
// optimizer.step()), kernel by kernel as validation/data/hf_train_h100.json.gz records it:
//   forward: the hf-eager forward (no attention mask, the head over every position), then
//     ForCausalLMLoss: the logits upcast to fp32, the shifted labels (pad and copies),
//     log_softmax and nll_loss;
//   backward: autograd's kernels in reverse: nll_loss and log_softmax backward, the upcast's,
//     for every linear layer the weight gradient (dY^T X) then the input gradient (dY W), the
//     RMSNorms' backward through their fp32 ops (17 kernels each), SwiGLU's, cuDNN's attention
//     backward, RoPE's (rotate_half's slices as zero fills and copies), the transposes back to
//     the projections' layout, the residual and fan-out sums, the embedding's backward;
//   optimizer: torch.optim's foreach AdamW (8 multi_tensor_apply ops), fused AdamW or foreach
//     SGD with momentum over the parameters in model.parameters() order.
// Llama-style decoders (llama, mistral, qwen2 with its q/k/v biases, qwen3 with its q/k norms)
// and their mixture-of-experts kin (qwen3_moe, mixtral) here; GPT-2's backward in
// hf_train_gpt2.cpp, Phi-3's and Gemma 3's layer backward in hf_train_phi3.cpp and
// hf_train_gemma.cpp, the MoE block's in hf_train_moe.cpp, with the helpers they share in
// hf_train_pieces.h.
#include <fmt/format.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "workloads/hf_eager_pieces.h"
#include "workloads/hf_train_pieces.h"
#include "workloads/parameter_count.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads {
namespace {
using detail::gemm_backward;
using detail::LayerTape;
using detail::RmsNormTape;
using detail::StepEmitter;
using hw::DType;
using hw::TensorUse;
using models::EwFunc;

constexpr DType kF32 = DType::kFp32;

}  // namespace

namespace detail {

TensorUse mm(StepEmitter& e, const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
             const TensorUse& a, const TensorUse& b) {
  const TensorUse c = e.new_act(label, static_cast<double>(M * N), e.lin());
  e.batched_gemm(label, M, N, K, 1, e.math(), a, b, c);
  return c;
}

void Grads::add(const TensorUse& param, const TensorUse& grad) {
  auto it = of.find(param.tensor);
  if (!accumulate || it == of.end()) {
    of[param.tensor] = grad;
    return;
  }
  const auto n = static_cast<std::int64_t>(static_cast<double>(grad.bytes) / e->act_bytes());
  it->second = e->pointwise(param.tensor + ".accumulate_grad", EwFunc::kAdd, n, e->act(), e->act(),
                            {it->second, grad}, false);
}

TensorUse Grads::of_param(const TensorUse& param) const {
  const auto it = of.find(param.tensor);
  return it != of.end() ? it->second : e->b().state(param.tensor + ".grad", param.bytes);
}

// Under autocast the two GEMMs read what the forward's GEMM read (the cast input and weight), the
// input's gradient is cast back to the input's type when autocast had cast it, then the weight's
// to fp32 (the backward of autocast's weight cast).
std::pair<TensorUse, TensorUse> gemm_backward(StepEmitter& e, const std::string& label, std::int64_t M,
                                              std::int64_t N, std::int64_t K, const TensorUse& dy,
                                              const TensorUse& x, const TensorUse& w) {
  const auto* amp = e.autocast_operands(label);
  TensorUse dw = mm(e, label + ".grad_weight", N, K, M, dy, amp ? amp->x : x);
  TensorUse dx = mm(e, label + ".grad_input", M, K, N, dy, amp ? amp->w : w);
  if (amp) {
    if (amp->x_cast) dx = e.cast(label + ".grad_input_cast", M * K, e.lin(), e.dtype_of(x), dx);
    dw = e.cast(label + ".grad_weight_cast", N * K, e.lin(), e.act(), dw);
  }
  return {dw, dx};
}

// The bias's gradient is a column sum of dY (cast to fp32 under autocast).
TensorUse linear_backward(StepEmitter& e, const std::string& label, std::int64_t N, std::int64_t K,
                          const TensorUse& dy, const TensorUse& x, const TensorUse& w, const TensorUse* bias,
                          Grads& g) {
  const std::int64_t T = e.tokens();
  const auto [dw, dx] = gemm_backward(e, label, T, N, K, dy, x, w);
  g.add(w, dw);
  if (bias) {
    const TensorUse db = e.new_act(label + ".grad_bias", static_cast<double>(N), e.lin());
    e.emit(label + ".grad_bias", models::lower_column_sum(T, N, e.lin(), e.lin(), dy, db, e.hw()));
    g.add(*bias, e.cast(label + ".grad_bias_cast", N, e.lin(), e.act(), db));
  }
  return dx;
}

// LlamaRMSNorm's backward through its forward ops (x.float(); pow; mean; + eps; rsqrt; mul;
// .to(bf16); weight *): the weight's gradient (a product and a column sum), then the fp32 chain
// back to the input and its cast.
//
// Under autocast the weight is fp32 and the norm's output fp32: for an fp32 input (the residual
// stream) no cast remains; for a 16-bit input (Qwen3's q/k norms) the weight product's gradient
// is cast to the normed input's type and back.
TensorUse rms_norm_backward(StepEmitter& e, const std::string& label, const RmsNormTape& t,
                            const TensorUse& dy, Grads& g, bool strided_grad) {
  if (e.m().norm_weight_offset) return gemma_rms_norm_backward(e, label, t, dy, g, strided_grad);
  const std::int64_t n = t.rows * t.width, rows = t.rows;
  const DType a = e.amp() ? e.dtype_of(t.in) : e.act();  // the norm's input type
  const DType o = e.amp() ? kF32 : a;                     // its output's (and weight's) type
  TensorUse dxb = e.pointwise(label + ".grad_normed", EwFunc::kMul, n, o, o, {dy, t.weight}, rows > 1);
  const TensorUse dwp = o != a ? e.promoted(label + ".grad_weight_mul", EwFunc::kMul, n, {dy, t.normed}, o, false)
                               : e.pointwise(label + ".grad_weight_mul", EwFunc::kMul, n, o, o, {dy, t.normed}, strided_grad);
  const TensorUse dw = e.new_act(label + ".grad_weight", static_cast<double>(t.width), o);
  e.emit(label + ".grad_weight", models::lower_column_sum(rows, t.width, o, o, dwp, dw, e.hw()));
  g.add(t.weight, dw);
  dxb = e.cast(label + ".grad_normed_cast", n, o, a, dxb);
  const TensorUse dxn = e.cast(label + ".grad_to_fp32", n, a, kF32, dxb);
  return rms_norm_chain_backward(e, label, t, dxn, a, false, strided_grad);
}

TensorUse rms_norm_chain_backward(StepEmitter& e, const std::string& label, const RmsNormTape& t,
                                  const TensorUse& dxn, DType a, bool strided_grad, bool transposed_grad) {
  const std::int64_t n = t.rows * t.width, rows = t.rows;
  const TensorUse dxf1 = e.pointwise(label + ".grad_scale", EwFunc::kMul, n, kF32, kF32, {dxn, t.rstd},
                                     strided_grad || transposed_grad);
  const TensorUse dprod = e.pointwise(label + ".grad_rstd_mul", EwFunc::kMul, n, kF32, kF32, {dxn, t.in_fp32}, true);
  const TensorUse dr = e.new_act(label + ".grad_rstd", static_cast<double>(rows), kF32);
  e.emit(label + ".grad_rstd", {models::lower_reduce(rows, t.width, kF32, kF32, true,
                                                     "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::reduce(at::TensorIterator&)::{lambda(float, float)#1}>",
                                                     dprod, dr, e.hw())});
  // rsqrt's backward: -0.5 * r^3 * grad, on one value per row.
  const TensorUse r3 = e.pointwise(label + ".grad_rsqrt_pow", EwFunc::kPowScalar, rows, kF32, kF32, {t.rstd}, false);
  const TensorUse r3s = e.pointwise(label + ".grad_rsqrt_scale", EwFunc::kMulScalar, rows, kF32, kF32, {r3}, false);
  const TensorUse dv = e.pointwise(label + ".grad_rsqrt", EwFunc::kMul, rows, kF32, kF32, {dr, r3s}, false);
  // mean's backward: the row's gradient / width, broadcast over the row.
  const TensorUse dsq = e.pointwise(label + ".grad_mean", EwFunc::kDiv, n, kF32, kF32, {dv}, true);
  // pow's backward: 2 * x * grad (autograd copies the exponent's result first).
  const TensorUse x2 = e.new_act(label + ".grad_pow_copy", static_cast<double>(n), kF32);
  e.emit(label + ".grad_pow_copy", {models::detail::memcpy_launch(false, static_cast<double>(n) * 4, t.in_fp32, x2, e.hw())});
  const TensorUse two_x = e.pointwise(label + ".grad_pow_scale", EwFunc::kMulScalar, n, kF32, kF32, {x2}, false);
  const TensorUse dxf2 = e.pointwise(label + ".grad_pow", EwFunc::kMul, n, kF32, kF32, {dsq, two_x}, strided_grad);
  // A transposed gradient's product keeps its layout: the sum of the two layouts is strided.
  const TensorUse dxf = e.pointwise(label + ".grad_accumulate", EwFunc::kAdd, n, kF32, kF32, {dxf1, dxf2}, transposed_grad);
  return e.cast(label + ".grad_input", n, kF32, a, dxf);
}

// rotate_half: the neg of one half; the cat's backward writes each slice's gradient into a
// zeroed full-size tensor. Under autocast (`a` a bf16 projection rotated by the fp32 table) the
// fp32 products' gradients are cast back to it. The final sum adds the slices' contiguous
// gradient to grad * cos, which keeps the layout of sdpa's gradient: strided unless that operand
// was a contiguous copy (k through the KV cache's cat; q, or k without a cache, is a transposed
// view of its projection). Every calibration trace shows it.
TensorUse rope_backward(StepEmitter& e, const std::string& label, const TensorUse& dy, std::int64_t heads,
                        const TensorUse& cos, const TensorUse& sin, DType a, bool dense_grad, std::int64_t dims) {
  const std::int64_t n = e.tokens() * heads * (dims > 0 ? dims : e.m().head_dim);
  const DType o = e.amp() ? e.act() : a;  // the products' type
  TensorUse drt = e.pointwise(label + ".grad_mul_sin", EwFunc::kMul, n, o, o, {dy, sin}, true);
  drt = e.cast(label + ".grad_mul_sin_cast", n, o, a, drt);
  const TensorUse dng = e.pointwise(label + ".grad_neg", EwFunc::kNeg, n / 2, a, a, {drt}, true);
  const TensorUse z1 = e.pointwise(label + ".grad_slice_zero", EwFunc::kFill, n, a, a, {}, false);
  const TensorUse s1 = e.pointwise(label + ".grad_slice_copy", EwFunc::kCopy, n / 2, a, a, {dng, z1}, true);
  const TensorUse z2 = e.pointwise(label + ".grad_slice_zero", EwFunc::kFill, n, a, a, {}, false);
  const TensorUse s2 = e.pointwise(label + ".grad_slice_copy", EwFunc::kCopy, n / 2, a, a, {drt, z2}, true);
  const TensorUse rot = e.pointwise(label + ".grad_slices_add", EwFunc::kAdd, n, a, a, {s1, s2}, false);
  TensorUse dc = e.pointwise(label + ".grad_mul_cos", EwFunc::kMul, n, o, o, {dy, cos}, true);
  dc = e.cast(label + ".grad_mul_cos_cast", n, o, a, dc);
  return e.pointwise(label + ".grad_add", EwFunc::kAdd, n, a, a, {rot, dc}, !dense_grad);
}

// cuDNN's backward (dot(dO, O), the flash backward, dQ's conversion, dK and dV summed over each
// group's heads); under autocast the backward of autocast's casts of sdpa's operands, then of
// the values' promotion into the fp32 cache.
QkvGrads sdpa_backward(StepEmitter& e, const std::string& label, const LayerTape& t, const TensorUse& dout) {
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), q_dim = m.heads * m.head_dim, kv_dim = m.kv_heads * m.head_dim;
  const DType a = e.lin(), r = e.act();
  TensorUse dq = e.new_act(label + ".grad_q", static_cast<double>(T * q_dim), a);
  TensorUse dk = e.new_act(label + ".grad_k", static_cast<double>(T * kv_dim), a);
  TensorUse dv = e.new_act(label + ".grad_v", static_cast<double>(T * kv_dim), a);
  const bool amp = e.amp().has_value();
  e.emit(label + ".sdpa_backward",
         models::lower_sdpa_backward(e.s().batch, m.heads, m.kv_heads, e.s().new_tokens, m.head_dim, true, a,
                                     amp ? t.q_sdpa : t.q_rot, amp ? t.k_sdpa : t.k_rot, amp ? t.v_sdpa : t.v,
                                     t.attn, dout, dq, dk, dv, e.hw()));
  if (amp) {
    dq = e.cast(label + ".grad_q_cast", T * q_dim, a, e.dtype_of(t.q_rot), dq);
    dk = e.cast(label + ".grad_k_cast", T * kv_dim, a, e.dtype_of(t.k_rot), dk);
    dv = e.cast(label + ".grad_v_cast", T * kv_dim, a, r, dv);
    dv = e.cast(label + ".grad_v_cache_cast", T * kv_dim, r, e.dtype_of(t.v), dv);
  }
  return {dq, dk, dv};
}

// SwiGLU's MLP backward: down, the product's two gradients, up, SiLU's, gate; the two input
// gradients summed (into the residual stream's type).
TensorUse swiglu_mlp_backward(StepEmitter& e, const std::string& label, std::int64_t F, const TensorUse& dy,
                              const TensorUse& h, const SwigluTape& t, Grads& g) {
  const std::int64_t T = e.tokens(), d = e.m().d_model;
  const DType a = e.lin(), r = e.act();
  const TensorUse dp = linear_backward(e, label + ".down_proj", d, F, dy, t.prod, t.wd, nullptr, g);
  const TensorUse dsg = e.pointwise(label + ".grad_mul_act", EwFunc::kMul, T * F, a, a, {dp, t.up}, false);
  const TensorUse du = e.pointwise(label + ".grad_mul_up", EwFunc::kMul, T * F, a, a, {dp, t.gate_act}, false);
  const TensorUse dh_up = linear_backward(e, label + ".up_proj", F, d, du, h, t.wu, nullptr, g);
  const TensorUse dgate = e.pointwise(label + ".grad_act", EwFunc::kSiluBackward, T * F, a, a, {dsg, t.gate}, false);
  const TensorUse dh_gate = linear_backward(e, label + ".gate_proj", F, d, dgate, h, t.wg, nullptr, g);
  return e.pointwise(label + ".grad_input_sum", EwFunc::kAdd, T * d, r, r, {dh_up, dh_gate}, false);
}

}  // namespace detail

namespace {
using detail::Grads;
using detail::linear_backward;
using detail::mm;
using detail::rms_norm_backward;
using detail::rope_backward;

// ForCausalLMLoss: logits.float(), the labels shifted (F.pad with -100, then the shifted view
// made contiguous), cross_entropy as log_softmax and nll_loss (mean over the tokens).
// What the loss's backward reads: the log-probabilities and the shifted targets.
struct LossTape {
  TensorUse logp, target;
};
LossTape loss_forward(StepEmitter& e, const TensorUse& logits) {
  const std::int64_t T = e.tokens(), V = e.m().vocab;
  // logits.float(): no kernel when the head already computes in fp32.
  const TensorUse lf = e.cast("loss.logits_to_fp32", T * V, e.lin(), kF32, logits);
  // Labels are int64: moved as fp32 pairs (the kernels only copy them).
  const TensorUse pad = e.pointwise("loss.labels_pad", EwFunc::kFill, 2 * e.s().batch, kF32, kF32, {}, false);
  const TensorUse lab = e.b().state("labels", static_cast<double>(T) * 8);
  const TensorUse padded = e.pointwise("loss.labels_pad_copy", EwFunc::kCopy, 2 * T, kF32, kF32, {lab, pad}, true);
  const TensorUse target = e.pointwise("loss.labels_shift", EwFunc::kCopy, 2 * T, kF32, kF32, {padded}, true);
  const TensorUse logp = e.new_act("loss.log_softmax", static_cast<double>(T * V), kF32);
  e.emit("loss.log_softmax", models::lower_log_softmax(T, V, kF32, lf, logp, e.hw()));
  // Tensor parallelism: a vocabulary-parallel loss (Megatron's): each GPU's rows' max, sum of
  // exponentials and target logit are all-reduced over the group, T values each.
  for (const char* what : {"max", "sum_exp", "target_logit"}) {
    const std::string label = fmt::format("loss.{}.allreduce", what);
    e.tp_all_reduce(label, e.new_act(label, static_cast<double>(T), kF32), T);
  }
  const TensorUse loss = e.new_act("loss.nll", 1, kF32);
  e.emit("loss.nll", {models::lower_nll_loss_forward(T, V, logp, target, loss, e.hw())});
  return {logp, target};
}

// The loss's backward down to the logits' gradient (in the activation type).
TensorUse loss_backward(StepEmitter& e, const LossTape& t) {
  const std::int64_t T = e.tokens(), V = e.m().vocab;
  e.pointwise("loss.grad_seed", EwFunc::kFill, 1, kF32, kF32, {}, false);
  const TensorUse dlogp = e.pointwise("loss.grad_zero", EwFunc::kFill, T * V, kF32, kF32, {}, false);
  e.emit("loss.grad_nll", {models::lower_nll_loss_backward(T, V, t.target, dlogp, e.hw())});
  const TensorUse dlf = e.new_act("loss.grad_log_softmax", static_cast<double>(T * V), kF32);
  e.emit("loss.grad_log_softmax", models::lower_log_softmax_backward(T, V, kF32, dlogp, t.logp, dlf, e.hw()));
  return e.cast("loss.grad_logits", T * V, kF32, e.lin(), dlf);
}

// One decoder layer's backward; `dx` is the residual stream's gradient (updated in place).
void layer_backward(StepEmitter& e, int i, const LayerTape& t, const TensorUse& cos, const TensorUse& sin,
                    TensorUse& dx, Grads& g) {
  const auto& m = e.m();
  const std::string L = fmt::format("layers[{}]", i);
  const std::int64_t T = e.tokens(), d = m.d_model, F = m.d_ff, q_dim = m.heads * m.head_dim,
                     kv_dim = m.kv_heads * m.head_dim;
  const DType a = e.lin();  // the projections' (and attention's) type
  const DType r = e.act();  // the residual stream's, the norms' and the summed input gradients'
  // MLP: down, SwiGLU's product, up, SiLU, gate; the two input gradients summed. Under autocast
  // the residual add's gradient reaches the bf16 branch cast. A MoE layer: the block's backward.
  const TensorUse dmlp = e.cast(L + ".mlp.grad_output_cast", T * d, r, a, dx);
  TensorUse dh2;
  if (t.sparse) {
    dh2 = detail::moe_backward(e, L + ".moe", t.moe, dmlp, g);
  } else {
    dh2 = detail::swiglu_mlp_backward(e, L + ".mlp", F, dmlp, t.h2, {t.gate, t.gate_act, t.up, t.prod, t.wg, t.wu, t.wd}, g);
  }
  const TensorUse dmid = rms_norm_backward(e, L + ".post_attention_norm", t.post_norm, e.tp_all_reduce(L + ".mlp.grad_allreduce", dh2, T * d), g);
  dx = e.pointwise(L + ".grad_residual_mlp", EwFunc::kAdd, T * d, r, r, {dx, dmid}, false);
  if (m.mla) {
    // DeepSeek's multi-head latent attention (workloads/hf_train_mla.cpp).
    const TensorUse dh = detail::mla_backward(e, L + ".attn", t.mla, dx, g);
    const TensorUse din = rms_norm_backward(e, L + ".input_norm", t.input_norm, e.tp_all_reduce(L + ".attn.grad_allreduce", dh, T * d), g);
    dx = e.pointwise(L + ".grad_residual_attn", EwFunc::kAdd, T * d, r, r, {dx, din}, false);
    return;
  }

  // Attention: o_proj, cuDNN's backward, RoPE's, the transposes back, the projections.
  const TensorUse dout = e.cast(L + ".attn.grad_output_cast", T * d, r, a, dx);
  const TensorUse dattn = linear_backward(e, L + ".attn.o_proj", d, q_dim, dout, t.attn_out, t.wo, nullptr, g);
  const bool amp = e.amp().has_value();
  const bool math = t.math.used;  // fp32: SDPA's math backend, whose dQ is dense
  const auto [dq, dk, dv] = math ? detail::sdpa_math_backward(e, L + ".attn", t.math, dattn)
                                 : detail::sdpa_backward(e, L + ".attn", t, dattn);
  // RoPE's input: the projection's output, or Qwen3's normed one (fp32 under autocast).
  const DType q_in = m.qk_norm ? r : e.dtype_of(t.q), k_in = m.qk_norm ? r : e.dtype_of(t.k);
  const bool cached = e.workload().checkpointing == Checkpointing::kNone;  // use_cache=False under checkpointing
  TensorUse dk_pre = rope_backward(e, L + ".attn.rope_k", dk, m.kv_heads, cos, sin, amp ? k_in : a, cached);
  TensorUse dq_pre = rope_backward(e, L + ".attn.rope_q", dq, m.heads, cos, sin, amp ? q_in : a, math);
  const TensorUse* no_bias = nullptr;
  const TensorUse bq = e.weight(L + ".attn.q_proj.bias", static_cast<double>(q_dim));
  const TensorUse bk = e.weight(L + ".attn.k_proj.bias", static_cast<double>(kv_dim));
  const TensorUse bv = e.weight(L + ".attn.v_proj.bias", static_cast<double>(kv_dim));
  const TensorUse dvc = e.pointwise(L + ".attn.grad_v_transpose", EwFunc::kCopy, T * kv_dim, a, a, {dv}, true);
  const TensorUse dh_v = linear_backward(e, L + ".attn.v_proj", kv_dim, d, dvc, t.h, t.wv, m.qkv_bias ? &bv : no_bias, g);
  // SDPA's math backend hands the q/k norms a dense [B, H, S, D] gradient for their [B, S, H, D]
  // inputs (unless one head).
  if (m.qk_norm) dk_pre = rms_norm_backward(e, L + ".attn.k_norm", t.k_norm, dk_pre, g, math && m.kv_heads > 1);
  const TensorUse dkc = e.pointwise(L + ".attn.grad_k_transpose", EwFunc::kCopy, T * kv_dim, a, a, {dk_pre}, true);
  const TensorUse dh_k = linear_backward(e, L + ".attn.k_proj", kv_dim, d, dkc, t.h, t.wk, m.qkv_bias ? &bk : no_bias, g);
  TensorUse dh = e.pointwise(L + ".attn.grad_input_sum", EwFunc::kAdd, T * d, r, r, {dh_v, dh_k}, false);
  if (m.qk_norm) dq_pre = rms_norm_backward(e, L + ".attn.q_norm", t.q_norm, dq_pre, g, math && m.heads > 1);
  const TensorUse dqc = e.pointwise(L + ".attn.grad_q_transpose", EwFunc::kCopy, T * q_dim, a, a, {dq_pre}, true);
  const TensorUse dh_q = linear_backward(e, L + ".attn.q_proj", q_dim, d, dqc, t.h, t.wq, m.qkv_bias ? &bq : no_bias, g);
  dh = e.pointwise(L + ".attn.grad_input_sum", EwFunc::kAdd, T * d, r, r, {dh, dh_q}, false);
  const TensorUse din = rms_norm_backward(e, L + ".input_norm", t.input_norm, e.tp_all_reduce(L + ".attn.grad_allreduce", dh, T * d), g);
  dx = e.pointwise(L + ".grad_residual_attn", EwFunc::kAdd, T * d, r, r, {dx, din}, false);
}

// The parameters in model.parameters() order, with their element counts.
using Param = detail::TrainParam;
std::vector<Param> parameters(StepEmitter& e, const detail::ForwardTape& tape) {
  const auto& m = e.m();
  if (m.positions == Positions::kLearned) return detail::gpt2_parameters(e, tape);
  const double eb = e.act_bytes();
  std::vector<Param> out;
  const auto add = [&](const TensorUse& w) { out.push_back({w, static_cast<std::int64_t>(static_cast<double>(w.bytes) / eb)}); };
  const auto& w = e.workload();
  if (w.first_stage()) add(tape.embed_table);
  for (std::size_t i = 0; i < tape.layers.size(); ++i) {
    const LayerTape& t = tape.layers[i];
    const std::string L = fmt::format("layers[{}]", i);
    if (m.fused_qkv) {
      // Phi3Attention registers o_proj before qkv_proj; Phi3MLP gate_up_proj, down_proj.
      add(t.wo);
      add(t.wqkv);
      add(t.wgu);
      add(t.wd);
      add(t.input_norm.weight);
      add(t.post_norm.weight);
      continue;
    }
    if (m.mla) {
      // DeepseekV2Attention: q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj.
      for (const TensorUse* w : {&t.mla.wq, &t.mla.wkva, &t.mla.kv_norm.weight, &t.mla.wkvb, &t.mla.wo}) add(*w);
    } else {
      add(t.wq);
      if (m.qkv_bias) add(e.weight(L + ".attn.q_proj.bias", static_cast<double>(m.heads * m.head_dim)));
      add(t.wk);
      if (m.qkv_bias) add(e.weight(L + ".attn.k_proj.bias", static_cast<double>(m.kv_heads * m.head_dim)));
      add(t.wv);
      if (m.qkv_bias) add(e.weight(L + ".attn.v_proj.bias", static_cast<double>(m.kv_heads * m.head_dim)));
      add(t.wo);
    }
    if (m.qk_norm) {
      add(t.q_norm.weight);
      add(t.k_norm.weight);
    }
    if (t.sparse) {
      // The sparse block's experts (stacked gate_up_proj, down_proj), then its router;
      // DeepseekV2MoE: experts, gate, shared_experts.
      add(t.moe.w_gate_up);
      add(t.moe.w_down);
      add(t.moe.w_router);
      if (m.moe->shared_experts > 0) {
        add(t.moe.sh_wg);
        add(t.moe.sh_wu);
        add(t.moe.sh_wd);
      }
    } else {
      add(t.wg);
      add(t.wu);
      add(t.wd);
    }
    add(t.input_norm.weight);
    if (m.sandwich_norms) add(t.attn_out_norm.weight);  // Gemma: post_attention_layernorm,
    add(t.post_norm.weight);                             // pre_feedforward_layernorm,
    if (m.sandwich_norms) add(t.mlp_out_norm.weight);   // post_feedforward_layernorm
  }
  if (w.last_stage()) {
    add(tape.final_norm.weight);
    if (!m.tied_embeddings || !w.first_stage()) add(tape.head);  // a later stage's tied head is a copy
  }
  return out;
}

// torch.amp.GradScaler's step before the optimizer's (fp16 autocast): unscale_ takes the scale's
// reciprocal in double (a cast, a reciprocal, a cast back), zeroes found_inf, and
// _amp_foreach_non_finite_check_and_unscale_ multiplies every gradient by it (one
// multi_tensor_apply over the gradients, written in place); step() then reads found_inf back to
// the host (.item(), a sync) to decide whether to step. From torch/amp/grad_scaler.py (2.11).
void grad_scaler_unscale(StepEmitter& e, const std::vector<Param>& params, const Grads& g) {
  for (const char* label : {"grad_scaler.inv_scale_to_double", "grad_scaler.inv_scale_reciprocal",
                            "grad_scaler.inv_scale_to_float", "grad_scaler.found_inf_zero"}) {
    e.pointwise(label, EwFunc::kMulScalar, 1, kF32, kF32, {}, false);
  }
  std::vector<std::int64_t> elems;
  std::vector<TensorUse> grads;
  for (const Param& x : params) {
    elems.push_back(x.elems);
    grads.push_back(g.of_param(x.weight));
  }
  e.emit("grad_scaler.unscale",
         models::lower_multi_tensor_apply(
             elems, e.act(), {grads}, 1,
             "UnaryOpFunctor<float, 1, 1, 0>, at::native::_amp_foreach_non_finite_check_and_unscale_cuda_"
             "(c10::ArrayRef<at::Tensor>, at::Tensor&, at::Tensor const&)::{lambda(float)#1}",
             2, e.hw()));
  const TensorUse found_inf = e.new_act("grad_scaler.found_inf", 1, kF32);
  e.emit("grad_scaler.found_inf_item", {models::detail::memcpy_launch(true, 4, found_inf, found_inf, e.hw())});
  e.b().mark_host_sync();
}

// One micro-batch: the forward with the loss, then the backward into `g`. A pipeline stage runs
// its layers: the last the loss and head, the first the embedding; the others receive the hidden
// states and send them on, and receive and send their gradients back.
void forward_backward(StepEmitter& e, detail::ForwardTape& tape, Grads& g) {
  const auto& w = e.workload();
  const auto& m = w.model;
  const std::int64_t T = e.tokens(), d = m.d_model;
  const DType a = e.act();
  auto& b = e.b();
  b.begin_phase("forward");
  detail::lower_hf_eager_forward(e, &tape);
  const bool scaled = w.accumulation_steps > 1;
  // fp16 autocast trains with torch.amp.GradScaler: scaler.scale(loss) multiplies by the scale.
  const bool grad_scaler = w.autocast == DType::kFp16;
  std::optional<LossTape> loss;
  if (w.last_stage()) {
    loss = loss_forward(e, tape.logits);
    // The training loop divides each micro-batch's loss by the number of micro-batches.
    if (scaled) e.pointwise("loss.accumulation_scale", EwFunc::kMulScalar, 1, kF32, kF32, {}, false);
    if (grad_scaler) e.pointwise("grad_scaler.scale", EwFunc::kMul, 1, kF32, kF32, {}, false);
  }

  b.begin_phase("backward");
  TensorUse dhead, dh;
  if (loss) {
    if (grad_scaler) e.pointwise("grad_scaler.grad_scale", EwFunc::kMul, 1, kF32, kF32, {}, false);
    if (scaled) e.pointwise("loss.grad_accumulation_scale", EwFunc::kMulScalar, 1, kF32, kF32, {}, false);
    const TensorUse dlogits = loss_backward(e, *loss);
    // The head's weight gradient dlogits^T h: cuBLAS sees the row-major [V, d] result as the
    // column-major d x V product h^T dlogits, whose rows of dlogits are V long. An odd vocabulary
    // (GPT-2's 50257) leaves them unaligned: the product is described as cuBLAS runs it, so the
    // GEMM model's alignment rule sees V (hf_train_h100.json.gz: cutlass_75 ..._align1 kernels).
    if (m.vocab % 8 == 0) {
      std::tie(dhead, dh) = gemm_backward(e, "lm_head", T, m.vocab, d, dlogits, tape.hidden, tape.head);
    } else {
      dhead = mm(e, "lm_head.grad_weight", d, m.vocab, T, tape.hidden, dlogits);
      dh = mm(e, "lm_head.grad_input", T, d, m.vocab, dlogits, tape.head);
    }
    dh = e.tp_all_reduce("lm_head.grad_allreduce", dh, T * d);  // a vocabulary-parallel head's partial sums
  }
  TensorUse dx;
  if (m.positions == Positions::kLearned) {
    dx = detail::gpt2_backward(e, tape, dh, g);
  } else {
    dx = loss ? rms_norm_backward(e, "final_norm", tape.final_norm, dh, g) : e.pp_receive("pp.grad_receive", T * d, true);
    const bool checkpointed = !tape.layer_inputs.empty();
    if (checkpointed) tape.layers.resize(static_cast<std::size_t>(m.layers));
    for (int i = static_cast<int>(m.layers) - 1; i >= 0; --i) {
      const auto at = static_cast<std::size_t>(i);
      if (checkpointed) {
        // torch.utils.checkpoint: the layer's forward runs again from its saved input first (in
        // an autocast region of its own under mixed precision: the weights are cast again).
        TensorUse x = tape.layer_inputs[at];
        e.begin_autocast();
        detail::lower_hf_eager_layer(e, i, x, tape, &tape.layers[at]);
      }
      if (m.fused_qkv) detail::phi3_layer_backward(e, i, tape.layers[at], tape.cos, tape.sin, dx, g);
      else if (m.sandwich_norms) detail::gemma_layer_backward(e, i, tape.layers[at], tape, dx, g);
      else layer_backward(e, i, tape.layers[at], tape.cos, tape.sin, dx, g);
    }
    if (!w.first_stage()) {
      e.pp_send("pp.grad_send", dx, T * d, true);
      if (loss) g.add(tape.head, dhead);  // the last stage's head (a tied one's copy of the table)
      return;
    }
  }
  // Gemma: the embedding's output times the 0-dim normalizer (the broadcasting kernel).
  if (m.embed_scale) dx = e.pointwise("embed_scale.grad", EwFunc::kMul, T * d, a, a, {dx}, true);
  const TensorUse demb = e.new_act("embed_tokens.grad_weight", static_cast<double>(m.vocab * d));
  e.emit("embed_tokens.grad_weight", models::lower_embedding_backward(T, m.vocab, d, a, tape.ids, dx, demb, e.hw()));
  if (!loss) {
    g.add(tape.embed_table, demb);  // the first of several stages: the embedding alone
  } else if (m.tied_embeddings) {
    // One parameter: the head's gradient accumulates into the embedding's.
    g.add(tape.embed_table,
          e.pointwise("embed_tokens.grad_accumulate", EwFunc::kAdd, m.vocab * d, a, a, {demb, dhead}, false));
  } else {
    g.add(tape.embed_table, demb);
    g.add(tape.head, dhead);
  }
}

}  // namespace

void detail::gradient_sync(StepEmitter& e, const std::vector<TrainParam>& params, const Grads& g) {
  const ModelWorkload& w = e.workload();
  if (w.parallel.data <= 1) return;
  e.b().begin_phase("gradient_sync");
  std::vector<TensorUse> grads;
  std::vector<std::int64_t> elements;
  for (const TrainParam& x : params) {
    grads.push_back(g.of_param(x.weight));
    elements.push_back(x.elems);
  }
  e.ddp_all_reduce(grads, elements, w.dtype);
}

// optimizer.step() over the parameters and their gradients.
void detail::train_optimizer_step(StepEmitter& e, const std::vector<TrainParam>& params, const Grads& g,
                                  Optimizer opt) {
  const DType a = e.act();
  std::vector<std::int64_t> elems;
  std::vector<TensorUse> p, gr, m1, m2, tmp;
  for (const TrainParam& x : params) {
    elems.push_back(x.elems);
    p.push_back(x.weight);
    gr.push_back(g.of_param(x.weight));
    const double bytes = static_cast<double>(x.weight.bytes);
    m1.push_back(e.b().state(x.weight.tensor + (opt == Optimizer::kSgd ? ".momentum" : ".exp_avg"), bytes));
    if (opt != Optimizer::kSgd) m2.push_back(e.b().state(x.weight.tensor + ".exp_avg_sq", bytes));
  }
  const auto& hw = e.hw();
  const std::string t = a == DType::kFp16 ? "c10::Half" : a == DType::kFp32 ? "float" : "c10::BFloat16";
  const auto run = [&](const std::string& label, const std::vector<std::vector<TensorUse>>& lists, int written,
                       const std::string& functor, double flops) {
    e.emit(label, models::lower_multi_tensor_apply(elems, a, lists, written, functor, flops, hw));
  };
  if (opt == Optimizer::kAdamWFused) {
    // The fused kernel keeps the step counts on the GPU: one foreach add on them first.
    std::vector<TensorUse> steps;
    for (const TensorUse& w : p) steps.push_back(e.b().state(w.tensor + ".step", 4));
    e.emit("optimizer.step_count",
           models::lower_multi_tensor_apply(std::vector<std::int64_t>(p.size(), 1), kF32, {steps}, 1,
                                            "BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float", 1, hw));
    e.emit("optimizer.fused_adamw", models::lower_fused_adamw(elems, a, a, {p, gr, m1, m2}, hw));
    return;
  }
  const std::string mul = fmt::format("BinaryOpScalarFunctor<{}, 1, 1, 0>, std::multiplies<float>, float", t);
  if (opt == Optimizer::kSgd) {
    const std::string add = fmt::format("BinaryOpListAlphaFunctor<{}, 2, 2, 0>, std::plus<float>, float", t);
    run("optimizer.momentum_mul", {m1}, 1, mul, 1);
    run("optimizer.momentum_add", {m1, gr}, 1, add, 2);
    run("optimizer.param_add", {p, m1}, 1, add, 2);
    return;
  }
  // _multi_tensor_adamw (PyTorch 2.11): decay, first moment, second moment, its sqrt with the
  // bias correction and eps, then the update.
  for (std::size_t i = 0; i < p.size(); ++i) tmp.push_back(e.new_act("optimizer.denom", static_cast<double>(elems[i])));
  run("optimizer.weight_decay", {p}, 1, mul, 1);
  run("optimizer.exp_avg_lerp", {m1, gr}, 1, fmt::format("TernaryOpScalarFunctor<{}, 2, 2, 0>, at::native::LerpFunctor<float>, float", t), 3);
  run("optimizer.exp_avg_sq_mul", {m2}, 1, mul, 1);
  // addcmul_(exp_avg_sq, grad, grad): three lists, the gradient twice.
  run("optimizer.exp_avg_sq_addcmul", {m2, gr, gr}, 1,
      fmt::format("PointwiseOpScalarFunctor<{}, 3, 3, 0>, std::multiplies<float>, float", t), 3);
  run("optimizer.denom_sqrt", {tmp, m2}, 1, fmt::format("UnaryOpFunctor<{}, 2, 1, 1>, at::native::Sqrt<float>", t), 2);
  // The bias corrections differ per tensor: a list of scalars.
  run("optimizer.denom_div", {tmp}, 1, fmt::format("BinaryOpScalarListFunctor<{}, 1, 1, 0>, std::divides<float>", t), 2);
  run("optimizer.denom_add", {tmp}, 1, fmt::format("BinaryOpScalarFunctor<{}, 1, 1, 0>, std::plus<float>, float", t), 1);
  run("optimizer.update", {p, m1, tmp}, 1,
      fmt::format("PointwiseOpScalarListFunctor<{}, 3, 3, 0>, std::divides<float>", t), 3);
}

void lower_hf_train_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  StepEmitter e(w, s, b);
  Grads g;
  g.e = &e;
  detail::ForwardTape tape;
  for (int micro = 0; micro < w.accumulation_steps; ++micro) {
    g.accumulate = micro > 0;
    tape = {};
    forward_backward(e, tape, g);
  }
  // .grad stays allocated to the end of the step (zero_grad(set_to_none=True) frees it next step).
  for (const auto& [name, grad] : g.of) b.hold_to_end(grad);
  const auto params = parameters(e, tape);
  detail::gradient_sync(e, params, g);  // data parallelism: DDP's buckets beside the backward
  if (w.optimizer == Optimizer::kNone) return;
  b.begin_phase("optimizer");
  if (w.autocast == DType::kFp16) grad_scaler_unscale(e, params, g);
  detail::train_optimizer_step(e, params, g, w.optimizer);
  // scaler.update(): _amp_update_scale_ grows or backs off the scale (one thread).
  if (w.autocast == DType::kFp16) e.pointwise("grad_scaler.update", EwFunc::kMul, 1, kF32, kF32, {}, false);
}

}  // namespace gpusim::workloads
