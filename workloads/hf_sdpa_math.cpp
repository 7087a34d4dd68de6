// F.scaled_dot_product_attention on PyTorch's math backend (at::_scaled_dot_product_attention_math,
// PyTorch 2.11) and its autograd backward, as an fp32 training step of the hf-eager lowering runs
// them. transformers 5 calls sdpa with is_causal=True, no mask and enable_gqa=True; in fp32 no
// fused kernel takes grouped-query attention (FlashAttention and cuDNN run 16-bit types only, the
// memory-efficient kernel no head groups), so the dispatcher falls back to the composite:
//
//   q = q * sqrt(scale)                                  # scale = 1 / sqrt(D)
//   mask = where(ones(L, S, bool).tril(), 0, -inf)       # is_causal
//   k, v = k.repeat_interleave(G, -3), v.repeat_interleave(G, -3)   # enable_gqa, G = H / Hkv
//   attn = matmul(q, k.transpose(-2, -1) * sqrt(scale))  # q made dense for bmm (a transposed view)
//   attn.add_(mask)
//   attn = _safe_softmax(attn, -1)    # softmax, then rows that are all -inf set to 0:
//                                     # isneginf, all(-1), where(rows, 0, softmax)
//   out = matmul(attn, v)
//
// and transformers transposes the output back (.transpose(1, 2).contiguous(), a copy). Autograd's
// backward, from the derivative formulas: the copy's gradient made dense, bmm's two gradients
// for attn @ v (v's first), _safe_softmax's (softmax's: _softmax_backward_data multiplies the
// gradient by the output, then softmax_warp_backward), add_'s (the identity), bmm's two for
// q @ k^T (k's first), the key scale's, the group sums of repeat_interleave's backward (K's,
// then V's) and the query scale's. Every kernel is lowered by its own family's model; the
// B*H x S x S scores, probabilities and their gradients are activations, so the memory model
// holds the saved probabilities to the backward. Kernel order and launch shapes as
// validation/data/hf_train4_h100.json.gz lists them for the fp32 calibration cases (cuBLAS's tiles
// aside, the GEMM model's choice; V's group sum there is ATen's reduce_kernel<512, 1> with 4
// threads along the group, modeled as the same strided reduction as K's).
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "models/families.h"
#include "models/training_kernels.h"
#include "workloads/hf_eager_pieces.h"
#include "workloads/hf_train_pieces.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {
namespace {
using hw::DType;
using models::EwFunc;

constexpr DType kF32 = DType::kFp32;
constexpr DType kBool = DType::kFp8;  // one byte an element

constexpr const char* kAllFunctor =
    "at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() "
    "const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>";
constexpr const char* kSumFunctor =
    "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::"
    "{lambda(float, float)#1}>";

// One elementwise kernel from a problem the caller fills (bool outputs, masks, in-place outputs).
void elementwise(StepEmitter& e, const std::string& label, const models::ElementwiseProblem& p) {
  e.emit(label, e.b().lowering().lower_elementwise(p));
}

// `batch` products c[M, N] = a[M, K] @ b[K, N] (cuBLAS strided batched GEMM, fp32: the SIMT
// kernels); `b_transposed`: b is a transposed view (q @ k^T, dO @ v^T).
void bmm(StepEmitter& e, const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
         std::int64_t batch, const TensorUse& a, const TensorUse& b, const TensorUse& c, bool b_transposed) {
  models::GemmProblem g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.batch = batch;
  g.dtype = e.math();
  g.a = a.tensor;
  g.b = b.tensor;
  g.c = c.tensor;
  e.emit(label, models::lower_gemm(g, e.hw(), "", b_transposed));
}

struct Dims {
  std::int64_t B, H, Hkv, S, L, D;
  std::int64_t q() const { return B * H * S * D; }        // q, the output, their gradients
  std::int64_t kv() const { return B * H * L * D; }       // the expanded keys and values
  std::int64_t kv_in() const { return B * Hkv * L * D; }  // the keys and values sdpa is given
  std::int64_t scores() const { return B * H * S * L; }
  std::int64_t rows() const { return B * H * S; }
};

Dims dims_of(const StepEmitter& e) {
  const auto& m = e.m();
  return {e.s().batch, m.heads, m.kv_heads, e.s().new_tokens, e.s().past_tokens + e.s().new_tokens, m.head_dim};
}

}  // namespace

bool uses_sdpa_math(const StepEmitter& e) {
  const auto& w = e.workload();
  return w.phase == Phase::kTrain && w.attention == Attention::kSdpa && e.lin() == kF32;
}

TensorUse sdpa_math(StepEmitter& e, const std::string& label, const TensorUse& q, const TensorUse& k,
                    const TensorUse& v, SdpaMathTape* tape) {
  const Dims d = dims_of(e);
  const DType a = e.act();
  // Both operands are scaled by sqrt(1 / sqrt(D)) (vectorized: q is a permuted dense tensor).
  const TensorUse qs = e.pointwise(label + ".q_scale", EwFunc::kMulScalar, d.q(), a, a, {q}, false);
  // is_causal: a bool S x L lower triangle (ones, then tril), turned additive by a where between
  // two 0-dim tensors (a fill each).
  TensorUse mask;
  const bool causal = d.S > 1;
  if (causal) {
    const std::int64_t n = d.S * d.L;
    const TensorUse ones = e.new_act(label + ".mask_ones", static_cast<double>(n), kBool);
    models::ElementwiseProblem fill;
    fill.func = EwFunc::kFill;
    fill.n = n;
    fill.in = fill.out = kBool;
    fill.bool_out = true;
    fill.output = ones.tensor;
    elementwise(e, label + ".mask_ones", fill);
    const TensorUse tri = e.new_act(label + ".mask_tril", static_cast<double>(n), kBool);
    e.emit(label + ".mask_tril", {models::lower_tril_bool(d.S, d.L, ones, tri, e.hw())});
    e.pointwise(label + ".mask_zero", EwFunc::kFill, 1, kF32, kF32, {}, false);
    e.pointwise(label + ".mask_neg_inf", EwFunc::kFill, 1, kF32, kF32, {}, false);
    mask = e.new_act(label + ".mask", static_cast<double>(n), a);
    models::ElementwiseProblem where;
    where.func = EwFunc::kWhere;
    where.n = n;
    where.in = where.out = a;
    where.mask_bytes = n;
    where.strided = true;  // the 0-dim operands broadcast
    where.inputs = {tri.tensor};
    where.output = mask.tensor;
    elementwise(e, label + ".mask", where);
  }
  // enable_gqa: repeat_interleave over each group's query heads, an expand copied dense.
  TensorUse ke = k, ve = v;
  if (d.H > d.Hkv) {
    ke = e.pointwise(label + ".repeat_k", EwFunc::kCopy, d.kv(), a, a, {k}, true);
    ve = e.pointwise(label + ".repeat_v", EwFunc::kCopy, d.kv(), a, a, {v}, true);
  }
  const TensorUse ks = e.pointwise(label + ".k_scale", EwFunc::kMulScalar, d.kv(), a, a, {ke}, false);
  // matmul folds [B, H, S, D] into B*H products: q (the projection's [B, S, H, D] memory) is copied.
  const TensorUse qc = d.S > 1 && d.H > 1 ? e.pointwise(label + ".q_contiguous", EwFunc::kCopy, d.q(), a, a, {qs}, true)
                                          : qs;
  const TensorUse scores = e.new_act(label + ".scores", static_cast<double>(d.scores()), a);
  bmm(e, label + ".qk", d.S, d.L, d.D, d.B * d.H, qc, ks, scores, true);
  if (causal) {
    // attn.add_(mask): in place, the mask broadcast over the heads.
    models::ElementwiseProblem add;
    add.func = EwFunc::kAdd;
    add.n = d.scores();
    add.in = add.out = a;
    add.strided = true;
    add.inputs = {scores.tensor, mask.tensor};
    add.output = scores.tensor;
    elementwise(e, label + ".mask_add", add);
  }
  // _safe_softmax.
  const TensorUse sm = e.new_act(label + ".softmax", static_cast<double>(d.scores()), a);
  e.emit(label + ".softmax", models::lower_softmax(d.rows(), d.L, a, scores.tensor, sm.tensor, e.hw(), ""));
  const TensorUse neg = e.new_act(label + ".isneginf", static_cast<double>(d.scores()), kBool);
  models::ElementwiseProblem isneginf;
  isneginf.func = EwFunc::kIsNegInf;
  isneginf.n = d.scores();
  isneginf.in = a;
  isneginf.out = kBool;
  isneginf.inputs = {scores.tensor};
  isneginf.output = neg.tensor;
  elementwise(e, label + ".isneginf", isneginf);
  const TensorUse rows = e.new_act(label + ".all_neg_inf", static_cast<double>(d.rows()), kBool);
  hw::Launch all = models::lower_reduce(d.rows(), d.L, kBool, kBool, true, kAllFunctor, neg, rows, e.hw());
  // The reduction's type is bool (modeled as a one-byte type).
  all.name = fmt::format("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, {}> >", kAllFunctor);
  e.emit(label + ".all_neg_inf", {all});
  e.pointwise(label + ".zero", EwFunc::kFill, 1, kF32, kF32, {}, false);
  const TensorUse probs = e.new_act(label + ".probs", static_cast<double>(d.scores()), a);
  models::ElementwiseProblem where;
  where.func = EwFunc::kWhere;
  where.n = d.scores();
  where.in = where.out = a;
  where.mask_bytes = d.rows();  // one bool a row, broadcast over it
  where.strided = true;
  where.inputs = {rows.tensor, sm.tensor};
  where.output = probs.tensor;
  elementwise(e, label + ".safe_softmax", where);
  const TensorUse out = e.new_act(label + ".out", static_cast<double>(d.q()), a);
  bmm(e, label + ".pv", d.S, d.D, d.L, d.B * d.H, probs, ve, out, false);
  if (tape) *tape = SdpaMathTape{true, qc, ks, ve, probs};
  // transformers: attn_output.transpose(1, 2).contiguous() for o_proj.
  return e.pointwise(label + ".out_transpose", EwFunc::kCopy, d.q(), a, a, {out}, true);
}

QkvGrads sdpa_math_backward(StepEmitter& e, const std::string& label, const SdpaMathTape& t, const TensorUse& dout) {
  const Dims d = dims_of(e);
  const DType a = e.act();
  const std::int64_t BH = d.B * d.H;
  // The transposed view's gradient, made dense for bmm.
  const TensorUse dO = e.pointwise(label + ".grad_out_contiguous", EwFunc::kCopy, d.q(), a, a, {dout}, true);
  // out = probs @ v: v's gradient (probs^T dO), then the probabilities' (dO v^T).
  const TensorUse dv = e.new_act(label + ".grad_v_expanded", static_cast<double>(d.kv()), a);
  bmm(e, label + ".grad_pv_v", d.L, d.D, d.S, BH, t.probs, dO, dv, false);
  const TensorUse dp = e.new_act(label + ".grad_probs", static_cast<double>(d.scores()), a);
  bmm(e, label + ".grad_pv_probs", d.S, d.L, d.D, BH, dO, t.v, dp, true);
  // _safe_softmax's backward: grad * out, then softmax_warp_backward from it and the output.
  const TensorUse prod = e.pointwise(label + ".grad_softmax_mul", EwFunc::kMul, d.scores(), a, a, {dp, t.probs}, false);
  const TensorUse ds = e.new_act(label + ".grad_scores", static_cast<double>(d.scores()), a);
  e.emit(label + ".grad_softmax", models::lower_softmax_backward(d.rows(), d.L, a, prod, t.probs, ds, e.hw()));
  // scores = q @ k^T (add_'s gradient passes through): k^T's gradient (q^T dS), then q's (dS k).
  const TensorUse dkt = e.new_act(label + ".grad_qk_k", static_cast<double>(d.kv()), a);
  bmm(e, label + ".grad_qk_k", d.D, d.L, d.S, BH, t.q, ds, dkt, false);
  const TensorUse dqc = e.new_act(label + ".grad_qk_q", static_cast<double>(d.q()), a);
  bmm(e, label + ".grad_qk_q", d.S, d.D, d.L, BH, ds, t.k, dqc, false);
  TensorUse dk = e.pointwise(label + ".grad_k_scale", EwFunc::kMulScalar, d.kv(), a, a, {dkt}, false);
  TensorUse dvv = dv;
  if (d.H > d.Hkv) {
    // repeat_interleave's backward: each group's heads summed (a strided reduction), K's then V's.
    const std::int64_t group = d.H / d.Hkv;
    const TensorUse dks = e.new_act(label + ".grad_repeat_k", static_cast<double>(d.kv_in()), a);
    e.emit(label + ".grad_repeat_k", {models::lower_reduce(d.kv_in(), group, a, a, false, kSumFunctor, dk, dks, e.hw())});
    const TensorUse dvs = e.new_act(label + ".grad_repeat_v", static_cast<double>(d.kv_in()), a);
    e.emit(label + ".grad_repeat_v", {models::lower_reduce(d.kv_in(), group, a, a, false, kSumFunctor, dv, dvs, e.hw())});
    dk = dks;
    dvv = dvs;
  }
  const TensorUse dq = e.pointwise(label + ".grad_q_scale", EwFunc::kMulScalar, d.q(), a, a, {dqc}, false);
  return {dq, dk, dvv};
}

}  // namespace gpusim::workloads::detail
