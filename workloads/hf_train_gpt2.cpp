// GPT-2's backward in a training step (GPT2LMHeadModel, transformers 5.17, eager PyTorch 2.11),
// kernel by kernel as the GPT-2 calibration cases of validation/data/hf_train_h100.json.gz and
// hf_train2_h100.json.gz record it, after the loss's and the tied head's (hf_train_lowering.cpp):
//   ln_f's backward (native_layer_norm_backward: the input's gradient, then gamma's and beta's);
//   per GPT2Block, in reverse: resid_dropout's backward (masked_scale), mlp.c_proj's Conv1D
//     (addmm: the weight's gradient, the input's, the bias's as a column sum), gelu_new's chain
//     (11 pointwise kernels: the products' gradients, tanh_backward, the scales, pow's 3 x^2,
//     the accumulations), c_fc's, ln_2's, the residual add_, the attention's resid_dropout,
//     c_proj's, cuDNN's attention backward (its dropout replayed from the Philox state), the
//     copies of dK and dV back from the cache cat's layout (with use_cache), the q/k/v split's
//     backward (a cat into the fused gradient), c_attn's, ln_1's and the residual add_;
//   the embedding dropout's backward, wpe's (the batch summed, then embedding_dense_backward of
//   the positions). The token embedding's and the tied head's sum are the caller's.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "workloads/hf_eager_pieces.h"
#include "workloads/hf_train_pieces.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {
namespace {
using hw::DType;

// nn.LayerNorm's backward; gamma's and beta's gradients go to the parameters `.weight`/`.bias`.
TensorUse layer_norm_backward(StepEmitter& e, const std::string& label, const RmsNormTape& t, const TensorUse& dy,
                              Grads& g) {
  const DType a = e.act();
  const TensorUse dx = e.new_act(label + ".grad_input", static_cast<double>(t.rows * t.width));
  const TensorUse dw = e.new_act(label + ".grad_weight", static_cast<double>(t.width));
  const TensorUse db = e.new_act(label + ".grad_bias", static_cast<double>(t.width));
  e.emit(label + ".backward", models::lower_layer_norm_backward(t.rows, t.width, a, t.in, t.weight, dy, dx, dw, db, e.hw()));
  g.add(e.weight(label + ".weight", static_cast<double>(t.width)), dw);
  g.add(e.weight(label + ".bias", static_cast<double>(t.width)), db);
  return dx;
}

// native_dropout_backward: grad * mask / (1 - p).
TensorUse dropout_backward(StepEmitter& e, const std::string& label, const TensorUse& dy, const TensorUse& mask) {
  const auto n = static_cast<std::int64_t>(static_cast<double>(dy.bytes) / e.act_bytes());
  return e.pointwise(label, EwFunc::kMaskedScale, n, e.act(), e.act(), {dy, mask}, false);
}

// NewGELUActivation's backward through its ops (0.5 x (1 + tanh(c (x + 0.044715 x^3)))), in
// autograd's order: the final product's two gradients, tanh's, the scales, pow's (3 x^2 times
// the gradient) accumulated into x's, then the 0.5 x branch accumulated.
TensorUse gelu_new_backward(StepEmitter& e, const std::string& label, const Gpt2LayerTape& t, const TensorUse& dy,
                            std::int64_t n) {
  const DType a = e.act();
  const TensorUse dhalf = e.pointwise(label + ".grad_half", EwFunc::kMul, n, a, a, {dy, t.gelu_one}, false);
  const TensorUse done = e.pointwise(label + ".grad_one", EwFunc::kMul, n, a, a, {dy, t.gelu_half}, false);
  const TensorUse dsc = e.pointwise(label + ".grad_tanh", EwFunc::kTanhBackward, n, a, a, {done, t.gelu_tanh}, false);
  const TensorUse dinner = e.pointwise(label + ".grad_scale", EwFunc::kMulScalar, n, a, a, {dsc}, false);
  const TensorUse dcube = e.pointwise(label + ".grad_cube_scale", EwFunc::kMulScalar, n, a, a, {dinner}, false);
  const TensorUse sq = e.pointwise(label + ".grad_pow", EwFunc::kPowScalar, n, a, a, {t.fc}, false);
  const TensorUse sq3 = e.pointwise(label + ".grad_pow_scale", EwFunc::kMulScalar, n, a, a, {sq}, false);
  const TensorUse dpow = e.pointwise(label + ".grad_pow_mul", EwFunc::kMul, n, a, a, {dcube, sq3}, false);
  const TensorUse dx1 = e.pointwise(label + ".grad_accumulate", EwFunc::kAdd, n, a, a, {dinner, dpow}, false);
  const TensorUse dx2 = e.pointwise(label + ".grad_half_scale", EwFunc::kMulScalar, n, a, a, {dhalf}, false);
  return e.pointwise(label + ".grad_accumulate", EwFunc::kAdd, n, a, a, {dx1, dx2}, false);
}

// One GPT2Block's backward; `dx` is the residual stream's gradient (updated in place).
void block_backward(StepEmitter& e, int i, const LayerTape& t, TensorUse& dx, Grads& g) {
  const auto& m = e.m();
  const auto& G = t.gpt2;
  const std::string L = fmt::format("layers[{}]", i);
  const std::int64_t T = e.tokens(), d = m.d_model, F = m.d_ff, q_dim = m.heads * m.head_dim,
                     kv_dim = m.kv_heads * m.head_dim, qkv_dim = q_dim + 2 * kv_dim;
  const DType a = e.act();
  // MLP: dropout, c_proj, gelu_new, c_fc, ln_2; the residual's gradient summed in place.
  const TensorUse dm = dropout_backward(e, L + ".mlp.dropout_backward", dx, G.mlp_drop_mask);
  const TensorUse b_proj = e.weight(L + ".mlp.c_proj.bias", static_cast<double>(d));
  const TensorUse dact = linear_backward(e, L + ".mlp.c_proj", d, F, dm, G.gelu_out, G.w_mlp_proj, &b_proj, g);
  const TensorUse dfc = gelu_new_backward(e, L + ".mlp.gelu", G, dact, T * F);
  const TensorUse b_fc = e.weight(L + ".mlp.c_fc.bias", static_cast<double>(F));
  const TensorUse dh2 = linear_backward(e, L + ".mlp.c_fc", F, d, dfc, t.h2, G.w_fc, &b_fc, g);
  const TensorUse dln2 = layer_norm_backward(e, L + ".post_attention_norm", t.post_norm, e.tp_all_reduce(L + ".mlp.grad_allreduce", dh2, T * d), g);
  dx = e.pointwise(L + ".grad_residual_mlp", EwFunc::kAdd, T * d, a, a, {dx, dln2}, false);

  // Attention: dropout, c_proj, cuDNN's backward, the split's, c_attn, ln_1.
  const TensorUse da = dropout_backward(e, L + ".attn.resid_dropout_backward", dx, G.attn_drop_mask);
  const TensorUse b_o = e.weight(L + ".attn.c_proj.bias", static_cast<double>(d));
  const TensorUse dattn = linear_backward(e, L + ".attn.c_proj", d, q_dim, da, t.attn_out, t.wo, &b_o, g);
  const TensorUse dq = e.new_act(L + ".attn.grad_q", static_cast<double>(T * q_dim));
  TensorUse dk = e.new_act(L + ".attn.grad_k", static_cast<double>(T * kv_dim));
  TensorUse dv = e.new_act(L + ".attn.grad_v", static_cast<double>(T * kv_dim));
  e.emit(L + ".attn.sdpa_backward",
         models::lower_sdpa_backward(e.s().batch, m.heads, m.kv_heads, e.s().new_tokens, m.head_dim, true, a,
                                     t.q_rot, t.k_rot, t.v, t.attn, dattn, dq, dk, dv, e.hw(), true));
  if (G.cached) {
    // k and v reached sdpa through the cache's cat: their gradients come back in the cat's
    // [B, H, S, D] layout and are copied into the split views' layout.
    dk = e.pointwise(L + ".attn.grad_k_copy", EwFunc::kCopy, T * kv_dim, a, a, {dk}, true);
    dv = e.pointwise(L + ".attn.grad_v_copy", EwFunc::kCopy, T * kv_dim, a, a, {dv}, true);
  }
  // split's backward: the three gradients catted into c_attn's output gradient.
  const TensorUse dqkv = e.new_act(L + ".attn.grad_qkv", static_cast<double>(T * qkv_dim));
  e.emit(L + ".attn.grad_split", {models::lower_cat({T * q_dim, T * kv_dim, T * kv_dim}, a, true, {dq, dk, dv}, dqkv, e.hw())});
  const TensorUse b_attn = e.weight(L + ".attn.c_attn.bias", static_cast<double>(qkv_dim));
  const TensorUse dh = linear_backward(e, L + ".attn.c_attn", qkv_dim, d, dqkv, t.h, G.w_attn, &b_attn, g);
  const TensorUse dln1 = layer_norm_backward(e, L + ".input_norm", t.input_norm, e.tp_all_reduce(L + ".attn.grad_allreduce", dh, T * d), g);
  dx = e.pointwise(L + ".grad_residual_attn", EwFunc::kAdd, T * d, a, a, {dx, dln1}, false);
}

}  // namespace

TensorUse gpt2_backward(StepEmitter& e, ForwardTape& tape, const TensorUse& dh, Grads& g) {
  const auto& m = e.m();
  const auto& s = e.s();
  const std::int64_t d = m.d_model, P = *m.max_positions;
  TensorUse dx = layer_norm_backward(e, "final_norm", tape.final_norm, dh, g);
  const bool checkpointed = !tape.layer_inputs.empty();
  if (checkpointed) tape.layers.resize(static_cast<std::size_t>(m.layers));
  for (int i = static_cast<int>(m.layers) - 1; i >= 0; --i) {
    const auto at = static_cast<std::size_t>(i);
    if (checkpointed) {
      // torch.utils.checkpoint: the block's forward (its dropouts included) runs again first.
      TensorUse x = tape.layer_inputs[at];
      lower_hf_eager_layer(e, i, x, tape, &tape.layers[at]);
    }
    block_backward(e, i, tape.layers[at], dx, g);
  }
  dx = dropout_backward(e, "embed_dropout_backward", dx, tape.embed_drop_mask);
  // wpe(position_ids) broadcast over the batch: the batch summed, then the positions' backward.
  const TensorUse dpos = e.new_act("embed_positions.grad_sum", static_cast<double>(s.new_tokens * d));
  e.emit("embed_positions.grad_sum", models::lower_column_sum(s.batch, s.new_tokens * d, e.act(), e.act(), dx, dpos, e.hw()));
  const TensorUse dwpe = e.new_act("embed_positions.grad_weight", static_cast<double>(P * d));
  e.emit("embed_positions.grad_weight",
         models::lower_embedding_backward(s.new_tokens, P, d, e.act(), tape.positions, dpos, dwpe, e.hw()));
  g.add(tape.wpe, dwpe);
  return dx;
}

std::vector<TrainParam> gpt2_parameters(StepEmitter& e, const ForwardTape& tape) {
  const auto& m = e.m();
  const std::int64_t d = m.d_model, F = m.d_ff, qkv_dim = (m.heads + 2 * m.kv_heads) * m.head_dim;
  std::vector<TrainParam> out;
  const auto add = [&](const TensorUse& w, std::int64_t elems) { out.push_back({w, elems}); };
  const auto norm = [&](const std::string& label) {
    add(e.weight(label + ".weight", static_cast<double>(d)), d);
    add(e.weight(label + ".bias", static_cast<double>(d)), d);
  };
  add(tape.embed_table, m.vocab * d);
  add(tape.wpe, *m.max_positions * d);
  for (std::size_t i = 0; i < tape.layers.size(); ++i) {
    const LayerTape& t = tape.layers[i];
    const std::string L = fmt::format("layers[{}]", i);
    norm(L + ".input_norm");
    add(t.gpt2.w_attn, d * qkv_dim);
    add(e.weight(L + ".attn.c_attn.bias", static_cast<double>(qkv_dim)), qkv_dim);
    add(t.wo, d * d);
    add(e.weight(L + ".attn.c_proj.bias", static_cast<double>(d)), d);
    norm(L + ".post_attention_norm");
    add(t.gpt2.w_fc, d * F);
    add(e.weight(L + ".mlp.c_fc.bias", static_cast<double>(F)), F);
    add(t.gpt2.w_mlp_proj, F * d);
    add(e.weight(L + ".mlp.c_proj.bias", static_cast<double>(d)), d);
  }
  norm("final_norm");
  return out;
}

}  // namespace gpusim::workloads::detail
