// One training step of the cs336_basics model (seed 002) in eager PyTorch, fp32, as its code and
// autograd launch kernels, written from the source (cs336_basics/model.py, nn_utils.py,
// optimizer.py as assignment 2 ships them) and from autograd's derivative formulas (the package
// cannot be installed on the lent GPU machines):
//   forward: the cs336-basics forward (workloads/cs336_lowering.cpp) with a tape of what autograd
//     saves, then cross_entropy: log_softmax by hand (amax, subtract, logsumexp, subtract),
//     negation, torch.gather of each row's target, mean;
//   backward: autograd's kernels for every op of that forward, in reverse: the loss's chain
//     (gather's backward adds into zeroed logits; a broadcast operand's gradient is negated and
//     summed over its rows; torch.amax's compares the input with its maxima; tensors read twice
//     add their gradients); for every einsum Linear the weight's gradient (x^T dY, W's
//     transposed layout), the input's (dY W) and the copy of the former into W's layout
//     (AccumulateGrad keeps .grad in the parameter's strides); each RMSNorm's ops (the weight
//     product, the division by rms, sqrt, mean, x ** 2); SwiGLU's products and sigmoid's
//     backward; the hand-written softmax's division, sum, exp, subtraction and amax, torch.where
//     and the scale; the two attention einsums; RoPE's products, unbind's stack and the
//     rearranges' copies back to the projections' layout; the embedding's index_put_ with
//     accumulate;
//   optimizer: cs336_basics' AdamW, a Python loop of 16 kernels a parameter; or none
//     (`optimizer: none`, forward and backward as benchmark scripts time them).
// The loss is assumed to be cross_entropy against random targets (seed 002's benchmarks do not
// say; the assignment's training loop uses it), written as validation/measure/cs336_train.py
// writes it (amax and torch.logsumexp; the course's nn_utils takes torch.max(...)[0] and
// log(sum(exp)): a few kernels over the T x V logits either way). Where the derivative formulas
// leave the order of independent kernels open, it follows that script's measurement
// (validation/data/cs336_train_h100.json.gz, its calibration cases).
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
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

constexpr const char* kAmaxFunctor = "at::native::func_wrapper_t<float, at::native::MaxNanFunctor<float> >";
constexpr const char* kSumFunctor =
    "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::reduce(at::TensorIterator&)::"
    "{lambda(float, float)#1}>";
constexpr const char* kMeanFunctor = "at::native::MeanOps<float, float, float, float>";

// The parameters' gradients (.grad) by parameter tensor name.
struct Grads {
  std::map<std::string, TensorUse> of;
  void add(const TensorUse& param, const TensorUse& grad) { of[param.tensor] = grad; }
};

// A reduction over the last dimension of `rows` x `width` into a new tensor.
TensorUse reduce_rows(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t rows,
                      std::int64_t width, const char* functor) {
  const TensorUse y = e.new_act(label, static_cast<double>(rows));
  e.emit(label, {models::lower_reduce(rows, width, e.act(), e.act(), true, functor, x, y, e.hw())});
  return y;
}

// torch.amax's backward: the rows' gradient spread over each row's maxima (`input`, `max`:
// what autograd saved).
TensorUse amax_backward(StepEmitter& e, const std::string& label, std::int64_t rows, std::int64_t width,
                        const TensorUse& input, const TensorUse& max, const TensorUse& grad_rows) {
  const TensorUse g = e.new_act(label, static_cast<double>(rows * width));
  e.emit(label, models::lower_amax_backward(rows, width, e.act(), input, max, grad_rows, g, e.hw()));
  return g;
}

// An elementwise kernel that writes into an existing tensor (an in-place update, or a result
// that replaces a tensor outside the step's activations): no new activation, and no semantics
// (the functional interpreter runs out-of-place ops only).
void pointwise_into(StepEmitter& e, const std::string& label, EwFunc f, std::int64_t n,
                    const std::vector<TensorUse>& inputs, const TensorUse& target) {
  models::ElementwiseProblem p;
  p.func = f;
  p.n = n;
  p.in = p.out = e.act();
  for (const auto& t : inputs) p.inputs.push_back(t.tensor);
  p.output = target.tensor;
  e.emit(label, e.b().lowering().lower_elementwise(p));
}

// C[M, N] = A[M, K] @ B[K, N], `batch` of them (cuBLAS, the layouts' transposes aside).
TensorUse gemm(StepEmitter& e, const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
               std::int64_t batch, const TensorUse& a, const TensorUse& b) {
  const TensorUse c = e.new_act(label, static_cast<double>(batch * M * N));
  e.batched_gemm(label, M, N, K, batch, e.math(), a, b, c);
  return c;
}

// The backward of cs336_basics' Linear, einsum(x, W, "... d_in, d_out d_in -> ... d_out"), which
// torch.einsum runs as one bmm of x [1, T, d_in] and W's transposed view [1, d_in, d_out]:
// BmmBackward0 computes W's side first (x^T dY: d_in x d_out, W's transposed layout), then x's
// (dY W); AccumulateGrad then copies W's gradient into W's own strides.
TensorUse linear_backward(StepEmitter& e, const std::string& label, std::int64_t d_out, std::int64_t d_in,
                          const TensorUse& dy, const TensorUse& x, const TensorUse& w, Grads& g) {
  const std::int64_t T = e.tokens();
  const DType a = e.act();
  const TensorUse dwt = gemm(e, label + ".grad_weight", d_in, d_out, T, 1, x, dy);
  const TensorUse dx = gemm(e, label + ".grad_input", T, d_in, d_out, 1, dy, w);
  g.add(w, e.pointwise(label + ".grad_weight_layout", EwFunc::kCopy, d_out * d_in, a, a, {dwt}, true));
  return dx;
}

// The backward of cs336_basics' RMSNorm (x ** 2, mean, + eps, sqrt, x / rms, weight *) through
// its ops; returns the input's gradient.
TensorUse rms_norm_backward(StepEmitter& e, const std::string& label, const Cs336NormTape& t, const TensorUse& dy,
                            Grads& g) {
  const std::int64_t n = t.rows * t.width, rows = t.rows;
  const DType a = e.act();
  // weight * normed: the normed factor's gradient (the weight broadcast), then the weight's,
  // summed over the rows.
  const TensorUse dxn = e.pointwise(label + ".grad_normed", EwFunc::kMul, n, a, a, {dy, t.weight}, true);
  const TensorUse dwp = e.pointwise(label + ".grad_weight_mul", EwFunc::kMul, n, a, a, {dy, t.normed}, false);
  const TensorUse dw = e.new_act(label + ".grad_weight", static_cast<double>(t.width));
  e.emit(label + ".grad_weight", models::lower_column_sum(rows, t.width, a, a, dwp, dw, e.hw()));
  g.add(t.weight, dw);
  // x / rms: the divisor's gradient -grad * ((x / rms) / rms), then the dividend's grad / rms;
  // the divisor's is summed over each row (it was broadcast).
  const TensorUse q1 = e.pointwise(label + ".grad_rms_quotient", EwFunc::kDiv, n, a, a, {t.x, t.rms}, true);
  const TensorUse q2 = e.pointwise(label + ".grad_rms_quotient2", EwFunc::kDiv, n, a, a, {q1, t.rms}, true);
  const TensorUse ng = e.pointwise(label + ".grad_rms_neg", EwFunc::kNeg, n, a, a, {dxn}, false);
  const TensorUse pr = e.pointwise(label + ".grad_rms_mul", EwFunc::kMul, n, a, a, {ng, q2}, false);
  const TensorUse dx1 = e.pointwise(label + ".grad_input_div", EwFunc::kDiv, n, a, a, {dxn, t.rms}, true);
  const TensorUse drms = reduce_rows(e, label + ".grad_rms", pr, rows, t.width, kSumFunctor);
  // sqrt: grad / (2 * result), one value a row.
  const TensorUse two = e.pointwise(label + ".grad_sqrt_scale", EwFunc::kMulScalar, rows, a, a, {t.rms}, false);
  const TensorUse dvar = e.pointwise(label + ".grad_sqrt", EwFunc::kDiv, rows, a, a, {drms, two}, false);
  // mean: the row's gradient expanded over the row, / width.
  const TensorUse dsq = e.pointwise(label + ".grad_mean", EwFunc::kDiv, n, a, a, {dvar}, true);
  // x ** 2: grad * 2 * x ** 1, where x ** 1 is a copy of x (a device-to-device memcpy).
  const TensorUse xc = e.new_act(label + ".grad_pow_copy", static_cast<double>(n));
  e.emit(label + ".grad_pow_copy", {models::detail::memcpy_launch(false, static_cast<double>(xc.bytes), t.x, xc, e.hw())});
  const TensorUse two_x = e.pointwise(label + ".grad_pow_scale", EwFunc::kMulScalar, n, a, a, {xc}, false);
  const TensorUse dx2 = e.pointwise(label + ".grad_pow", EwFunc::kMul, n, a, a, {dsq, two_x}, false);
  // x was read twice (the pow and the division): its gradients add.
  return e.pointwise(label + ".grad_input", EwFunc::kAdd, n, a, a, {dx1, dx2}, false);
}

// RoPE's backward on a [B, H, S, D] view: the four products' factor gradients (each the output
// gradient, a strided half of the interleave, times the gathered cos or sin), the subtraction's
// negation, the halves' sums, unbind's stack and the rearrange's copy back to the interleaved
// layout. Returns the dense [B, H, S, D] gradient.
TensorUse rope_backward(StepEmitter& e, const std::string& label, const TensorUse& dy, const TensorUse& table) {
  const auto& m = e.m();
  const DType a = e.act();
  const std::int64_t half = e.tokens() * m.heads * m.head_dim / 2;
  // x2_rot = sin x1 + cos x2, made last, first.
  const TensorUse dx1_b = e.pointwise(label + ".grad_sin_x1", EwFunc::kMul, half, a, a, {dy, table}, true);
  const TensorUse dx2_b = e.pointwise(label + ".grad_cos_x2", EwFunc::kMul, half, a, a, {dy, table}, true);
  // x1_rot = cos x1 - sin x2.
  const TensorUse ng = e.pointwise(label + ".grad_sub_neg", EwFunc::kNeg, half, a, a, {dy}, true);
  const TensorUse dx1_a = e.pointwise(label + ".grad_cos_x1", EwFunc::kMul, half, a, a, {dy, table}, true);
  const TensorUse dx2_a = e.pointwise(label + ".grad_sin_x2", EwFunc::kMul, half, a, a, {ng, table}, true);
  const TensorUse dx1 = e.pointwise(label + ".grad_x1", EwFunc::kAdd, half, a, a, {dx1_a, dx1_b}, false);
  const TensorUse dx2 = e.pointwise(label + ".grad_x2", EwFunc::kAdd, half, a, a, {dx2_a, dx2_b}, false);
  const TensorUse stacked = e.new_act(label + ".grad_stack", static_cast<double>(2 * half));
  e.emit(label + ".grad_stack", {models::lower_cat({half, half}, a, true, {dx1, dx2}, stacked, e.hw())});
  return e.pointwise(label + ".grad_interleave", EwFunc::kCopy, 2 * half, a, a, {stacked}, true);
}

// The hand-written attention's backward from the gradient of its [B*H, S, D] output; fills the
// rotated queries', rotated keys' and V's contiguous copy's gradients.
void attention_backward(StepEmitter& e, const std::string& label, const Cs336AttentionTape& t, const TensorUse& dout,
                        TensorUse& dq, TensorUse& dk, TensorUse& dv) {
  const auto& m = e.m();
  const DType a = e.act();
  const std::int64_t BH = e.s().batch * m.heads, S = e.s().new_tokens, D = m.head_dim;
  const std::int64_t n = BH * S * S, rows = BH * S;
  // out = probs @ v: v's gradient first (probs^T dO), then the weights' (dO v^T).
  dv = gemm(e, label + ".pv.grad_v", S, D, S, BH, t.probs, dout);
  const TensorUse dp = gemm(e, label + ".pv.grad_probs", S, S, D, BH, dout, t.v);
  // probs = exp / sum: the divisor's gradient (summed over each row), then the dividend's.
  const std::string sm = label + ".softmax";
  const TensorUse q1 = e.pointwise(sm + ".grad_sum_quotient", EwFunc::kDiv, n, a, a, {t.exp, t.sum}, true);
  const TensorUse q2 = e.pointwise(sm + ".grad_sum_quotient2", EwFunc::kDiv, n, a, a, {q1, t.sum}, true);
  const TensorUse ng = e.pointwise(sm + ".grad_sum_neg", EwFunc::kNeg, n, a, a, {dp}, false);
  const TensorUse pr = e.pointwise(sm + ".grad_sum_mul", EwFunc::kMul, n, a, a, {ng, q2}, false);
  const TensorUse dex1 = e.pointwise(sm + ".grad_div", EwFunc::kDiv, n, a, a, {dp, t.sum}, true);
  const TensorUse dsum = reduce_rows(e, sm + ".grad_sum", pr, rows, S, kSumFunctor);
  // sum's backward expands the row gradient over the row; exp's result was read twice.
  const TensorUse dex = e.pointwise(sm + ".grad_exp_accumulate", EwFunc::kAdd, n, a, a, {dex1, dsum}, true);
  const TensorUse dsh = e.pointwise(sm + ".grad_exp", EwFunc::kMul, n, a, a, {dex, t.exp}, false);
  // shifted = masked - amax: the maxima's gradient negated and summed over each row, spread
  // by amax's backward over each row's maxima; the masked scores' two gradients add.
  const TensorUse ngm = e.pointwise(sm + ".grad_max_neg", EwFunc::kNeg, n, a, a, {dsh}, false);
  const TensorUse dmx = reduce_rows(e, sm + ".grad_max", ngm, rows, S, kSumFunctor);
  const TensorUse dmax = amax_backward(e, sm + ".grad_amax", rows, S, t.scores, t.max, dmx);
  const TensorUse dm = e.pointwise(sm + ".grad_scores_accumulate", EwFunc::kAdd, n, a, a, {dsh, dmax}, false);
  // torch.where(mask, scores, -inf): where(mask, grad, 0), its zero a one-element tensor; then
  // / sqrt(d_k).
  const TensorUse zero = e.pointwise(label + ".grad_where_zero", EwFunc::kFill, 1, a, a, {}, false);
  const TensorUse dw = e.pointwise(label + ".grad_where", EwFunc::kWhere, n, a, a, {t.mask, dm, zero}, true);
  const TensorUse ds = e.pointwise(label + ".grad_scale", EwFunc::kMulScalar, n, a, a, {dw}, false);
  // scores = q k^T: k's gradient first (q^T dS, [D, S] each), then q's (dS k).
  dk = gemm(e, label + ".qk.grad_k", D, S, S, BH, t.q, ds);
  dq = gemm(e, label + ".qk.grad_q", S, D, S, BH, ds, t.k);
}

// One TransformerBlock's backward; `dx` is the residual stream's gradient (updated).
void block_backward(StepEmitter& e, int i, const Cs336LayerTape& t, TensorUse& dx, Grads& g) {
  const auto& m = e.m();
  const DType a = e.act();
  const std::int64_t T = e.tokens(), d = m.d_model, F = m.d_ff, qd = m.heads * m.head_dim;
  const std::string L = fmt::format("layers[{}]", i);
  // FFN, w2(silu(w1 x) * w3 x): w2, the product's factors (the later one first), w3, silu's
  // product and sigmoid, the gate's two gradients, w1; the normed input's two gradients.
  const TensorUse dprod = linear_backward(e, L + ".ffn.w2", d, F, dx, t.prod, t.w2, g);
  const TensorUse dup = e.pointwise(L + ".ffn.grad_up", EwFunc::kMul, T * F, a, a, {dprod, t.act}, false);
  const TensorUse dact = e.pointwise(L + ".ffn.grad_act", EwFunc::kMul, T * F, a, a, {dprod, t.up}, false);
  const TensorUse dh2_up = linear_backward(e, L + ".ffn.w3", F, d, dup, t.h2, t.w3, g);
  const TensorUse dsg = e.pointwise(L + ".ffn.grad_sigmoid_out", EwFunc::kMul, T * F, a, a, {dact, t.gate}, false);
  const TensorUse dg1 = e.pointwise(L + ".ffn.grad_gate_mul", EwFunc::kMul, T * F, a, a, {dact, t.sigmoid}, false);
  const TensorUse dg2 =
      e.pointwise(L + ".ffn.grad_sigmoid", EwFunc::kSigmoidBackward, T * F, a, a, {dsg, t.sigmoid}, false);
  const TensorUse dgate = e.pointwise(L + ".ffn.grad_gate", EwFunc::kAdd, T * F, a, a, {dg1, dg2}, false);
  const TensorUse dh2_gate = linear_backward(e, L + ".ffn.w1", F, d, dgate, t.h2, t.w1, g);
  const TensorUse dh2 = e.pointwise(L + ".ffn.grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh2_up, dh2_gate}, false);
  const TensorUse dmid = rms_norm_backward(e, L + ".ln2", t.ln2, dh2, g);
  dx = e.pointwise(L + ".grad_residual_ffn", EwFunc::kAdd, T * d, a, a, {dx, dmid}, false);

  // Attention: output_proj, the heads' rearrange back (its reshape copies the permuted
  // gradient), the attention, RoPE, and each projection's [B, H, S, D] gradient copied back to
  // its [B, S, H * D] layout; the normed input's three gradients.
  const TensorUse dmerged = linear_backward(e, L + ".attn.output_proj", d, qd, dx, t.merged, t.wo, g);
  const TensorUse dout = e.pointwise(L + ".attn.grad_merge_heads", EwFunc::kCopy, T * qd, a, a, {dmerged}, true);
  TensorUse dq, dk, dv;
  attention_backward(e, L + ".attn", t.attn, dout, dq, dk, dv);
  const TensorUse dk_rot = rope_backward(e, L + ".attn.rope_k", dk, t.rope_k_table);
  const TensorUse dq_rot = rope_backward(e, L + ".attn.rope_q", dq, t.rope_q_table);
  const TensorUse dvp = e.pointwise(L + ".attn.grad_v_heads", EwFunc::kCopy, T * qd, a, a, {dv}, true);
  const TensorUse dh_v = linear_backward(e, L + ".attn.v_proj", qd, d, dvp, t.h, t.wv, g);
  const TensorUse dkp = e.pointwise(L + ".attn.grad_k_heads", EwFunc::kCopy, T * qd, a, a, {dk_rot}, true);
  const TensorUse dh_k = linear_backward(e, L + ".attn.k_proj", qd, d, dkp, t.h, t.wk, g);
  TensorUse dh = e.pointwise(L + ".attn.grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh_v, dh_k}, false);
  const TensorUse dqp = e.pointwise(L + ".attn.grad_q_heads", EwFunc::kCopy, T * qd, a, a, {dq_rot}, true);
  const TensorUse dh_q = linear_backward(e, L + ".attn.q_proj", qd, d, dqp, t.h, t.wq, g);
  dh = e.pointwise(L + ".attn.grad_input_sum", EwFunc::kAdd, T * d, a, a, {dh, dh_q}, false);
  const TensorUse din = rms_norm_backward(e, L + ".ln1", t.ln1, dh, g);
  dx = e.pointwise(L + ".grad_residual_attn", EwFunc::kAdd, T * d, a, a, {dx, din}, false);
}

// What the loss's backward reads of cross_entropy's forward: amax's input and result (the
// logits and their row maxima), logsumexp's input and result, the targets.
struct LossTape {
  TensorUse logits, max, shifted, lse, targets;
};

// cross_entropy(logits, targets): -(x - logsumexp(x)) for x = logits - amax(logits), each row's
// target gathered, the mean over the T tokens. torch.logsumexp itself: amax, the infinite maxima
// zeroed (abs, == inf, masked_fill_ on one value a row), exp(x - max), sum, log_, add_.
LossTape loss_forward(StepEmitter& e, const TensorUse& logits) {
  const std::int64_t T = e.tokens(), V = e.m().vocab;
  const DType a = e.act();
  LossTape t;
  t.logits = logits;
  t.max = reduce_rows(e, "loss.amax", logits, T, V, kAmaxFunctor);
  t.shifted = e.pointwise("loss.sub_max", EwFunc::kAdd, T * V, a, a, {logits, t.max}, true);
  const TensorUse m = reduce_rows(e, "loss.logsumexp.amax", t.shifted, T, V, kAmaxFunctor);
  const TensorUse mabs = e.pointwise("loss.logsumexp.abs", EwFunc::kAbs, T, a, a, {m}, false);
  const TensorUse inf = e.pointwise("loss.logsumexp.is_inf", EwFunc::kEq, T, a, DType::kFp8, {mabs}, false);
  pointwise_into(e, "loss.logsumexp.masked_fill", EwFunc::kMaskedFill, T, {m, inf}, m);
  const TensorUse d = e.pointwise("loss.logsumexp.sub", EwFunc::kAdd, T * V, a, a, {t.shifted, m}, true);
  const TensorUse ex = e.pointwise("loss.logsumexp.exp", EwFunc::kExp, T * V, a, a, {d}, false);
  const TensorUse sum = reduce_rows(e, "loss.logsumexp.sum", ex, T, V, kSumFunctor);
  const TensorUse log = e.pointwise("loss.logsumexp.log", EwFunc::kLog, T, a, a, {sum}, false);
  t.lse = e.pointwise("loss.logsumexp.add", EwFunc::kAdd, T, a, a, {log, m}, false);
  const TensorUse logp = e.pointwise("loss.sub_logsumexp", EwFunc::kAdd, T * V, a, a, {t.shifted, t.lse}, true);
  const TensorUse nlogp = e.pointwise("loss.neg", EwFunc::kNeg, T * V, a, a, {logp}, false);
  t.targets = e.b().state("targets", static_cast<double>(T) * 8);
  const TensorUse picked = e.new_act("loss.gather", static_cast<double>(T));
  e.emit("loss.gather", {models::lower_scatter_gather(models::ScatterGather::kGather, T, a, t.targets, nlogp,
                                                       picked, e.hw())});
  reduce_rows(e, "loss.mean", picked, 1, T, kMeanFunctor);
  return t;
}

// The loss's backward down to the logits' gradient.
TensorUse loss_backward(StepEmitter& e, const LossTape& t) {
  const std::int64_t T = e.tokens(), V = e.m().vocab;
  const DType a = e.act();
  // loss.backward() seeds a one; mean's backward divides it, expanded over the T values.
  const TensorUse seed = e.pointwise("loss.grad_seed", EwFunc::kFill, 1, a, a, {}, false);
  const TensorUse dpick = e.pointwise("loss.grad_mean", EwFunc::kDiv, T, a, a, {seed}, true);
  // gather's backward: zeros, the picked values' gradients added at the targets.
  const TensorUse dnlogp = e.pointwise("loss.grad_gather_zeros", EwFunc::kFill, T * V, a, a, {}, false);
  e.emit("loss.grad_gather", {models::lower_scatter_gather(models::ScatterGather::kScatterAdd, T, a, t.targets,
                                                           dpick, dnlogp, e.hw())});
  const TensorUse dlogp = e.pointwise("loss.grad_neg", EwFunc::kNeg, T * V, a, a, {dnlogp}, false);
  // x - logsumexp(x): logsumexp's gradient (negated, summed over the row), times
  // exp(x - result) broadcast; x was read twice.
  const TensorUse ng = e.pointwise("loss.grad_logsumexp_neg", EwFunc::kNeg, T * V, a, a, {dlogp}, false);
  const TensorUse dlse = reduce_rows(e, "loss.grad_logsumexp_sum", ng, T, V, kSumFunctor);
  const TensorUse d = e.pointwise("loss.grad_logsumexp_sub", EwFunc::kAdd, T * V, a, a, {t.shifted, t.lse}, true);
  const TensorUse ex = e.pointwise("loss.grad_logsumexp_exp", EwFunc::kExp, T * V, a, a, {d}, false);
  const TensorUse dx = e.pointwise("loss.grad_logsumexp", EwFunc::kMul, T * V, a, a, {dlse, ex}, true);
  const TensorUse dsh = e.pointwise("loss.grad_shift_accumulate", EwFunc::kAdd, T * V, a, a, {dlogp, dx}, false);
  // logits - amax: the maxima's gradient negated and summed, spread over each row's maxima.
  const TensorUse ngm = e.pointwise("loss.grad_max_neg", EwFunc::kNeg, T * V, a, a, {dsh}, false);
  const TensorUse dmx = reduce_rows(e, "loss.grad_max", ngm, T, V, kSumFunctor);
  const TensorUse dmax = amax_backward(e, "loss.grad_amax", T, V, t.logits, t.max, dmx);
  return e.pointwise("loss.grad_logits", EwFunc::kAdd, T * V, a, a, {dsh, dmax}, false);
}

// The parameters in model.parameters() order: the embedding; per block attn's q, k, v and
// output projections, ffn's w1, w2, w3, ln1, ln2; ln_final; lm_head.
std::vector<TensorUse> parameters(const Cs336ForwardTape& tape) {
  std::vector<TensorUse> out{tape.embedding};
  for (const Cs336LayerTape& t : tape.layers) {
    for (const TensorUse& w : {t.wq, t.wk, t.wv, t.wo, t.w1, t.w2, t.w3, t.ln1.weight, t.ln2.weight}) {
      out.push_back(w);
    }
  }
  out.push_back(tape.ln_final.weight);
  out.push_back(tape.head);
  return out;
}

// cs336_basics' AdamW.step(): for each parameter in turn, Python issues
//   p.data -= lr * wd * p.data                           (a scaled copy, an in-place sub)
//   state.get("m", torch.zeros_like(grad)), and v alike  (the zeros are made every step)
//   m = b1 * m + (1 - b1) * grad                         (two scalings, an add)
//   v = b2 * v + (1 - b2) * torch.square(grad)           (a scaling, the square, a scaling, an add)
//   p.data -= alpha_t * m / (torch.sqrt(v) + eps)        (a scaling, sqrt, + eps, div, an in-place sub)
// The new moments replace the state (written over it here: the old ones are freed at once).
void adamw_step(StepEmitter& e, const std::vector<TensorUse>& params, const Grads& g) {
  const DType a = e.act();
  for (const TensorUse& p : params) {
    const auto n = static_cast<std::int64_t>(static_cast<double>(p.bytes) / e.act_bytes());
    const std::string L = p.tensor + ".adamw";
    const TensorUse grad = g.of.at(p.tensor);
    const TensorUse m = e.b().state(p.tensor + ".m", static_cast<double>(p.bytes));
    const TensorUse v = e.b().state(p.tensor + ".v", static_cast<double>(p.bytes));
    const TensorUse decay = e.pointwise(L + ".decay", EwFunc::kMulScalar, n, a, a, {p}, false);
    pointwise_into(e, L + ".decay_sub", EwFunc::kAdd, n, {p, decay}, p);
    pointwise_into(e, L + ".m_default", EwFunc::kFill, n, {}, e.b().state(L + ".zeros_m", static_cast<double>(p.bytes)));
    pointwise_into(e, L + ".v_default", EwFunc::kFill, n, {}, e.b().state(L + ".zeros_v", static_cast<double>(p.bytes)));
    const TensorUse m1 = e.pointwise(L + ".m_scale", EwFunc::kMulScalar, n, a, a, {m}, false);
    const TensorUse m2 = e.pointwise(L + ".m_grad_scale", EwFunc::kMulScalar, n, a, a, {grad}, false);
    pointwise_into(e, L + ".m", EwFunc::kAdd, n, {m1, m2}, m);
    const TensorUse v1 = e.pointwise(L + ".v_scale", EwFunc::kMulScalar, n, a, a, {v}, false);
    const TensorUse sq = e.pointwise(L + ".grad_square", EwFunc::kPowScalar, n, a, a, {grad}, false);
    const TensorUse v2 = e.pointwise(L + ".v_grad_scale", EwFunc::kMulScalar, n, a, a, {sq}, false);
    pointwise_into(e, L + ".v", EwFunc::kAdd, n, {v1, v2}, v);
    const TensorUse step = e.pointwise(L + ".step_scale", EwFunc::kMulScalar, n, a, a, {m}, false);
    const TensorUse root = e.pointwise(L + ".sqrt", EwFunc::kSqrt, n, a, a, {v}, false);
    const TensorUse denom = e.pointwise(L + ".eps", EwFunc::kAddScalar, n, a, a, {root}, false);
    const TensorUse update = e.pointwise(L + ".update", EwFunc::kDiv, n, a, a, {step, denom}, false);
    pointwise_into(e, L + ".update_sub", EwFunc::kAdd, n, {p, update}, p);
  }
}

}  // namespace

void lower_cs336_train_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  StepEmitter e(w, s, b);
  const auto& m = w.model;
  const std::int64_t T = e.tokens(), d = m.d_model;
  Cs336ForwardTape tape;
  Grads g;
  b.begin_phase("forward");
  detail::lower_cs336_forward(w, s, b, &tape);
  const LossTape loss = loss_forward(e, tape.logits);

  b.begin_phase("backward");
  const TensorUse dlogits = loss_backward(e, loss);
  const TensorUse dh = linear_backward(e, "lm_head", m.vocab, d, dlogits, tape.hidden, tape.head, g);
  TensorUse dx = rms_norm_backward(e, "ln_final", tape.ln_final, dh, g);
  for (int i = static_cast<int>(tape.layers.size()) - 1; i >= 0; --i) {
    block_backward(e, i, tape.layers[static_cast<std::size_t>(i)], dx, g);
  }
  // weight[token_ids]'s backward: index_put_ with accumulate into a zeroed table.
  const TensorUse demb = e.new_act("token_embeddings.grad_weight", static_cast<double>(m.vocab * d));
  e.emit("token_embeddings.grad_weight",
         models::lower_index_put_accumulate(T, m.vocab, d, e.act(), tape.ids, dx, demb, e.hw()));
  g.add(tape.embedding, demb);
  // .grad stays allocated to the end of the step (the next zero_grad frees it).
  for (const auto& [name, grad] : g.of) b.hold_to_end(grad);
  if (w.optimizer == Optimizer::kNone) return;
  b.begin_phase("optimizer");
  adamw_step(e, parameters(tape), g);
}

}  // namespace gpusim::workloads
