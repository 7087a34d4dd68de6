// An idealized serving-engine step (vLLM/TensorRT-LLM style), for comparison with hf-eager:
// per layer one fused residual-add + RMSNorm kernel before attention and before the MLP, one
// fused QKV GEMM, one fused RoPE kernel that also writes K and V into a paged cache in place
// (no cache copy), the attention kernel (flash prefill, split-KV flash decoding), o_proj, one
// fused gate/up GEMM, one fused SiLU-and-mul, down_proj. MoE layers run a fused top-k softmax,
// two grouped GEMMs over the routed tokens and a fused unpermute-and-reduce. No mask checks,
// no host round trips, no dtype round trips through fp32.
#include <fmt/format.h>

#include "sim/error.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads {
namespace {
using detail::StepEmitter;
using hw::DType;
using hw::TensorUse;
using models::EwFunc;

TensorUse fused_norm(StepEmitter& e, const std::string& label, const TensorUse& x) {
  const std::int64_t T = e.tokens(), d = e.m().d_model;
  const TensorUse y = e.new_act(label, static_cast<double>(T * d));
  const auto kind = e.m().norm == Norm::kRmsNorm ? models::OpKind::kRmsNorm : models::OpKind::kLayerNorm;
  e.b().emit_op(label, models::Op(kind, e.act(), models::RowShape{T, d}),
                {{"x", x}, {"y", y}, {"weight", e.weight(label + ".weight", static_cast<double>(d))}});
  return y;
}

TensorUse gated_mlp(StepEmitter& e, const std::string& label, const TensorUse& h, std::int64_t width) {
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), d = m.d_model;
  const bool gated = m.activation == Activation::kSwiglu;
  const std::int64_t up_width = gated ? 2 * width : width;
  const TensorUse up = e.linear(label + ".gate_up_proj", T, up_width, d, m.mlp_bias, h,
                                e.weight(label + ".gate_up_proj", static_cast<double>(up_width * d)));
  // One kernel reads the gate and up halves and writes act(gate) * up.
  const TensorUse act = e.pointwise(label + ".act_and_mul", gated ? EwFunc::kSilu : EwFunc::kGelu,
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
  const auto rows = expert_rows(S, E, expert_weights);
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

}  // namespace

void lower_fused_step(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b) {
  StepEmitter e(w, s, b);
  const auto& m = w.model;
  const std::int64_t T = e.tokens(), d = m.d_model, q_dim = m.heads * m.head_dim;
  const std::int64_t kv_dim = m.kv_heads * m.head_dim;
  if (s.past_tokens > 0 && s.new_tokens > 1) {
    throw ModelError("fused lowering: chunked prefill against a filled cache is not modeled");
  }
  const TensorUse table = e.weight("embed_tokens", static_cast<double>(m.vocab * d));
  TensorUse x = e.new_act("embed_tokens", static_cast<double>(T * d));
  e.emit("embed_tokens", {models::lower_embedding_lookup(T, d, e.act(), table, x, e.hw())});
  for (int i = 0; i < static_cast<int>(b.layers_to_lower(m.layers)); ++i) {
    b.begin_layer();
    const std::string L = fmt::format("layers[{}]", i);
    const TensorUse h = fused_norm(e, L + ".input_norm", x);
    const TensorUse qkv = e.linear(L + ".attn.qkv_proj", T, q_dim + 2 * kv_dim, d, m.qkv_bias, h,
                                   e.weight(L + ".attn.qkv_proj", static_cast<double>(d * (q_dim + 2 * kv_dim))));
    // RoPE on q and k, and K/V stored into the paged cache, in one pass over the QKV output.
    const std::int64_t cache_tokens = s.past_tokens + s.new_tokens;
    const TensorUse q = e.pointwise(L + ".attn.rope_and_cache", EwFunc::kMul, T * (q_dim + 2 * kv_dim), e.act(),
                                    e.act(), {qkv}, false);
    const TensorUse cache = b.state(L + ".attn.kv_cache",
                                    static_cast<double>(2 * s.batch * cache_tokens * kv_dim) * e.act_bytes());
    const TensorUse o = e.new_act(L + ".attn.out", static_cast<double>(T * q_dim));
    const std::map<std::string, TensorUse> names{{"q", q}, {"k", cache}, {"v", cache}, {"o", o}};
    if (s.past_tokens > 0) {
      b.emit_op(L + ".attn.flash_decoding",
                models::Op(models::OpKind::kSdpaDecode, e.act(),
                           models::SdpaDecodeShape{s.batch, m.heads, m.kv_heads, cache_tokens, m.head_dim}),
                names);
    } else {
      b.emit_op(L + ".attn.flash_attention",
                models::Op(models::OpKind::kSdpa, e.act(), models::SdpaShape{s.batch, m.heads, s.new_tokens, m.head_dim, true}),
                names);
    }
    const TensorUse proj = e.linear(L + ".attn.o_proj", T, d, q_dim, m.attn_out_bias, o,
                                    e.weight(L + ".attn.o_proj", static_cast<double>(q_dim * d)));
    // The residual add is fused into the next norm: x + proj is written once, by it.
    const TensorUse h2 = fused_norm(e, L + ".post_attention_norm", proj);
    const bool dense = !m.moe_layer(i);
    x = dense ? gated_mlp(e, L + ".mlp", h2, m.d_ff) : fused_moe(e, L + ".moe", h2, w.expert_weights);
  }
  b.end_layers();
  const TensorUse h = fused_norm(e, "final_norm", x);
  const TensorUse head = m.tied_embeddings ? table : e.weight("lm_head", static_cast<double>(m.vocab * d));
  e.linear("lm_head", s.batch, m.vocab, d, false, h, head);
}

}  // namespace gpusim::workloads
