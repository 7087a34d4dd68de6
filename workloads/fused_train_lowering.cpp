// The fused lowering's training step: one optimizer step as a tuned trainer runs it, the model
// compiled by TorchInductor (torch.compile's defaults: the forward with its loss and the backward
// each one graph of Triton kernels around extern cuBLAS GEMMs and cuDNN's attention) and fused
// AdamW, kernel by kernel as the calibration cases of validation/data/hf_train4_h100.json.gz record
// it (PyTorch 2.11, Triton 3.6, transformers 5.17):
//   forward: the embedding gather fused into the first RMSNorm; per layer the q, k and v
//     projections, one RoPE kernel for q and one for k (the cos/sin table computed in them), the
//     K and V copies of repeat_kv (a compiled model hands sdpa a materialized causal mask, so
//     transformers repeats the heads), cuDNN's flash attention, o_proj, the residual add fused
//     into the next RMSNorm, gate and up, one SiLU-and-mul, down; the head over every position,
//     then the loss as an online log-sum-exp over the logits and one small nll kernel (no fp32
//     copy of the logits);
//   backward: the zeroed buffers the graph allocates, the loss's gradient in one pass over the
//     logits, for every linear layer the weight and input gradients (cuBLAS), each RMSNorm's
//     weight gradient as a split column sum and its input gradient with the residual's gradient
//     added in one kernel, SwiGLU's backward in one kernel, cuDNN's attention backward, the sums
//     of dK and dV over the repeated heads, RoPE's backward, the embedding's backward (an fp32
//     table zeroed, atomically accumulated by the first norm's backward kernel, cast to the
//     weights' type) and, with a tied head, the head's gradient accumulated onto it;
//   optimizer: torch.optim's kernels, uncompiled (fused AdamW in a tuned trainer).
// Dense llama-style decoders (llama, mistral, qwen2's q/k/v biases, qwen3's q/k norms fused with
// RoPE) in bf16 or fp16; workloads/workload.cpp refuses the rest.
#include <fmt/format.h>

#include <string>
#include <tuple>
#include <vector>

#include "models/common.h"
#include "models/families.h"
#include "models/inductor_kernels.h"
#include "models/training_kernels.h"
#include "workloads/hf_train_pieces.h"
#include "workloads/parameter_count.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads {
namespace {
using detail::Grads;
using detail::StepEmitter;
using detail::TrainParam;
using hw::DType;
using hw::TensorUse;
using models::EwFunc;

constexpr DType kF32 = DType::kFp32;

// RoPE's kernels compute cos and sin of each element's angle in place (libdevice's precise sinf
// and cosf: range reduction and polynomials) and rotate_half's indexing: FP32 work an element,
// fitted on the calibration cases' q kernels (3.4 ps an element forward, 4.9 backward, H100).
constexpr double kRopeFlopsPerElem = 220;
constexpr double kRopeBackwardFlopsPerElem = 330;

// A part of a tensor a kernel reads (rows gathered from a table, one row per token).
TensorUse part(const TensorUse& t, double bytes) { return TensorUse{t.tensor, static_cast<std::int64_t>(bytes)}; }

// What the backward reads of a layer's forward.
struct NormTape {
  TensorUse x, weight, rstd;  // the norm's input (after the residual add), its weight, 1/rms per row
};
struct QkNormTape {
  TensorUse q_raw, k_raw, q_weight, k_weight;
};
struct LayerTape {
  NormTape input_norm, post_norm;
  TensorUse h, h2;                      // the normed inputs of attention and the MLP
  TensorUse wq, wk, wv, wo, wg, wu, wd;
  TensorUse q, k, v;                    // sdpa's operands (K and V repeated to every head)
  TensorUse attn;                       // sdpa's output
  TensorUse gate, up, act;
  QkNormTape qk;
};
struct Tape {
  TensorUse table, head, freqs, ids, hidden, logits, lse;
  NormTape final_norm;
  std::vector<LayerTape> layers;
};

// RMSNorm of `x` (plus `residual` when given: the add is fused and its sum written), Inductor's
// reduction over the row: read the row for its sum of squares, read it again to scale it.
NormTape add_norm(StepEmitter& e, const std::string& label, const std::vector<TensorUse>& inputs, TensorUse& out) {
  const std::int64_t T = e.tokens(), d = e.m().d_model;
  NormTape t;
  t.weight = e.weight(label + ".weight", static_cast<double>(d));
  t.rstd = e.new_act(label + ".rstd", static_cast<double>(T), kF32);
  std::vector<TensorUse> reads = inputs;
  reads.push_back(t.weight);
  std::vector<TensorUse> writes;
  out = e.new_act(label, static_cast<double>(T * d));
  writes.push_back(out);
  if (inputs.size() > 1) {
    t.x = e.new_act(label + ".residual", static_cast<double>(T * d));
    writes.push_back(t.x);
  } else {
    t.x = inputs.front();
  }
  writes.push_back(t.rstd);
  e.triton(label, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt", T, d, reads, writes, 2);
  return t;
}

// RMSNorm's backward given d(normed): the weight's gradient (a split column sum of dY * x * rstd)
// and the input's, dX = rstd * (w * dY - x * rstd^2 * mean(w * dY * x)), with the residual
// stream's gradient `dres` added (none for the final norm). `grads`: the partial gradients of the
// normed output, summed in the kernels (the projections that read it).
TensorUse norm_backward(StepEmitter& e, const std::string& label, const NormTape& t, const std::vector<TensorUse>& grads,
                        const TensorUse* dres, Grads& g, const TensorUse* embedding_table = nullptr) {
  const std::int64_t T = e.tokens(), d = e.m().d_model;
  std::vector<TensorUse> reads = grads;
  reads.push_back(t.x);
  reads.push_back(t.rstd);
  const TensorUse dw = e.new_act(label + ".grad_weight", static_cast<double>(d));
  e.emit(label + ".grad_weight", models::lower_triton_column_sum("mul_sum", T, d, reads, dw, e.hw()));
  g.add(t.weight, dw);
  reads.push_back(t.weight);
  if (dres) reads.push_back(*dres);
  const TensorUse dx = e.new_act(label + ".grad_input", static_cast<double>(T * d));
  std::vector<TensorUse> writes{dx};
  std::string name = "triton_red_fused__to_copy_add_div_expand_mul_pow_sum";
  if (embedding_table) {
    // The first norm's kernel also scatters its input gradient into the fp32 embedding gradient.
    writes.push_back(part(*embedding_table, static_cast<double>(T * d) * 4));
    name = "triton_red_fused__to_copy_add_div_embedding_dense_backward_expand_mul_pow_sum";
  }
  e.triton(label + ".grad_input", name, T, d, reads, writes, 2, 256);
  return dx;
}

// q and k after RoPE (Qwen3: after their per-head RMSNorm, fused with it), then repeat_kv.
void attention_inputs(StepEmitter& e, const std::string& L, const TensorUse& q, const TensorUse& k,
                      const TensorUse& v, const TensorUse& freqs, LayerTape& t) {
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), D = m.head_dim, Hq = m.heads, Hkv = m.kv_heads;
  const TensorUse qr = e.new_act(L + ".attn.q_rot", static_cast<double>(T * Hq * D));
  const TensorUse kr = e.new_act(L + ".attn.k_rot", static_cast<double>(T * Hkv * D));
  if (m.qk_norm) {
    t.qk = {q, k, e.weight(L + ".attn.q_norm.weight", static_cast<double>(D)),
            e.weight(L + ".attn.k_norm.weight", static_cast<double>(D))};
    e.triton(L + ".attn.q_norm_rope", "triton_per_fused__to_copy_cos_mean_mul_neg_pow_rsqrt_sin", T * Hq, D,
           {q, t.qk.q_weight, freqs}, {qr}, 1, 0, kRopeFlopsPerElem);
    e.triton(L + ".attn.k_norm_rope", "triton_per_fused__to_copy_cos_mean_mul_neg_pow_rsqrt_sin", T * Hkv, D,
           {k, t.qk.k_weight, freqs}, {kr}, 1, 0, kRopeFlopsPerElem);
  } else {
    e.triton(L + ".attn.rope_q", "triton_poi_fused__to_copy_add_cat_cos_mul_neg_sin", T * Hq * D, 0, {q, freqs}, {qr},
           1, 0, kRopeFlopsPerElem);
    e.triton(L + ".attn.rope_k", "triton_poi_fused__to_copy_add_cat_cos_mul_neg_sin", T * Hkv * D, 0, {k, freqs},
           {kr}, 1, 0, kRopeFlopsPerElem);
  }
  t.q = qr;
  if (Hkv == Hq) {
    t.k = kr;
    t.v = v;
    return;
  }
  t.k = e.triton(L + ".attn.repeat_k", "triton_poi_fused_clone_expand_unsqueeze", T * Hq * D, 0, {kr},
               {e.new_act(L + ".attn.k_repeated", static_cast<double>(T * Hq * D))});
  t.v = e.triton(L + ".attn.repeat_v", "triton_poi_fused_clone_expand_unsqueeze", T * Hq * D, 0, {v},
               {e.new_act(L + ".attn.v_repeated", static_cast<double>(T * Hq * D))});
}

// The forward of decoder layer i from the normed input `h` and the residual stream `x`; returns
// the MLP's output (the next norm adds it to the residual).
TensorUse layer_forward(StepEmitter& e, int i, const TensorUse& x, const TensorUse& h, const TensorUse& freqs,
                        LayerTape& t) {
  const auto& m = e.m();
  const auto& s = e.s();
  const std::string L = fmt::format("layers[{}]", i);
  const std::int64_t T = e.tokens(), d = m.d_model, F = m.d_ff, q_dim = m.heads * m.head_dim,
                     kv_dim = m.kv_heads * m.head_dim;
  const auto w = [&](const std::string& name, std::int64_t n, std::int64_t k) {
    return e.weight(L + "." + name, static_cast<double>(n * k));
  };
  t.h = h;
  t.wq = w("attn.q_proj", q_dim, d);
  t.wk = w("attn.k_proj", kv_dim, d);
  t.wv = w("attn.v_proj", kv_dim, d);
  t.wo = w("attn.o_proj", d, q_dim);
  const TensorUse q = e.linear(L + ".attn.q_proj", T, q_dim, d, m.qkv_bias, h, t.wq);
  const TensorUse k = e.linear(L + ".attn.k_proj", T, kv_dim, d, m.qkv_bias, h, t.wk);
  const TensorUse v = e.linear(L + ".attn.v_proj", T, kv_dim, d, m.qkv_bias, h, t.wv);
  attention_inputs(e, L, q, k, v, freqs, t);
  if (i == 0) {
    // The causal mask sdpa gets, built once (bool, B x S x S).
    e.triton("causal_mask", "triton_poi_fused_add_arange_expand_le_scalar_tensor_unsqueeze_where",
           s.batch * s.new_tokens * s.new_tokens, 0, {},
           {e.new_act("causal_mask", static_cast<double>(s.batch * s.new_tokens * s.new_tokens) / 2)});
  }
  // With the mask materialized, cuDNN's kernel runs unmasked tiles too (no causal skipping).
  t.attn = e.new_act(L + ".attn.out", static_cast<double>(T * q_dim));
  e.b().emit_op(L + ".attn.sdpa",
                models::Op(models::OpKind::kSdpa, e.act(),
                           models::SdpaShape{s.batch, m.heads, s.new_tokens, m.head_dim, false, 0, true}),
                {{"q", t.q}, {"k", t.k}, {"v", t.v}, {"o", t.attn}});
  // Tensor parallelism: the row-parallel o_proj's partial sums all-reduced before the fused add.
  const TensorUse o = e.tp_all_reduce(L + ".attn.allreduce", e.linear(L + ".attn.o_proj", T, d, q_dim, false, t.attn, t.wo),
                                      T * d);
  t.post_norm = add_norm(e, L + ".post_attention_norm", {x, o}, t.h2);
  t.wg = w("mlp.gate_proj", F, d);
  t.wu = w("mlp.up_proj", F, d);
  t.wd = w("mlp.down_proj", d, F);
  t.gate = e.linear(L + ".mlp.gate_proj", T, F, d, false, t.h2, t.wg);
  t.up = e.linear(L + ".mlp.up_proj", T, F, d, false, t.h2, t.wu);
  t.act = e.triton(L + ".mlp.act_and_mul", "triton_poi_fused_mul_silu", T * F, 0, {t.gate, t.up},
                 {e.new_act(L + ".mlp.act", static_cast<double>(T * F))});
  return e.tp_all_reduce(L + ".mlp.allreduce", e.linear(L + ".mlp.down_proj", T, d, F, false, t.act, t.wd), T * d);
}

void forward(StepEmitter& e, Tape& tape) {
  const auto& m = e.m();
  const auto& s = e.s();
  const std::int64_t T = e.tokens(), d = m.d_model, V = m.vocab, half = m.head_dim / 2;
  tape.table = e.weight("embed_tokens", static_cast<double>(V * d));
  tape.head = m.tied_embeddings ? tape.table : e.weight("lm_head", static_cast<double>(V * d));
  tape.ids = e.b().state("input_ids", static_cast<double>(T) * 8);
  // The rotary frequencies: positions in fp32, inv_freq @ positions (CUTLASS SIMT); cos and sin
  // are computed where they are used.
  const TensorUse pos = e.triton("rotary.positions", "triton_poi_fused__to_copy_add_arange_unsqueeze", s.new_tokens,
                               0, {}, {e.new_act("rotary.positions", static_cast<double>(s.new_tokens), kF32)});
  const TensorUse inv = e.b().state("rotary.inv_freq", static_cast<double>(half) * 4);
  tape.freqs = e.new_act("rotary.freqs", static_cast<double>(s.batch * s.new_tokens * half), kF32);
  e.batched_gemm("rotary.matmul", half, s.new_tokens, 1, s.batch, kF32, inv, pos, tape.freqs);
  const auto& w = e.workload();
  TensorUse h;
  TensorUse x;
  tape.layers.resize(static_cast<std::size_t>(m.layers));
  LayerTape& first = tape.layers.front();
  if (w.first_stage() && w.parallel.tensor == 1) {
    // The embedding rows are gathered by the first norm's kernel (and again by the first residual add).
    x = part(tape.table, static_cast<double>(T * d) * e.act_bytes());
    first.input_norm = add_norm(e, "layers[0].input_norm", {x, tape.ids}, h);
    first.input_norm.x = x;
  } else {
    // A vocabulary-parallel embedding (each GPU's rows looked up, the rest zero, all-reduced), or
    // a later pipeline stage's received hidden states, which the first norm reads.
    if (w.first_stage()) {
      x = e.new_act("embed_tokens", static_cast<double>(T * d));
      e.emit("embed_tokens", {models::lower_embedding_lookup(T, d, e.act(), tape.table, x, e.hw())});
      x = e.tp_all_reduce("embed_tokens.allreduce", x, T * d);
    } else {
      x = e.pp_receive("pp.receive", T * d);
    }
    first.input_norm = add_norm(e, "layers[0].input_norm", {x}, h);
  }
  for (int i = 0; i < static_cast<int>(m.layers); ++i) {
    LayerTape& t = tape.layers[static_cast<std::size_t>(i)];
    const TensorUse mlp = layer_forward(e, i, x, h, tape.freqs, t);
    x = t.post_norm.x;
    if (i + 1 == m.layers && !w.last_stage()) {
      // A pipeline stage's output: the residual sum, written for the send.
      x = e.triton("residual", "triton_poi_fused_add", T * d, 0, {x, mlp}, {e.new_act("residual", static_cast<double>(T * d))});
      e.pp_send("pp.send", x, T * d);
      return;
    }
    // The residual add fused into the next layer's input norm (or the final norm).
    const std::string next = i + 1 < m.layers ? fmt::format("layers[{}].input_norm", i + 1) : "final_norm";
    NormTape n = add_norm(e, next, {x, mlp}, h);
    if (i + 1 < m.layers) tape.layers[static_cast<std::size_t>(i + 1)].input_norm = n;
    else tape.final_norm = n;
    x = n.x;
  }
  tape.hidden = h;
  tape.logits = e.linear("lm_head", T, V, d, false, h, tape.head);
  // ForCausalLMLoss compiled: the shifted labels, the rows' max and sum of exponentials in one
  // pass over the logits (no fp32 copy), then the mean of the target log-probabilities.
  const TensorUse labels = e.b().state("labels", static_cast<double>(T) * 8);
  const TensorUse shifted = e.triton("loss.labels_shift", "triton_poi_fused_constant_pad_nd", T, 0, {labels},
                                   {e.new_act("loss.labels_shifted", static_cast<double>(T) * 8, kF32)});
  tape.lse = e.triton("loss.logsumexp", "triton_red_fused__log_softmax__to_copy_prepare_softmax_online", T, V,
                    {tape.logits}, {e.new_act("loss.lse", static_cast<double>(2 * T), kF32)});
  // Tensor parallelism: a vocabulary-parallel loss (Megatron's): the rows' max, sum of
  // exponentials and target logit of each GPU's slice all-reduced, T values each.
  for (const char* what : {"max", "sum_exp", "target_logit"}) {
    const std::string label = fmt::format("loss.{}.allreduce", what);
    e.tp_all_reduce(label, e.new_act(label, static_cast<double>(T), kF32), T);
  }
  e.triton("loss.nll", "triton_red_fused__log_softmax_nll_loss_forward", 1, T,
         {shifted, tape.lse, part(tape.logits, static_cast<double>(T) * 32)},
         {e.new_act("loss.value", 1, kF32)});
}

// The input gradients of the projections that read a norm's output, as its backward takes them:
// summed in its kernel; with tensor parallelism each is one GPU's partial sum, so they are added
// and all-reduced first (Megatron's f).
std::vector<TensorUse> reduced_input_grads(StepEmitter& e, const std::string& label, const std::vector<TensorUse>& grads) {
  if (e.workload().parallel.tensor <= 1) return grads;
  const std::int64_t T = e.tokens(), d = e.m().d_model;
  const TensorUse sum = e.triton(label + ".grad_sum", "triton_poi_fused_add", T * d, 0, grads,
                                 {e.new_act(label + ".grad_sum", static_cast<double>(T * d))});
  return {e.tp_all_reduce(label + ".grad_allreduce", sum, T * d)};
}

// Decoder layer i's backward; `dx` is the residual stream's gradient (updated). The first layer's
// input-norm backward also scatters into the embedding's fp32 gradient `embedding_grad`.
void layer_backward(StepEmitter& e, int i, const LayerTape& t, const Tape& tape, TensorUse& dx, Grads& g,
                    const TensorUse* embedding_grad) {
  const auto& m = e.m();
  const auto& s = e.s();
  const std::string L = fmt::format("layers[{}]", i);
  const std::int64_t T = e.tokens(), d = m.d_model, F = m.d_ff, D = m.head_dim, Hq = m.heads, Hkv = m.kv_heads;
  const std::int64_t q_dim = Hq * D, kv_dim = Hkv * D;
  const DType a = e.act();
  // MLP: down's gradients, SwiGLU's backward in one kernel, up's and gate's.
  const auto [dwd, dp] = detail::gemm_backward(e, L + ".mlp.down_proj", T, d, F, dx, t.act, t.wd);
  g.add(t.wd, dwd);
  const TensorUse dgate = e.new_act(L + ".mlp.grad_gate", static_cast<double>(T * F));
  const TensorUse dup = e.new_act(L + ".mlp.grad_up", static_cast<double>(T * F));
  e.triton(L + ".mlp.grad_act_and_mul", "triton_poi_fused_mul_silu_silu_backward", T * F, 0, {dp, t.gate, t.up},
         {dgate, dup});
  const auto [dwu, dh_up] = detail::gemm_backward(e, L + ".mlp.up_proj", T, F, d, dup, t.h2, t.wu);
  g.add(t.wu, dwu);
  const auto [dwg, dh_gate] = detail::gemm_backward(e, L + ".mlp.gate_proj", T, F, d, dgate, t.h2, t.wg);
  g.add(t.wg, dwg);
  dx = norm_backward(e, L + ".post_attention_norm", t.post_norm, reduced_input_grads(e, L + ".mlp", {dh_up, dh_gate}), &dx, g);

  // Attention: o_proj, cuDNN's backward over the repeated heads, the sums back to the K/V heads.
  const auto [dwo, dattn] = detail::gemm_backward(e, L + ".attn.o_proj", T, d, q_dim, dx, t.attn, t.wo);
  g.add(t.wo, dwo);
  const TensorUse dq = e.new_act(L + ".attn.grad_q", static_cast<double>(T * q_dim));
  TensorUse dk = e.new_act(L + ".attn.grad_k", static_cast<double>(T * q_dim));
  TensorUse dv = e.new_act(L + ".attn.grad_v", static_cast<double>(T * q_dim));
  e.emit(L + ".attn.sdpa_backward",
         models::lower_sdpa_backward(s.batch, Hq, Hq, s.new_tokens, D, false, a, t.q, t.k, t.v, t.attn, dattn, dq, dk,
                                     dv, e.hw(), false, true));
  // The gradients of the repeated (or transposed) K and V, summed into the projections' layout.
  dv = e.triton(L + ".attn.grad_v_sum", "triton_poi_fused_add_squeeze_sum_view", T * kv_dim, 0, {dv},
              {e.new_act(L + ".attn.grad_v_heads", static_cast<double>(T * kv_dim))});
  dk = e.triton(L + ".attn.grad_k_sum", "triton_poi_fused_add_clone_squeeze_sum_transpose_view", T * kv_dim, 0, {dk},
              {e.new_act(L + ".attn.grad_k_heads", static_cast<double>(T * kv_dim))});
  const auto proj_backward = [&](const std::string& name, std::int64_t n, const TensorUse& dy, const TensorUse& wt) {
    const auto [dw, dh] = detail::gemm_backward(e, L + ".attn." + name, T, n, d, dy, t.h, wt);
    g.add(wt, dw);
    if (m.qkv_bias) {
      const TensorUse db = e.new_act(L + ".attn." + name + ".grad_bias", static_cast<double>(n));
      e.emit(L + ".attn." + name + ".grad_bias", models::lower_triton_column_sum("sum", T, n, {dy}, db, e.hw()));
      g.add(e.weight(L + ".attn." + name + ".bias", static_cast<double>(n)), db);
    }
    return dh;
  };
  const TensorUse dh_v = proj_backward("v_proj", kv_dim, dv, t.wv);
  // RoPE's backward (Qwen3: with its q/k norm's, whose weights' gradients are column sums).
  const auto rope_backward = [&](const std::string& name, std::int64_t heads, const TensorUse& dy,
                                 const TensorUse& raw, const TensorUse& nw) {
    const TensorUse out = e.new_act(L + ".attn." + name + ".grad", static_cast<double>(T * heads * D));
    if (!m.qk_norm) {
      return e.triton(L + ".attn." + name + ".grad", "triton_poi_fused__to_copy_add_cat_cos_mul_neg_sin_slice_backward",
                    T * heads * D, 0, {dy, tape.freqs}, {out}, 1, 0, kRopeBackwardFlopsPerElem);
    }
    const TensorUse dw = e.new_act(L + ".attn." + name + ".grad_weight", static_cast<double>(D));
    e.emit(L + ".attn." + name + ".grad_weight",
           models::lower_triton_column_sum("mul_sum_transpose", T * heads, D, {dy, raw}, dw, e.hw()));
    g.add(nw, dw);
    return e.triton(L + ".attn." + name + ".grad",
                  "triton_per_fused__to_copy_add_cat_cos_div_expand_mul_neg_pow_sin_slice_backward", T * heads, D,
                  {dy, raw, nw, tape.freqs}, {out}, 1, 0, kRopeBackwardFlopsPerElem);
  };
  const TensorUse dk_pre = rope_backward("k_norm_rope", Hkv, dk, t.qk.k_raw, t.qk.k_weight);
  const TensorUse dh_k = proj_backward("k_proj", kv_dim, dk_pre, t.wk);
  const TensorUse dq_pre = rope_backward("q_norm_rope", Hq, dq, t.qk.q_raw, t.qk.q_weight);
  const TensorUse dh_q = proj_backward("q_proj", q_dim, dq_pre, t.wq);
  dx = norm_backward(e, L + ".input_norm", t.input_norm, reduced_input_grads(e, L + ".attn", {dh_q, dh_k, dh_v}),
                     embedding_grad ? nullptr : &dx, g, embedding_grad);
}

void backward(StepEmitter& e, const Tape& tape, Grads& g) {
  const auto& w = e.workload();
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), d = m.d_model, V = m.vocab, kv_dim = m.kv_heads * m.head_dim;
  const DType a = e.act();
  // A tied head on a later pipeline stage is its own copy of the table: its gradient is its own.
  const bool tied = m.tied_embeddings && w.first_stage();
  // The loss's seed and the zeroed buffers the compiled backward allocates (two a layer of the
  // K/V projections' size, and the logits' gradient).
  if (w.last_stage()) e.pointwise("loss.grad_seed", EwFunc::kFill, 1, kF32, kF32, {}, false);
  for (int i = 0; i < static_cast<int>(m.layers); ++i) {
    for (const char* which : {"k", "v"}) {
      e.pointwise(fmt::format("layers[{}].attn.grad_{}_zero", i, which), EwFunc::kFill, T * kv_dim, a, a, {}, false);
    }
  }
  TensorUse dlogits, dx;
  if (w.last_stage()) {
    const TensorUse dlogits0 = e.pointwise("loss.grad_zero", EwFunc::kFill, T * V, a, a, {}, false);
    // log_softmax and nll_loss's backward in one kernel: a loop over the row for the sum of the nll
    // gradient (index compares, no loads), then a loop reading the logits and writing their
    // gradient; it reads the zeroed nll gradient only at the targets, but the buffer lives to here.
    dlogits = e.triton("loss.grad_logits", "triton_red_fused__log_softmax__log_softmax_backward_data_nll_loss_backward",
                       T, V, {tape.logits, tape.lse, part(dlogits0, static_cast<double>(T) * 32)},
                       {e.new_act("loss.grad_logits", static_cast<double>(T * V))}, 1, 256);
    TensorUse dhead, dh;
    if (tied) {
      // The head's weight gradient comes last, accumulated onto the embedding's.
      dh = detail::mm(e, "lm_head.grad_input", T, d, V, dlogits, tape.head);
    } else {
      std::tie(dhead, dh) = detail::gemm_backward(e, "lm_head", T, V, d, dlogits, tape.hidden, tape.head);
      g.add(tape.head, dhead);
    }
    dh = e.tp_all_reduce("lm_head.grad_allreduce", dh, T * d);  // a vocabulary-parallel head's partial sums
    dx = norm_backward(e, "final_norm", tape.final_norm, {dh}, nullptr, g);
  } else {
    dx = e.pp_receive("pp.grad_receive", T * d, true);  // the next stage's gradient of this one's output
  }
  // The embedding's gradient accumulates in an fp32 table, zeroed first.
  TensorUse acc;
  for (int i = static_cast<int>(m.layers) - 1; i >= 0; --i) {
    const bool embedding = i == 0 && w.first_stage();
    if (embedding) {
      acc = e.triton("embed_tokens.grad_zero", "triton_poi_fused_embedding_dense_backward", V * d, 0, {},
                     {e.new_act("embed_tokens.grad_fp32", static_cast<double>(V * d), kF32)});
    }
    layer_backward(e, i, tape.layers[static_cast<std::size_t>(i)], tape, dx, g, embedding ? &acc : nullptr);
  }
  if (!w.first_stage()) {
    e.pp_send("pp.grad_send", dx, T * d, true);
    return;
  }
  TensorUse demb = e.triton("embed_tokens.grad_cast", "triton_poi_fused_embedding_dense_backward", V * d, 0, {acc},
                            {e.new_act("embed_tokens.grad_weight", static_cast<double>(V * d))});
  if (tied && w.last_stage()) {
    // One parameter: its gradient copied, then the head's GEMM accumulates onto it (addmm).
    const TensorUse copy = e.new_act("embed_tokens.grad_copy", static_cast<double>(V * d));
    e.emit("embed_tokens.grad_copy", {models::detail::memcpy_launch(false, static_cast<double>(copy.bytes), demb, copy, e.hw())});
    // addmm(copy, dlogits^T, h): the GEMM's epilogue reads the copy (beta = 1).
    const TensorUse dw = e.new_act("lm_head.grad_weight", static_cast<double>(V * d));
    models::GemmProblem gp;
    gp.M = V;
    gp.N = d;
    gp.K = T;
    gp.dtype = e.math();
    gp.a = dlogits.tensor;
    gp.b = tape.hidden.tensor;
    gp.c = dw.tensor;
    auto launches = models::lower_gemm(gp, e.hw(), "");
    launches.back().reads.push_back(copy);
    e.emit("lm_head.grad_weight", std::move(launches));
    demb = dw;
  }
  g.add(tape.table, demb);
}

// model.parameters() order (LlamaForCausalLM).
std::vector<TrainParam> parameters(StepEmitter& e, const Tape& tape) {
  const auto& m = e.m();
  std::vector<TrainParam> out;
  const auto add = [&](const TensorUse& w) {
    out.push_back({w, static_cast<std::int64_t>(static_cast<double>(w.bytes) / e.act_bytes())});
  };
  const auto& w = e.workload();
  if (w.first_stage()) add(tape.table);
  for (std::size_t i = 0; i < tape.layers.size(); ++i) {
    const LayerTape& t = tape.layers[i];
    const std::string L = fmt::format("layers[{}].attn.", i);
    const auto bias = [&](const char* name, std::int64_t n) {
      if (m.qkv_bias) add(e.weight(L + name + ".bias", static_cast<double>(n)));
    };
    add(t.wq);
    bias("q_proj", m.heads * m.head_dim);
    add(t.wk);
    bias("k_proj", m.kv_heads * m.head_dim);
    add(t.wv);
    bias("v_proj", m.kv_heads * m.head_dim);
    add(t.wo);
    if (m.qk_norm) {
      add(t.qk.q_weight);
      add(t.qk.k_weight);
    }
    add(t.wg);
    add(t.wu);
    add(t.wd);
    add(t.input_norm.weight);
    add(t.post_norm.weight);
  }
  if (w.last_stage()) {
    add(tape.final_norm.weight);
    if (!m.tied_embeddings || !w.first_stage()) add(tape.head);  // a later stage's tied head is a copy
  }
  return out;
}

}  // namespace

void lower_fused_train_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  StepEmitter e(w, s, b);
  Grads g;
  g.e = &e;
  Tape tape;
  for (int micro = 0; micro < w.accumulation_steps; ++micro) {
    g.accumulate = micro > 0;
    tape = {};
    b.begin_phase("forward");
    forward(e, tape);
    // The training loop divides each micro-batch's loss by the number of micro-batches.
    if (w.accumulation_steps > 1) e.pointwise("loss.accumulation_scale", EwFunc::kMulScalar, 1, kF32, kF32, {}, false);
    b.begin_phase("backward");
    backward(e, tape, g);
  }
  for (const auto& [name, grad] : g.of) b.hold_to_end(grad);
  const auto params = parameters(e, tape);
  detail::gradient_sync(e, params, g);  // data parallelism: DDP's buckets beside the backward
  if (w.optimizer == Optimizer::kNone) return;
  b.begin_phase("optimizer");
  detail::train_optimizer_step(e, params, g, w.optimizer);
}

}  // namespace gpusim::workloads
