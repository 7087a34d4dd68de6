// An idealized serving-engine step (vLLM/TensorRT-LLM style), for comparison with hf-eager:
// per layer one fused residual-add + RMSNorm kernel before attention and before the MLP, one
// fused QKV GEMM, one fused RoPE kernel that also writes K and V into a paged cache in place
// (no cache copy), the attention kernel (flash prefill, split-KV flash decoding), o_proj, one
// fused gate/up GEMM, one fused SiLU-and-mul, down_proj. MoE layers run a fused top-k softmax,
// two grouped GEMMs over the routed tokens and a fused unpermute-and-reduce. No mask checks,
// no host round trips, no dtype round trips through fp32.
#include <fmt/format.h>

#include <algorithm>

#include "models/families.h"
#include "sim/error.h"
#include "workloads/ragged_attention.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads {
namespace {
using detail::StepEmitter;
using hw::DType;
using hw::TensorUse;
using models::EwFunc;

bool inductor(const StepEmitter& e) {
  return e.workload().serving.elementwise == ModelWorkload::ServingKernels::Elementwise::kInductor;
}

// Inductor's pointwise kernels compiled for dynamic shapes (one graph for every step size): 512
// elements a block of 256 threads, and an element's offsets computed from runtime sizes with
// 64-bit divisions and remainders, FP32-pipe work an element (in FLOP units: 2 a lane-cycle).
// Fitted on the calibration steps of validation/data/serve_steps_h100.json.gz (Llama-3.2-1B mix 0:
// SiLU-and-mul 4.1 ps an element, q's RoPE 10.4, k's RoPE and cache write 13.3 on the H100; the
// 8B model's mix 4 gives 4.4, 11.2 and 13.6).
constexpr std::int64_t kDynamicBlock = 512;
constexpr double kSiluMulIndexFlops = 240;  // one division by the row width, its remainder
constexpr double kRopeQIndexFlops = 610;    // heads, the cat's halves, the table gather
constexpr double kRopeKIndexFlops = 790;    // the same for K and V, and the cache slot

TensorUse dynamic_pointwise(StepEmitter& e, const std::string& label, const std::string& name, std::int64_t n,
                            const std::vector<TensorUse>& reads, const std::vector<TensorUse>& writes, double flops) {
  return e.triton(label, name, n, 0, reads, writes, 1, 256, flops, (n + kDynamicBlock - 1) / kDynamicBlock);
}

TensorUse fused_norm(StepEmitter& e, const std::string& label, const TensorUse& x) {
  const std::int64_t T = e.tokens(), d = e.m().d_model;
  const TensorUse y = e.new_act(label, static_cast<double>(T * d));
  if (inductor(e) && e.m().norm == Norm::kRmsNorm) {
    // Inductor's looped reduction of the residual add and RMSNorm: reads the row for its sum of
    // squares, again to scale it; writes the normed row and the new residual.
    e.triton(label, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt", T, d,
             {x, e.weight(label + ".weight", static_cast<double>(d))}, {y, e.new_act(label + ".residual", static_cast<double>(T * d))},
             2);
    return y;
  }
  const auto kind = e.m().norm == Norm::kRmsNorm ? models::OpKind::kRmsNorm : models::OpKind::kLayerNorm;
  e.b().emit_op(label, models::Op(kind, e.act(), models::RowShape{T, d}),
                {{"x", x}, {"y", y}, {"weight", e.weight(label + ".weight", static_cast<double>(d))}});
  return y;
}

TensorUse gated_mlp(StepEmitter& e, const std::string& label, const TensorUse& h, std::int64_t width) {
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), d = m.d_model;
  const bool gated = m.activation != Activation::kGelu;
  const std::int64_t up_width = gated ? 2 * width : width;
  const TensorUse up = e.linear(label + ".gate_up_proj", T, up_width, d, m.mlp_bias, h,
                                e.weight(label + ".gate_up_proj", static_cast<double>(up_width * d)));
  // One kernel reads the gate and up halves and writes act(gate) * up.
  const TensorUse act =
      inductor(e) ? dynamic_pointwise(e, label + ".act_and_mul", "triton_poi_fused_mul_silu_split", T * width, {up},
                                      {e.new_act(label + ".act", static_cast<double>(T * width))}, kSiluMulIndexFlops)
                  : e.pointwise(label + ".act_and_mul", m.activation == Activation::kSwiglu ? EwFunc::kSilu : EwFunc::kGelu,
                                T * width, e.act(), e.act(), {up}, false);
  return e.linear(label + ".down_proj", T, d, width, m.mlp_bias, act,
                  e.weight(label + ".down_proj", static_cast<double>(width * d)));
}

TensorUse fused_moe(StepEmitter& e, const std::string& label, const TensorUse& h,
                    const std::vector<double>& expert_weights) {
  const auto& m = e.m();
  const auto& cfg = *m.moe;
  const std::int64_t T = e.tokens(), d = m.d_model, E = cfg.experts, k = cfg.top_k, S = T * k;
  const std::int64_t F = cfg.expert_d_ff;
  const TensorUse logits = e.linear(label + ".gate", T, E, d, false, h, e.weight(label + ".gate", static_cast<double>(E * d)));
  const TensorUse top = e.new_bytes(label + ".topk_softmax", static_cast<double>(S) * 8);
  e.emit(label + ".topk_softmax", {models::lower_topk(T, E, k, logits, top, e.hw()).front()});
  const auto rows = expert_rows(T, k, E, expert_weights);
  const TensorUse up = e.new_act(label + ".experts.gate_up", static_cast<double>(S * 2 * F));
  e.emit(label + ".experts.gate_up_proj",
         models::lower_grouped_gemm(rows, 2 * F, d, e.math(), h, e.weight(label + ".experts.gate_up_proj", static_cast<double>(E * 2 * F * d)), up, e.hw()));
  const TensorUse act = e.pointwise(label + ".experts.act_and_mul", EwFunc::kSilu, S * F, e.act(), e.act(), {up}, false);
  const TensorUse down = e.new_act(label + ".experts.down", static_cast<double>(S * d));
  e.emit(label + ".experts.down_proj",
         models::lower_grouped_gemm(rows, d, F, e.math(), act, e.weight(label + ".experts.down_proj", static_cast<double>(E * F * d)), down, e.hw()));
  const TensorUse out = e.new_act(label + ".experts.unpermute", static_cast<double>(T * d));
  e.emit(label + ".experts.unpermute_reduce",
         {models::lower_reduce(T * d, k, e.act(), e.act(), false, "moe_unpermute_reduce", down, out, e.hw())});
  if (cfg.shared_experts == 0) return out;
  const TensorUse shared = gated_mlp(e, label + ".shared_experts", h, cfg.shared_experts * cfg.shared_expert_d_ff);
  return e.pointwise(label + ".shared_add", EwFunc::kAdd, T * d, e.act(), e.act(), {out, shared}, false);
}

// torch-style batched GEMM: `batch` products of [M, K] x [K, N].
TensorUse batched(StepEmitter& e, const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
                  std::int64_t batch, const TensorUse& a, const TensorUse& b) {
  const TensorUse c = e.new_act(label, static_cast<double>(batch * M * N));
  e.batched_gemm(label, M, N, K, batch, e.math(), a, b, c);
  return c;
}

// Multi-head latent attention as serving engines run it (vLLM with FlashMLA): the cache holds the
// latent and the rotated shared key (kv_lora_rank + qk_rope_head_dim per token, one head). Decode
// absorbs kv_b_proj into the query and the output (per-head batched GEMMs) and attends over the
// latent cache once for all heads; prefill expands the new tokens' keys and values and runs
// flash attention at head dim qk_nope + qk_rope.
TensorUse mla_attention(StepEmitter& e, const std::string& L, const TensorUse& h) {
  const auto& s = e.s();
  const auto& m = e.m();
  const auto& mla = *m.mla;
  const std::int64_t T = e.tokens(), d = m.d_model, H = m.heads;
  const std::int64_t qk = mla.qk_head_dim(), nope = mla.qk_nope_head_dim, rd = mla.qk_rope_head_dim;
  const std::int64_t r = mla.kv_lora_rank, vd = mla.v_head_dim;
  const auto w = [&](const std::string& name, std::int64_t n, std::int64_t k) {
    return e.weight(L + "." + name, static_cast<double>(n * k));
  };
  TensorUse q;
  if (mla.q_lora_rank == 0) {
    q = e.linear(L + ".attn.q_proj", T, H * qk, d, false, h, w("q_proj", H * qk, d));
  } else {
    const std::int64_t qr = mla.q_lora_rank;
    TensorUse qa = e.linear(L + ".attn.q_a_proj", T, qr, d, false, h, w("q_a_proj", qr, d));
    const TensorUse qn = e.new_act(L + ".attn.q_a_layernorm", static_cast<double>(T * qr));
    e.b().emit_op(L + ".attn.q_a_layernorm", models::Op(models::OpKind::kRmsNorm, e.act(), models::RowShape{T, qr}),
                  {{"x", qa}, {"y", qn}, {"weight", e.weight(L + ".attn.q_a_layernorm", static_cast<double>(qr))}});
    q = e.linear(L + ".attn.q_b_proj", T, H * qk, qr, false, qn, w("q_b_proj", H * qk, qr));
  }
  const TensorUse ckv = e.linear(L + ".attn.kv_a_proj_with_mqa", T, r + rd, d, false, h, w("kv_a_proj_with_mqa", r + rd, d));
  const std::int64_t cache_tokens = s.past_tokens + s.new_tokens;
  // The latent's RMSNorm, RoPE on q_pe and k_pe, and the cache write in one pass.
  const TensorUse fresh = e.pointwise(L + ".attn.norm_rope_and_cache", EwFunc::kMul, T * (r + rd + H * rd), e.act(),
                                      e.act(), {ckv, q}, false);
  const TensorUse cache = e.b().state(L + ".attn.latent_cache",
                                      static_cast<double>(s.batch * cache_tokens * (r + rd)) * e.act_bytes());
  const TensorUse w_kv_b = w("kv_b_proj", H * (nope + vd), r);
  TensorUse o;
  if (s.past_tokens > 0) {
    const TensorUse ql = batched(e, L + ".attn.q_absorb", T, r, nope, H, q, w_kv_b);
    const TensorUse ol = e.new_act(L + ".attn.out_latent", static_cast<double>(T * H * r));
    e.emit(L + ".attn.flash_mla", models::lower_flash_mla(s.batch, H, cache_tokens, r, rd, e.act(), ql, cache, ol, e.hw()));
    o = batched(e, L + ".attn.v_absorb", T, vd, r, H, ol, w_kv_b);
  } else {
    const TensorUse kv = e.linear(L + ".attn.kv_b_proj", T, H * (nope + vd), r, false, fresh, w_kv_b);
    o = e.new_act(L + ".attn.out", static_cast<double>(T * H * vd));
    e.b().emit_op(L + ".attn.flash_attention",
                  models::Op(models::OpKind::kSdpa, e.act(), models::SdpaShape{s.batch, H, s.new_tokens, qk, true}),
                  {{"q", q}, {"k", kv}, {"v", kv}, {"o", o}});
  }
  return e.linear(L + ".attn.o_proj", T, d, H * vd, false, o, w("o_proj", d, H * vd));
}

// Multi- or grouped-query attention of layer i: the fused QKV GEMM (and q/k norm), one RoPE-and-
// cache kernel, flash attention or flash decoding, o_proj. Returns o_proj's output.
TensorUse gqa_attention(StepEmitter& e, const std::string& L, const TensorUse& h, std::int64_t i) {
  const auto& s = e.s();
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), d = m.d_model, q_dim = m.heads * m.head_dim;
  const std::int64_t kv_dim = m.kv_heads * m.head_dim;
  TensorUse qkv = e.linear(L + ".attn.qkv_proj", T, q_dim + 2 * kv_dim, d, m.qkv_bias, h,
                           e.weight(L + ".attn.qkv_proj", static_cast<double>(d * (q_dim + 2 * kv_dim))));
  if (m.qk_norm) {
    // Per-head RMSNorm of q and k in one kernel over their rows.
    const std::int64_t rows = T * (m.heads + m.kv_heads);
    const TensorUse y = e.new_act(L + ".attn.qk_norm", static_cast<double>(rows * m.head_dim));
    e.b().emit_op(L + ".attn.qk_norm", models::Op(models::OpKind::kRmsNorm, e.act(), models::RowShape{rows, m.head_dim}),
                  {{"x", qkv}, {"y", y}, {"weight", e.weight(L + ".attn.qk_norm", 2.0 * static_cast<double>(m.head_dim))}});
    qkv = y;
  }
  // RoPE on q and k, and K/V stored into the paged cache, in one pass over the QKV output. A
  // windowed layer attends (and keeps) its window only.
  // Tokens kept per sequence (a windowed layer keeps its window), and in the whole cache.
  const auto kept = [&](const SeqSlice& seq) {
    const std::int64_t tokens = seq.past_tokens + seq.new_tokens;
    return m.sliding_layer(i) && (seq.past_tokens > 0 || s.ragged()) ? std::min(tokens, *m.sliding_window) : tokens;
  };
  const std::int64_t cache_tokens = kept(SeqSlice{s.new_tokens, s.past_tokens});  // uniform steps
  std::int64_t all_cached = s.batch * cache_tokens;
  if (s.ragged()) {
    all_cached = 0;
    for (const SeqSlice& seq : s.seqs) all_cached += kept(seq);
  }
  const TensorUse cache = e.b().state(L + ".attn.kv_cache",
                                      static_cast<double>(2 * all_cached * kv_dim) * e.act_bytes());
  TensorUse q;
  if (inductor(e)) {
    // Inductor splits it in two: q's rotation, then k's with K and V written into the cache; each
    // gathers its tokens' rows of the cos and sin tables.
    const double eb = e.act_bytes();
    const TensorUse tables = e.weight(L + ".attn.rope_tables", static_cast<double>(2 * T * m.head_dim));
    q = dynamic_pointwise(e, L + ".attn.rope_q", "triton_poi_fused_add_cat_index_mul_neg_slice_unsqueeze_view", T * q_dim,
                          {TensorUse{qkv.tensor, static_cast<std::int64_t>(static_cast<double>(T * q_dim) * eb)}, tables},
                          {e.new_act(L + ".attn.q", static_cast<double>(T * q_dim))}, kRopeQIndexFlops);
    dynamic_pointwise(e, L + ".attn.rope_k_and_cache", "triton_poi_fused_add_cat_index_index_copy_mul_neg_slice_unsqueeze_view",
                      T * kv_dim, {TensorUse{qkv.tensor, static_cast<std::int64_t>(static_cast<double>(2 * T * kv_dim) * eb)}, tables},
                      {TensorUse{cache.tensor, static_cast<std::int64_t>(static_cast<double>(2 * T * kv_dim) * eb)}},
                      kRopeKIndexFlops);
  } else {
    q = e.pointwise(L + ".attn.rope_and_cache", EwFunc::kMul, T * (q_dim + 2 * kv_dim), e.act(), e.act(), {qkv}, false);
  }
  const TensorUse o = e.new_act(L + ".attn.out", static_cast<double>(T * q_dim));
  const std::map<std::string, TensorUse> names{{"q", q}, {"k", cache}, {"v", cache}, {"o", o}};
  if (s.ragged()) {
    ragged_attention(e, L + ".attn", q, cache, o, i);
  } else if (s.past_tokens > 0) {
    e.b().emit_op(L + ".attn.flash_decoding",
                  models::Op(models::OpKind::kSdpaDecode, e.act(),
                             models::SdpaDecodeShape{s.batch, m.heads, m.kv_heads, cache_tokens, m.head_dim}),
                  names);
  } else {
    e.b().emit_op(L + ".attn.flash_attention",
                  models::Op(models::OpKind::kSdpa, e.act(),
                             models::SdpaShape{s.batch, m.heads, s.new_tokens, m.head_dim, true,
                                               m.sliding_layer(i) ? *m.sliding_window : 0}),
                  names);
  }
  return e.linear(L + ".attn.o_proj", T, d, q_dim, m.attn_out_bias, o,
                  e.weight(L + ".attn.o_proj", static_cast<double>(q_dim * d)));
}

}  // namespace

void lower_fused_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  StepEmitter e(w, s, b);
  const auto& m = w.model;
  const std::int64_t T = e.tokens(), d = m.d_model;
  if (s.ragged() && m.mla) throw ModelError("serving steps of multi-head latent attention models are not modeled yet");
  if (!s.ragged() && s.past_tokens > 0 && s.new_tokens > 1) {
    throw ModelError("fused lowering: chunked prefill against a filled cache is modeled for ragged (serving) steps only");
  }
  const TensorUse table = e.weight("embed_tokens", static_cast<double>(m.vocab * d));
  TensorUse x;
  if (w.first_stage()) {
    x = e.new_act("embed_tokens", static_cast<double>(T * d));
    e.emit("embed_tokens", {models::lower_embedding_lookup(T, d, e.act(), table, x, e.hw())});
    x = e.tp_all_reduce("embed_tokens.allreduce", x, T * d);  // vocabulary-parallel embedding
  } else {
    x = e.pp_receive("pp.receive", T * d);  // a pipeline's later stages: the hidden states
  }
  for (int i = 0; i < static_cast<int>(b.layers_to_lower(m.layers)); ++i) {
    b.begin_layer();
    const std::string L = fmt::format("layers[{}]", i);
    const TensorUse h = fused_norm(e, L + ".input_norm", x);
    TensorUse proj = m.mla ? mla_attention(e, L, h) : gqa_attention(e, L, h, i);
    proj = e.tp_all_reduce(L + ".attn.allreduce", proj, T * d);  // row-parallel o_proj's partial sums
    // Gemma's norm after attention, then (as for every model) the residual add fused into the
    // next norm: x + proj is written once, by it.
    if (m.sandwich_norms) proj = fused_norm(e, L + ".post_attention_norm", proj);
    const TensorUse h2 = fused_norm(e, L + (m.sandwich_norms ? ".pre_feedforward_norm" : ".post_attention_norm"), proj);
    const bool dense = !m.moe_layer(i);
    if (dense) {
      x = gated_mlp(e, L + ".mlp", h2, m.d_ff);
    } else {
      // Expert parallelism over a data-parallel group: routed rows out to their experts' GPUs and back.
      const std::int64_t routed = T * m.moe->top_k * d;
      x = e.expert_all_to_all(
          L + ".moe.combine",
          fused_moe(e, L + ".moe", e.expert_all_to_all(L + ".moe.dispatch", h2, routed),
                    w.expert_weights_for(i)),
          routed);
    }
    x = e.tp_all_reduce(L + ".mlp.allreduce", x, T * d);
    if (m.sandwich_norms) x = fused_norm(e, L + ".post_feedforward_norm", x);
  }
  b.end_layers();
  if (!w.last_stage()) {
    e.pp_send("pp.send", x, T * d);
    return;
  }
  const TensorUse h = fused_norm(e, "final_norm", x);
  const TensorUse head = m.tied_embeddings ? table : e.weight("lm_head", static_cast<double>(m.vocab * d));
  // Logits for the sequences that sample a token only (every sequence of a uniform step).
  if (s.sampled() > 0) {
    const TensorUse logits = e.linear("lm_head", s.sampled(), m.vocab, d, false, h, head);
    e.tp_all_gather("lm_head.allgather", logits, s.sampled() * m.vocab);  // vocabulary-parallel lm_head
  }
}

}  // namespace gpusim::workloads
