// Gemma 3's decoder layer backward in a training step (Gemma3DecoderLayer, transformers 5.17;
// eager PyTorch 2.11), kernel by kernel as validation/data/hf_train3_h100.json.gz's calibration case
// (gemma3-1b-6l_b8_s256) records it:
//   Gemma3RMSNorm's backward (output = normed * (1 + weight.float()), cast last): the gradient
//     cast to fp32, the scale's gradient (a product and a column sum, cast back to the weight's
//     type: weight.float()'s backward) and the normed's (a broadcast product), then the fp32
//     chain LlamaRMSNorm's backward shares, and the cast to the input's type (18 kernels);
//   the MLP branch: post_feedforward_layernorm, down_proj, GeGLU's products, up_proj,
//     gelu_backward (tanh approximation) on the gate, gate_proj, the input gradients' sum,
//     pre_feedforward_layernorm and the residual sum;
//   the attention branch: post_attention_layernorm, o_proj, cuDNN's backward (head dim 256, dK
//     and dV summed over the query heads of each KV head), RoPE's for k and q with the layer's
//     own table (local layers: rope_local_base_freq), the k and q norms' backward (q's gradient
//     arrives as a transposed view: its products with it are strided), the v, k and q
//     projections (a transpose copy only where a projection has more than one head), the
//     input norm and the residual sum.
// The embedding scale's backward (a product by the 0-dim normalizer) is the step's
// (hf_train_lowering.cpp).
#include <fmt/format.h>

#include "models/common.h"
#include "models/training_kernels.h"
#include "workloads/hf_train_pieces.h"

namespace gpusim::workloads::detail {
namespace {
using hw::DType;
using hw::TensorUse;
using models::EwFunc;
constexpr DType kF32 = DType::kFp32;
}  // namespace

TensorUse gemma_rms_norm_backward(StepEmitter& e, const std::string& label, const RmsNormTape& t,
                                  const TensorUse& dy, Grads& g, bool strided_grad) {
  const std::int64_t n = t.rows * t.width, rows = t.rows;
  const DType a = e.act();
  // output.type_as(x)'s backward: the gradient in fp32.
  const TensorUse dyf = e.cast(label + ".grad_to_fp32", n, a, kF32, dy);
  // (normed * scale)'s backward: the scale's gradient (dY * normed), then the normed's (dY *
  // scale, broadcast over the rows), then the scale's summed over the rows.
  const TensorUse dwp = e.pointwise(label + ".grad_weight_mul", EwFunc::kMul, n, kF32, kF32, {dyf, t.normed}, strided_grad);
  const TensorUse dxn = e.pointwise(label + ".grad_normed", EwFunc::kMul, n, kF32, kF32, {dyf, t.scale}, rows > 1 || strided_grad);
  const TensorUse dw = e.new_act(label + ".grad_weight", static_cast<double>(t.width), kF32);
  e.emit(label + ".grad_weight", models::lower_column_sum(rows, t.width, kF32, kF32, dwp, dw, e.hw()));
  // (1 + w) passes the gradient through; weight.float()'s backward casts it to the weight's type.
  g.add(t.weight, e.cast(label + ".grad_weight_cast", t.width, kF32, a, dw));
  return rms_norm_chain_backward(e, label, t, dxn, a, strided_grad);
}

void gemma_layer_backward(StepEmitter& e, int i, const LayerTape& t, const ForwardTape& tape, TensorUse& dx,
                          Grads& g) {
  const auto& m = e.m();
  const std::string L = fmt::format("layers[{}]", i);
  const std::int64_t T = e.tokens(), d = m.d_model, F = m.d_ff, q_dim = m.heads * m.head_dim,
                     kv_dim = m.kv_heads * m.head_dim;
  const DType a = e.act();
  const TensorUse& cos = t.local ? tape.cos_local : tape.cos;
  const TensorUse& sin = t.local ? tape.sin_local : tape.sin;
  // MLP branch: x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x))).
  const TensorUse df = rms_norm_backward(e, L + ".post_feedforward_norm", t.mlp_out_norm, dx, g);
  const TensorUse dp = linear_backward(e, L + ".mlp.down_proj", d, F, df, t.prod, t.wd, nullptr, g);
  const TensorUse dsg = e.pointwise(L + ".mlp.grad_mul_act", EwFunc::kMul, T * F, a, a, {dp, t.up}, false);
  const TensorUse du = e.pointwise(L + ".mlp.grad_mul_up", EwFunc::kMul, T * F, a, a, {dp, t.gate_act}, false);
  const TensorUse dh_up = linear_backward(e, L + ".mlp.up_proj", F, d, du, t.h2, t.wu, nullptr, g);
  const TensorUse dgate = e.new_act(L + ".mlp.grad_act", static_cast<double>(T * F), a);
  e.emit(L + ".mlp.grad_act", models::lower_gelu_tanh_backward(T * F, a, false, dsg, t.gate, dgate, e.hw()));
  const TensorUse dh_gate = linear_backward(e, L + ".mlp.gate_proj", F, d, dgate, t.h2, t.wg, nullptr, g);
  const TensorUse dh2 = e.pointwise(L + ".mlp.grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh_up, dh_gate}, false);
  const TensorUse dmid = rms_norm_backward(e, L + ".pre_feedforward_norm", t.post_norm, e.tp_all_reduce(L + ".mlp.grad_allreduce", dh2, T * d), g);
  dx = e.pointwise(L + ".grad_residual_mlp", EwFunc::kAdd, T * d, a, a, {dx, dmid}, false);

  // Attention branch: x + post_attention_layernorm(o_proj(attention(input_layernorm(x)))).
  const TensorUse dproj = rms_norm_backward(e, L + ".post_attention_norm", t.attn_out_norm, dx, g);
  const TensorUse dattn = linear_backward(e, L + ".attn.o_proj", d, q_dim, dproj, t.attn_out, t.wo, nullptr, g);
  const QkvGrads sg = sdpa_backward(e, L + ".attn", t, dattn);
  // k reaches sdpa through the KV cache's cat (a contiguous copy) unless checkpointing turned the
  // cache off; a single KV head's transposed view is contiguous anyway.
  const bool cached = e.workload().checkpointing == Checkpointing::kNone;
  TensorUse dk = rope_backward(e, L + ".attn.rope_k", sg.dk, m.kv_heads, cos, sin, a, cached || m.kv_heads == 1);
  TensorUse dq = rope_backward(e, L + ".attn.rope_q", sg.dq, m.heads, cos, sin, a, m.heads == 1);
  // The norms run on [B, S, H, D] before the transpose: with several heads their gradient is a
  // transposed view.
  dk = rms_norm_backward(e, L + ".attn.k_norm", t.k_norm, dk, g, m.kv_heads > 1);
  dq = rms_norm_backward(e, L + ".attn.q_norm", t.q_norm, dq, g, m.heads > 1);
  // view(hidden_shape)'s backward copies a transposed gradient into the projection's layout.
  const auto to_projection = [&](const char* which, const TensorUse& grad, std::int64_t heads, std::int64_t width) {
    if (heads == 1) return grad;
    return e.pointwise(L + ".attn.grad_" + which + "_transpose", EwFunc::kCopy, T * width, a, a, {grad}, true);
  };
  const TensorUse dh_v = linear_backward(e, L + ".attn.v_proj", kv_dim, d, to_projection("v", sg.dv, m.kv_heads, kv_dim),
                                         t.h, t.wv, nullptr, g);
  const TensorUse dh_k = linear_backward(e, L + ".attn.k_proj", kv_dim, d, to_projection("k", dk, m.kv_heads, kv_dim),
                                         t.h, t.wk, nullptr, g);
  TensorUse dh = e.pointwise(L + ".attn.grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh_v, dh_k}, false);
  const TensorUse dh_q = linear_backward(e, L + ".attn.q_proj", q_dim, d, to_projection("q", dq, m.heads, q_dim),
                                         t.h, t.wq, nullptr, g);
  dh = e.pointwise(L + ".attn.grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh, dh_q}, false);
  const TensorUse din = rms_norm_backward(e, L + ".input_norm", t.input_norm, e.tp_all_reduce(L + ".attn.grad_allreduce", dh, T * d), g);
  dx = e.pointwise(L + ".grad_residual_attn", EwFunc::kAdd, T * d, a, a, {dx, din}, false);
}

}  // namespace gpusim::workloads::detail
