// The backward of a mixture-of-experts block in a training step (transformers 5.17's grouped_mm
// experts path: Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock), autograd's kernels in the order
// validation/data/hf_train3_h100.json.gz records them on the H100 (PyTorch 2.11):
//   the sum over the k slots (the gradient expanded and made contiguous; Mixtral's cast of the
//     fp32 sum first), the scatter back (index's backward: index_put_ with accumulate), the
//     weighting's two gradients (the routing weights' summed over the hidden size), the down
//     projection's masked_fill (a clone and a fill), its grouped GEMM's weight then input
//     gradient, SwiGLU's (the product's two, silu_backward, the halves catted back), the
//     gate_up masked_fill and grouped GEMM, the input masked_fill, the gathers' backward (the
//     routing weights', then the tokens' into the block's input), Qwen3-MoE's cast back to
//     fp32, norm_topk_prob's division, top-k's (a zeroed T x E scatter), softmax's, the fp32
//     cast's and the router's linear, whose input gradient is added to the experts'. DeepSeek's
//     block (DeepseekV2MoE): its shared experts' MLP backward first, the routing weights in fp32,
//     the routed scaling's gradient, and the router's fp32 GEMMs with their casts back.
// The forward (workloads/hf_eager_lowering.cpp, `moe`) fills the MoeTape read here.
#include <fmt/format.h>

#include "models/common.h"
#include "models/training_kernels.h"
#include "workloads/hf_train_pieces.h"

namespace gpusim::workloads::detail {
namespace {
using hw::DType;
using models::EwFunc;
constexpr DType kF32 = DType::kFp32;

// x.masked_fill_(mask, 0)'s backward as autograd runs it on a clone: a copy, then the fill.
TensorUse masked_fill_backward(StepEmitter& e, const std::string& label, std::int64_t n, DType t, const TensorUse& dy) {
  const TensorUse c = e.new_act(label + "_clone", static_cast<double>(n), t);
  e.emit(label + "_clone", {models::detail::memcpy_launch(false, static_cast<double>(n) * hw::bytes_per_element(t), dy, c, e.hw())});
  return e.pointwise(label, EwFunc::kMaskedFill, n, t, t, {c}, true);
}

std::string sum_functor(DType t) {
  return fmt::format("at::native::func_wrapper_t<{0}, at::native::sum_functor<{0}, float, {0}> >",
                     models::detail::aten_type_name(t));
}
}  // namespace

TensorUse moe_backward(StepEmitter& e, const std::string& label, const MoeTape& t, const TensorUse& dy, Grads& g) {
  const auto& m = e.m();
  const auto& cfg = *m.moe;
  const auto& hw = e.hw();
  const std::int64_t T = e.tokens(), d = m.d_model, E = cfg.experts, k = cfg.top_k, S = T * k, F = cfg.expert_d_ff;
  const DType a = e.lin();
  const DType wt = t.weights_cast ? a : kF32;  // the weighting's type (the sum's, the scatter's)
  const std::string X = label + ".experts";
  // DeepSeek's shared experts first (the block adds their output last).
  TensorUse dh_shared;
  if (cfg.shared_experts > 0) {
    dh_shared = swiglu_mlp_backward(e, label + ".shared_experts", cfg.shared_experts * cfg.shared_expert_d_ff, dy, t.h,
                                    {t.sh_gate, t.sh_act, t.sh_up, t.sh_prod, t.sh_wg, t.sh_wu, t.sh_wd}, g);
  }

  // The sum over the k slots: its gradient expanded to [T, k, d], made contiguous for index_put.
  const TensorUse ds = e.cast(X + ".grad_to_act_cast", T * d, a, wt, dy);
  const TensorUse dexp = e.pointwise(X + ".grad_sum_expand", EwFunc::kCopy, S * d, wt, wt, {ds}, true);
  // weighted[order]: index's backward into the sorted pairs.
  const TensorUse dweighted = e.new_act(X + ".grad_restore", static_cast<double>(S * d), wt);
  e.emit(X + ".grad_restore", models::lower_index_put_accumulate(S, S, d, wt, t.order, dexp, dweighted, hw));
  // dm * wg[:, None]: the weights' gradient (a product, summed over the hidden size below), then
  // the projection's (the broadcast product; cast back to the projection's type when promoted).
  TensorUse dwp, ddm;
  if (t.weights_cast) {
    dwp = e.pointwise(X + ".grad_weights_mul", EwFunc::kMul, S * d, a, a, {dweighted, t.dm}, false);
    ddm = e.pointwise(X + ".grad_proj_mul", EwFunc::kMul, S * d, a, a, {dweighted, t.wg}, true);
  } else {
    dwp = e.promoted(X + ".grad_weights_mul", EwFunc::kMul, S * d, {dweighted, t.dm}, kF32, false);
    ddm = e.pointwise(X + ".grad_proj_mul", EwFunc::kMul, S * d, kF32, kF32, {dweighted, t.wg}, true);
    ddm = e.cast(X + ".grad_proj_cast", S * d, kF32, a, ddm);
  }
  const TensorUse dwg = e.new_act(X + ".grad_weights", static_cast<double>(S), wt);
  e.emit(X + ".grad_weights", {models::lower_reduce(S, d, wt, wt, true, sum_functor(wt), dwp, dwg, hw)});

  // The down projection: its output mask, then the grouped GEMM's weight and input gradients.
  const TensorUse ddown = masked_fill_backward(e, X + ".grad_down_mask", S * d, a, ddm);
  const TensorUse dwd = e.new_act(X + ".down_proj.grad_weight", static_cast<double>(E * F * d), a);
  e.emit(X + ".down_proj.grad_weight", models::lower_grouped_gemm_weight_grad(t.rows, F, d, a, ddown, t.gated, dwd, hw));
  g.add(t.w_down, dwd);
  const TensorUse dgated = e.new_act(X + ".down_proj.grad_input", static_cast<double>(S * F), a);
  e.emit(X + ".down_proj.grad_input", models::lower_grouped_gemm(t.rows, F, d, a, ddown, t.w_down, dgated, hw));
  // SwiGLU on the two halves of gate_up: up's gradient, the activation's, silu_backward, and
  // the halves' gradients catted back into one [S, 2F] tensor.
  const TensorUse dup = e.pointwise(X + ".grad_mul_act", EwFunc::kMul, S * F, a, a, {dgated, t.act}, false);
  const TensorUse dact = e.pointwise(X + ".grad_mul_up", EwFunc::kMul, S * F, a, a, {dgated, t.upm}, true);
  const TensorUse dgate = e.pointwise(X + ".grad_act", EwFunc::kSiluBackward, S * F, a, a, {dact, t.upm}, true);
  const TensorUse dcat = e.new_act(X + ".grad_gate_up_cat", static_cast<double>(S * 2 * F), a);
  e.emit(X + ".grad_gate_up_cat", {models::lower_cat({S * F, S * F}, a, true, {dgate, dup}, dcat, hw)});
  const TensorUse dgu = masked_fill_backward(e, X + ".grad_gate_up_mask", S * 2 * F, a, dcat);
  const TensorUse dwgu = e.new_act(X + ".gate_up_proj.grad_weight", static_cast<double>(E * 2 * F * d), a);
  e.emit(X + ".gate_up_proj.grad_weight", models::lower_grouped_gemm_weight_grad(t.rows, d, 2 * F, a, dgu, t.xm, dwgu, hw));
  g.add(t.w_gate_up, dwgu);
  const TensorUse dxg = e.new_act(X + ".gate_up_proj.grad_input", static_cast<double>(S * d), a);
  e.emit(X + ".gate_up_proj.grad_input", models::lower_grouped_gemm(t.rows, d, 2 * F, a, dgu, t.w_gate_up, dxg, hw));
  const TensorUse dxm = masked_fill_backward(e, X + ".grad_input_mask", S * d, a, dxg);
  // The gathers' backward: the routing weights' (one value a row), then the tokens' into [T, d].
  const TensorUse dweights = e.new_act(X + ".grad_weight_gather", static_cast<double>(S), wt);
  e.emit(X + ".grad_weight_gather", models::lower_index_put_accumulate(S, S, 1, wt, t.ids, dwg, dweights, hw));
  TensorUse dh = e.new_act(X + ".grad_gather", static_cast<double>(T * d), a);
  e.emit(X + ".grad_gather", models::lower_index_put_accumulate(S, T, d, a, t.ids, dxm, dh, hw));
  if (cfg.shared_experts > 0) dh = e.pointwise(X + ".grad_shared_accumulate", EwFunc::kAdd, T * d, a, a, {dh_shared, dh}, false);

  // The router: the weights' cast back to fp32, norm_topk_prob's division (top / sum: the
  // numerator's gradient, the denominator's written out, summed over the k slots and added),
  // top-k's backward (a zeroed T x E gradient and a scatter), softmax's, the fp32 cast's.
  TensorUse dtop = e.cast(label + ".router.grad_to_fp32", S, wt, kF32, dweights);
  // DeepSeek's router scales the weights (routed_scaling_factor, a kernel even at 1.0).
  if (cfg.router_fp32) dtop = e.pointwise(label + ".router.grad_scale", EwFunc::kMulScalar, S, kF32, kF32, {dtop}, false);
  if (cfg.norm_topk_prob.value_or(false)) {
    const std::string R = label + ".router.grad_div";
    const TensorUse dnum = e.pointwise(R, EwFunc::kDiv, S, kF32, kF32, {dtop, t.sum}, true);
    const TensorUse q = e.pointwise(R, EwFunc::kDiv, S, kF32, kF32, {t.top, t.sum}, true);
    const TensorUse ng = e.pointwise(R, EwFunc::kNeg, S, kF32, kF32, {dtop}, false);
    const TensorUse pr = e.pointwise(R, EwFunc::kMul, S, kF32, kF32, {ng, q}, false);
    const TensorUse dq = e.pointwise(R, EwFunc::kDiv, S, kF32, kF32, {pr, t.sum}, true);
    const TensorUse dsum = e.new_act(R + "_sum", static_cast<double>(T), kF32);
    e.emit(R + "_sum", {models::lower_reduce(T, k, kF32, kF32, true, sum_functor(kF32), dq, dsum, hw)});
    dtop = e.pointwise(R + "_accumulate", EwFunc::kAdd, S, kF32, kF32, {dnum, dsum}, true);
  }
  const TensorUse zeros = e.pointwise(label + ".router.grad_topk_zero", EwFunc::kFill, T * E, kF32, kF32, {}, false);
  const TensorUse dprobs = e.new_act(label + ".router.grad_topk", static_cast<double>(T * E), kF32);
  e.emit(label + ".router.grad_topk",
         {models::lower_scatter_gather(models::ScatterGather::kScatter, S, kF32, t.top, dtop, dprobs, hw)});
  const TensorUse dp = e.pointwise(label + ".router.grad_softmax_mul", EwFunc::kMul, T * E, kF32, kF32, {dprobs, zeros}, false);
  const TensorUse dlf = e.new_act(label + ".router.grad_softmax", static_cast<double>(T * E), kF32);
  e.emit(label + ".router.grad_softmax", models::lower_softmax_backward(T, E, kF32, dp, t.probs, dlf, hw));
  TensorUse dh_router;
  if (cfg.router_fp32) {
    // F.linear(hidden.float(), weight.float()): fp32 GEMMs (the weight's gradient, then the
    // input's), each gradient cast back through its .float().
    const TensorUse dwf = e.new_act(label + ".gate.grad_weight", static_cast<double>(E * d), kF32);
    e.batched_gemm(label + ".gate.grad_weight", E, d, T, 1, kF32, dlf, t.h_fp32, dwf);
    const TensorUse dhf = e.new_act(label + ".gate.grad_input", static_cast<double>(T * d), kF32);
    e.batched_gemm(label + ".gate.grad_input", T, d, E, 1, kF32, dlf, t.w_router_fp32, dhf);
    g.add(t.w_router, e.cast(label + ".gate.grad_weight_cast", E * d, kF32, a, dwf));
    dh_router = e.cast(label + ".router.grad_hidden_cast", T * d, kF32, a, dhf);
  } else {
    const TensorUse dlogits = e.cast(label + ".router.grad_logits_cast", T * E, kF32, a, dlf);
    dh_router = linear_backward(e, label + ".gate", E, d, dlogits, t.h, t.w_router, nullptr, g);
  }
  return e.pointwise(label + ".grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh, dh_router}, false);
}

}  // namespace gpusim::workloads::detail
