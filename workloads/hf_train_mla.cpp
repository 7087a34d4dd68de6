// The backward of DeepseekV2Attention (multi-head latent attention, transformers 5.17 in eager
// PyTorch 2.11), autograd's kernels in the order validation/data/hf_train3_h100.json.gz's
// DeepSeek-V2-Lite calibration case records them on the H100:
//   o_proj's two GEMMs; cuDNN's attention backward at the query/key head dim (192; the values'
//   128 ride in the same kernel); the key's backward: its rotated part's gradient copied out of
//   dK and summed over the heads (the shared k_pe was expanded to every head), its nope part
//   copied; the cat of dK_nope and dV into kv_b_proj's output gradient and the transpose back;
//   kv_b_proj's GEMMs; RoPE's backward in complex fp32 (each gradient cast to fp32, the table
//   conjugated, the complex product, the cast back) for k_pe and q_pe; kv_a_layernorm's backward;
//   the cat of the latent's and k_pe's gradients into kv_a_proj_with_mqa's; its GEMMs; the cat
//   of q's nope and rotated gradients and the transpose back; q_proj's GEMMs; the two input
//   gradients summed.
// The forward (workloads/hf_eager_mla.cpp) fills the MlaTape read here.
#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "workloads/hf_train_pieces.h"

namespace gpusim::workloads::detail {
namespace {
using hw::DType;
using models::EwFunc;
constexpr DType kF32 = DType::kFp32;

std::string sum_functor(DType t) {
  return fmt::format("at::native::func_wrapper_t<{0}, at::native::sum_functor<{0}, float, {0}> >",
                     models::detail::aten_type_name(t));
}

// apply_rotary_emb's backward on a rotated slice of `n` values (complex pairs): the gradient cast
// to fp32, the table's conjugate, the complex product; the cast back comes after both slices.
TensorUse complex_rope_backward(StepEmitter& e, const std::string& label, std::int64_t n, const TensorUse& dy,
                                const TensorUse& cis, bool strided) {
  const DType a = e.act();
  const TensorUse df = strided ? e.pointwise(label + ".grad_to_fp32", EwFunc::kCast, n, a, kF32, {dy}, true)
                               : e.cast(label + ".grad_to_fp32", n, a, kF32, dy);
  // The table holds a sequence's positions (complex64: two fp32 a rotated pair).
  const std::int64_t pairs = e.s().new_tokens * e.m().mla->qk_rope_head_dim / 2;
  const TensorUse conj = e.pointwise(label + ".conj", EwFunc::kCopy, pairs, kF32, kF32, {cis}, false);
  return e.pointwise(label + ".grad_mul", EwFunc::kMul, n, kF32, kF32, {df, conj}, true);
}

}  // namespace

TensorUse mla_backward(StepEmitter& e, const std::string& label, const MlaTape& t, const TensorUse& dy, Grads& g) {
  const auto& m = e.m();
  const auto& s = e.s();
  const auto& mla = *m.mla;
  const auto& hw = e.hw();
  const std::int64_t T = e.tokens(), d = m.d_model, H = m.heads;
  const std::int64_t qk = mla.qk_head_dim(), nope = mla.qk_nope_head_dim, rd = mla.qk_rope_head_dim;
  const std::int64_t r = mla.kv_lora_rank, vd = mla.v_head_dim;
  const DType a = e.act();

  // o_proj, then cuDNN's backward (dK at the key's head dim, dV at the values').
  const TensorUse dattn = linear_backward(e, label + ".o_proj", d, H * vd, dy, t.out, t.wo, nullptr, g);
  const TensorUse dq = e.new_act(label + ".grad_query", static_cast<double>(T * H * qk));
  const TensorUse dk = e.new_act(label + ".grad_key", static_cast<double>(T * H * qk));
  const TensorUse dv = e.new_act(label + ".grad_value", static_cast<double>(T * H * vd));
  e.emit(label + ".sdpa_backward", models::lower_sdpa_backward(s.batch, H, H, s.new_tokens, qk, true, a, t.query, t.key,
                                                               t.kv, t.attn, dattn, dq, dk, dv, hw));
  // The key's two strided copies backward: the rotated part's gradient (a zeroed buffer the
  // expand's gradient is copied into) summed over the heads, the nope part's copied out.
  const double dv_bytes = static_cast<double>(T * H * vd) * e.act_bytes();
  const TensorUse dvc = e.new_act(label + ".grad_value_contiguous", static_cast<double>(T * H * vd));
  e.emit(label + ".grad_value_contiguous", {models::detail::memcpy_launch(false, dv_bytes, dv, dvc, hw)});
  TensorUse dkpe = e.pointwise(label + ".grad_key_rope", EwFunc::kCopy, T * H * rd, a, a, {dk}, true);
  const TensorUse zeros = e.pointwise(label + ".grad_key_rope_zero", EwFunc::kFill, T * H * rd, a, a, {}, false);
  dkpe = e.pointwise(label + ".grad_key_rope_expand", EwFunc::kCopy, T * H * rd, a, a, {dkpe, zeros}, true);
  const double nope_bytes = static_cast<double>(T * H * nope) * e.act_bytes();
  const TensorUse dkn0 = e.new_act(label + ".grad_key_nope_clone", static_cast<double>(T * H * nope));
  e.emit(label + ".grad_key_nope_clone", {models::detail::memcpy_launch(false, nope_bytes, dk, dkn0, hw)});
  const TensorUse dkn = e.pointwise(label + ".grad_key_nope", EwFunc::kCopy, T * H * nope, a, a, {dkn0}, true);
  const TensorUse dkpe_sum = e.new_act(label + ".grad_k_rope", static_cast<double>(T * rd));
  e.emit(label + ".grad_k_rope", {models::lower_reduce(T * rd, H, a, a, false, sum_functor(a), dkpe, dkpe_sum, hw)});
  // kv_b_proj's output gradient: the cat of dK_nope and dV per head, transposed back.
  const TensorUse dkv = e.new_act(label + ".grad_kv_cat", static_cast<double>(T * H * (nope + vd)));
  e.emit(label + ".grad_kv_cat", {models::lower_cat({T * H * nope, T * H * vd}, a, false, {dkn, dvc}, dkv, hw)});
  const TensorUse dkvc = e.pointwise(label + ".grad_kv_transpose", EwFunc::kCopy, T * H * (nope + vd), a, a, {dkv}, true);
  const TensorUse dlat = linear_backward(e, label + ".kv_b_proj", H * (nope + vd), r, dkvc, t.latent, t.wkvb, nullptr, g);
  // RoPE's backward for k_pe and q_pe (complex fp32), then both cast back.
  const TensorUse dkr = complex_rope_backward(e, label + ".rope_k", T * rd, dkpe_sum, t.cis, false);
  const TensorUse dqr = complex_rope_backward(e, label + ".rope_q", T * H * rd, dq, t.cis, true);
  const TensorUse dk_pe = e.cast(label + ".rope_k.grad_to_act", T * rd, kF32, a, dkr);
  const TensorUse dq_pe = e.cast(label + ".rope_q.grad_to_act", T * H * rd, kF32, a, dqr);
  // kv_a_layernorm, then kv_a_proj_with_mqa's output gradient: the latent's and k_pe's catted.
  const TensorUse dlatent = rms_norm_backward(e, label + ".kv_a_layernorm", t.kv_norm, dlat, g);
  const TensorUse dckv = e.new_act(label + ".grad_ckv_cat", static_cast<double>(T * (r + rd)));
  e.emit(label + ".grad_ckv_cat", {models::lower_cat({T * r, T * rd}, a, true, {dlatent, dk_pe}, dckv, hw)});
  const TensorUse dh_kv = linear_backward(e, label + ".kv_a_proj_with_mqa", r + rd, d, dckv, t.h, t.wkva, nullptr, g);
  // q's gradient: its nope part and the rotated part catted per head, transposed back.
  const TensorUse dqc = e.new_act(label + ".grad_query_cat", static_cast<double>(T * H * qk));
  e.emit(label + ".grad_query_cat", {models::lower_cat({T * H * nope, T * H * rd}, a, false, {dq, dq_pe}, dqc, hw)});
  const TensorUse dqt = e.pointwise(label + ".grad_query_transpose", EwFunc::kCopy, T * H * qk, a, a, {dqc}, true);
  const TensorUse dh_q = linear_backward(e, label + ".q_proj", H * qk, d, dqt, t.h, t.wq, nullptr, g);
  return e.pointwise(label + ".grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh_kv, dh_q}, false);
}

}  // namespace gpusim::workloads::detail
