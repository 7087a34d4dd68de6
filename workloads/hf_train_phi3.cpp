// Phi-3's decoder layer backward in a training step (Phi3DecoderLayer, transformers 5.17; eager
// PyTorch 2.11), kernel by kernel as validation/data/hf_train3_h100.json.gz's calibration case
// (phi3-mini-2l_b4_s512) records it:
//   MLP: down_proj's two GEMMs; the gated product's backward on the two halves of gate_up_proj's
//     output (up is a strided view: its product is strided, act(gate)'s dense), silu_backward on
//     the strided gate half, the chunk's backward as a cat of the two halves' gradients, then
//     gate_up_proj's weight and input gradients; the RMSNorm and the residual sum;
//   attention: o_proj's GEMMs (its input the contiguous copy of sdpa's output), cuDNN's
//     backward, RoPE's for k and q (both dense: apply_rotary_pos_emb's cat made new tensors), the
//     pass-through slice's zero-filled gradient added to each (and, with partial rotary, the
//     rotated slice's written into a zeroed full-size gradient too), the transposes back to the
//     projection's layout (a copy each of v, k, q), each slice's gradient written into a zeroed
//     gradient of the whole qkv output and summed (q, k and v are slices of one GEMM output),
//     then qkv_proj's weight and input gradients; the RMSNorm and the residual sum.
#include <fmt/format.h>

#include "models/common.h"
#include "workloads/hf_train_pieces.h"

namespace gpusim::workloads::detail {
namespace {
using hw::DType;
using hw::TensorUse;
using models::EwFunc;
}  // namespace

void phi3_layer_backward(StepEmitter& e, int i, const LayerTape& t, const TensorUse& cos, const TensorUse& sin,
                         TensorUse& dx, Grads& g) {
  const auto& m = e.m();
  const std::string L = fmt::format("layers[{}]", i);
  const std::int64_t T = e.tokens(), d = m.d_model, F = m.d_ff, q_dim = m.heads * m.head_dim,
                     kv_dim = m.kv_heads * m.head_dim, qkv_dim = q_dim + 2 * kv_dim;
  const DType a = e.lin();
  const DType r = e.act();
  // MLP: up_states = up * act(gate) over the two halves of gate_up_proj's output.
  const TensorUse dmlp = e.cast(L + ".mlp.grad_output_cast", T * d, r, a, dx);
  const TensorUse dp = linear_backward(e, L + ".mlp.down_proj", d, F, dmlp, t.prod, t.wd, nullptr, g);
  const TensorUse dsg = e.pointwise(L + ".mlp.grad_mul_act", EwFunc::kMul, T * F, a, a, {dp, t.gate_up}, true);
  const TensorUse du = e.pointwise(L + ".mlp.grad_mul_up", EwFunc::kMul, T * F, a, a, {dp, t.gate_act}, false);
  const TensorUse dgate = e.pointwise(L + ".mlp.grad_act", EwFunc::kSiluBackward, T * F, a, a, {dsg, t.gate_up}, true);
  // chunk(2, dim=-1)'s backward: the halves' gradients catted into one [T, 2F] gradient.
  const TensorUse dgu = e.new_act(L + ".mlp.grad_chunk", static_cast<double>(T * 2 * F), a);
  e.emit(L + ".mlp.grad_chunk", {models::lower_cat({T * F, T * F}, a, true, {dgate, du}, dgu, e.hw())});
  const TensorUse dh2 = linear_backward(e, L + ".mlp.gate_up_proj", 2 * F, d, dgu, t.h2, t.wgu, nullptr, g);
  const TensorUse dmid = rms_norm_backward(e, L + ".post_attention_norm", t.post_norm, e.tp_all_reduce(L + ".mlp.grad_allreduce", dh2, T * d), g);
  dx = e.pointwise(L + ".grad_residual_mlp", EwFunc::kAdd, T * d, r, r, {dx, dmid}, false);

  // Attention.
  const TensorUse dout = e.cast(L + ".attn.grad_output_cast", T * d, r, a, dx);
  const TensorUse dattn = linear_backward(e, L + ".attn.o_proj", d, q_dim, dout, t.attn_out, t.wo, nullptr, g);
  const QkvGrads sg = sdpa_backward(e, L + ".attn", t, dattn);
  const std::int64_t rot = rotary_dim(m);
  TensorUse dk = rope_backward(e, L + ".attn.rope_k", sg.dk, m.kv_heads, cos, sin, a, true, rot);
  TensorUse dq = rope_backward(e, L + ".attn.rope_q", sg.dq, m.heads, cos, sin, a, true, rot);
  // q[..., :rot] and q[..., rot:]: a slice covering the whole head is q itself (no backward); a
  // slice's backward writes its gradient into a zeroed full-size tensor (the empty pass-through
  // slice's: just the zeros), and the two gradients of q are summed.
  for (auto* grad : {&dk, &dq}) {
    const std::int64_t heads = grad == &dk ? m.kv_heads : m.heads;
    const TensorUse& upstream = grad == &dk ? sg.dk : sg.dq;  // the cat's gradient (sdpa's)
    const std::int64_t n = T * heads * m.head_dim;
    const std::string S = L + (grad == &dk ? ".attn.grad_k_slices" : ".attn.grad_q_slices");
    if (rot < m.head_dim) {
      const TensorUse z = e.pointwise(S + ".zero", EwFunc::kFill, n, a, a, {}, false);
      *grad = e.pointwise(S + ".copy", EwFunc::kCopy, T * heads * rot, a, a, {*grad, z}, true);
    }
    TensorUse pass = e.pointwise(S + ".zero", EwFunc::kFill, n, a, a, {}, false);
    if (rot < m.head_dim) {
      pass = e.pointwise(S + ".copy", EwFunc::kCopy, T * heads * (m.head_dim - rot), a, a, {upstream, pass}, true);
    }
    *grad = e.pointwise(S + ".add", EwFunc::kAdd, n, a, a, {*grad, pass}, false);
  }
  // The transposes back to [B, S, H, D] (copies), then each slice's gradient written into a
  // zeroed gradient of the whole qkv output, summed in autograd's input buffer.
  const TensorUse dvc = e.pointwise(L + ".attn.grad_v_transpose", EwFunc::kCopy, T * kv_dim, a, a, {sg.dv}, true);
  const TensorUse dkc = e.pointwise(L + ".attn.grad_k_transpose", EwFunc::kCopy, T * kv_dim, a, a, {dk}, true);
  const TensorUse dqc = e.pointwise(L + ".attn.grad_q_transpose", EwFunc::kCopy, T * q_dim, a, a, {dq}, true);
  TensorUse dqkv;
  for (const auto& [grad, width] : {std::pair{dvc, kv_dim}, std::pair{dkc, kv_dim}, std::pair{dqc, q_dim}}) {
    const TensorUse z = e.pointwise(L + ".attn.grad_qkv_zero", EwFunc::kFill, T * qkv_dim, a, a, {}, false);
    const TensorUse s = e.pointwise(L + ".attn.grad_qkv_slice", EwFunc::kCopy, T * width, a, a, {grad, z}, true);
    dqkv = dqkv.tensor.empty() ? s : e.pointwise(L + ".attn.grad_qkv_sum", EwFunc::kAdd, T * qkv_dim, a, a, {dqkv, s}, false);
  }
  const TensorUse dh = linear_backward(e, L + ".attn.qkv_proj", qkv_dim, d, dqkv, t.h, t.wqkv, nullptr, g);
  const TensorUse din = rms_norm_backward(e, L + ".input_norm", t.input_norm, e.tp_all_reduce(L + ".attn.grad_allreduce", dh, T * d), g);
  dx = e.pointwise(L + ".grad_residual_attn", EwFunc::kAdd, T * d, r, r, {dx, din}, false);
}

}  // namespace gpusim::workloads::detail
