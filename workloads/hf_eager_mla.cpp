// Multi-head latent attention as transformers 5.17 runs it in eager mode
// (modeling_deepseek_v2.py, DeepseekV2Attention; DeepSeek-V3 is the same code): the DynamicCache
// holds the normalized latent (kv_lora_rank per token) and the rotated shared key
// (qk_rope_head_dim), one "head" each, and every step expands the whole cache through kv_b_proj
// into per-head keys and values before F.scaled_dot_product_attention. Checked against the
// DeepSeek-V2-Lite and DeepSeek-V3 calibration cases of validation/data/hf_models3_h100.json.gz.
#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
#include "workloads/hf_eager_pieces.h"

namespace gpusim::workloads::detail {
namespace {
using hw::DType;
using models::EwFunc;
constexpr DType kF32 = DType::kFp32;

// The latent cache of one layer grown by this step's tokens (the first update cats onto an
// empty tensor: the strided kernel).
TensorUse latent_append(StepEmitter& e, const std::string& label, const std::string& which,
                        std::int64_t width, const TensorUse& fresh) {
  const auto& s = e.s();
  const std::int64_t per_token = s.batch * width;
  const double eb = e.act_bytes();
  const TensorUse past = e.b().state(fmt::format("{}.{}.cache", label, which),
                                     static_cast<double>(per_token * s.past_tokens) * eb);
  const TensorUse grown = e.b().state(fmt::format("{}.{}.cache_new", label, which),
                                      static_cast<double>(per_token * (s.past_tokens + s.new_tokens)) * eb);
  const bool vectorized = s.past_tokens > 0 && s.new_tokens == 1;
  e.emit(label + "." + which + "_cat",
         {models::lower_cat({per_token * s.past_tokens, per_token * s.new_tokens}, e.act(), vectorized,
                            {past, fresh}, grown, e.hw())});
  return grown;
}

}  // namespace

std::pair<TensorUse, TensorUse> mla_rotary_table(StepEmitter& e) {
  const auto& s = e.s();
  const auto& mla = *e.m().mla;
  const std::int64_t half = mla.qk_rope_head_dim / 2, T = e.tokens();
  const TensorUse pos = e.b().state("position_ids", static_cast<double>(T) * 8);
  const TensorUse posf = e.pointwise("rotary.positions", EwFunc::kCast, T, DType::kBf16, kF32, {pos}, false);
  const TensorUse inv = e.b().state("rotary.inv_freq", static_cast<double>(half) * 4);
  const TensorUse freqs = e.new_act("rotary.freqs", static_cast<double>(T * half), kF32);
  e.batched_gemm("rotary.matmul", half, s.new_tokens, 1, s.batch, kF32, inv, posf, freqs);
  // torch.polar(torch.ones_like(freqs), freqs) * attention_scaling: complex64 (two fp32 each).
  const TensorUse ones = e.pointwise("rotary.ones", EwFunc::kFill, T * half, kF32, kF32, {}, false);
  const TensorUse polar = e.pointwise("rotary.polar", EwFunc::kCos, 2 * T * half, kF32, kF32, {ones, freqs}, false);
  const TensorUse cis = e.pointwise("rotary.scale", EwFunc::kMulScalar, 2 * T * half, kF32, kF32, {polar}, false);
  return {cis, cis};
}

TensorUse mla_attention(StepEmitter& e, const std::string& label, const TensorUse& h,
                        const std::pair<TensorUse, TensorUse>& rot, MlaTape* tape) {
  const auto& s = e.s();
  const auto& m = e.m();
  const auto& mla = *m.mla;
  const std::int64_t T = e.tokens(), d = m.d_model, H = m.heads;
  const std::int64_t qk = mla.qk_head_dim(), nope = mla.qk_nope_head_dim, rd = mla.qk_rope_head_dim;
  const std::int64_t r = mla.kv_lora_rank, vd = mla.v_head_dim;
  const DType a = e.act();
  const auto w = [&](const std::string& name, std::int64_t n, std::int64_t k) {
    return e.weight(label + "." + name, static_cast<double>(n * k));
  };
  TensorUse q;
  if (mla.q_lora_rank == 0) {
    const TensorUse wq = w("q_proj", H * qk, d);
    q = e.linear(label + ".q_proj", T, H * qk, d, false, h, wq);
    if (tape) tape->wq = wq;
  } else {
    const std::int64_t qr = mla.q_lora_rank;
    TensorUse qa = e.linear(label + ".q_a_proj", T, qr, d, false, h, w("q_a_proj", qr, d));
    qa = rms_norm_rows(e, label + ".q_a_layernorm", qa, T, qr, false);
    q = e.linear(label + ".q_b_proj", T, H * qk, qr, false, qa, w("q_b_proj", H * qk, qr));
  }
  const TensorUse wkva = w("kv_a_proj_with_mqa", r + rd, d);
  const TensorUse ckv = e.linear(label + ".kv_a_proj_with_mqa", T, r + rd, d, false, h, wkva);
  const TensorUse latent = rms_norm_rows(e, label + ".kv_a_layernorm", ckv, T, r, true, tape ? &tape->kv_norm : nullptr);
  const std::int64_t nq = T * H * rd, nk = T * rd;
  TensorUse qpe, kpe;
  if (mla.rope_interleave) {
    // apply_rotary_pos_emb_interleave: pairs de-interleaved (views), x*cos + rotate_half(x)*sin
    // written as two products a side, a subtraction, an addition and the cat of the halves.
    const auto rotate = [&](const std::string& side, std::int64_t n, const TensorUse& x) {
      TensorUse t = e.pointwise(label + side + ".mul", EwFunc::kMul, n, a, a, {x, rot.first}, true);
      t = e.pointwise(label + side + ".mul", EwFunc::kMul, n, a, a, {x, rot.second}, true);
      const TensorUse lo = e.pointwise(label + side + ".sub", EwFunc::kAdd, n / 2, a, a, {t}, false);
      t = e.pointwise(label + side + ".mul", EwFunc::kMul, n, a, a, {x, rot.first}, true);
      t = e.pointwise(label + side + ".mul", EwFunc::kMul, n, a, a, {x, rot.second}, true);
      const TensorUse hi = e.pointwise(label + side + ".add", EwFunc::kAdd, n / 2, a, a, {t}, false);
      const TensorUse out = e.new_act(label + side + ".cat", static_cast<double>(n));
      e.emit(label + side + ".cat", {models::lower_cat({n / 2, n / 2}, a, true, {lo, hi}, out, e.hw())});
      return out;
    };
    qpe = rotate(".rope_q", nq, q);
    kpe = rotate(".rope_k", nk, ckv);
  } else {
    // apply_rotary_emb: q_pe and k_pe (slices) to fp32, complex multiply, back to the act type.
    const TensorUse qf = e.pointwise(label + ".rope_q.to_fp32", EwFunc::kCast, nq, a, kF32, {q}, true);
    const TensorUse kf = e.pointwise(label + ".rope_k.to_fp32", EwFunc::kCast, nk, a, kF32, {ckv}, true);
    const TensorUse qm = e.pointwise(label + ".rope_q.mul", EwFunc::kMul, nq, kF32, kF32, {qf, rot.first}, true);
    qpe = e.cast(label + ".rope_q.to_act", nq, kF32, a, qm);
    const TensorUse km = e.pointwise(label + ".rope_k.mul", EwFunc::kMul, nk, kF32, kF32, {kf, rot.first}, false);
    kpe = e.cast(label + ".rope_k.to_act", nk, kF32, a, km);
  }
  // The cache update: latent and rotated key.
  const TensorUse lat = latent_append(e, label, "latent", r, latent);
  const TensorUse kr = latent_append(e, label, "k_rope", rd, kpe);
  // query_states = cat(q_nope, q_pe) (q_nope a strided view).
  const TensorUse qs = e.new_act(label + ".query", static_cast<double>(T * H * qk));
  e.emit(label + ".query_cat", {models::lower_cat({T * H * nope, nq}, a, false, {q, qpe}, qs, e.hw())});
  // expand_kv over every cached token: kv_b_proj, then keys assembled by two strided copies.
  const std::int64_t keys = s.past_tokens + s.new_tokens, BL = s.batch * keys;
  const TensorUse wkvb = w("kv_b_proj", H * (nope + vd), r);
  const TensorUse kv = e.linear(label + ".kv_b_proj", BL, H * (nope + vd), r, false, lat, wkvb);
  const TensorUse kn = e.pointwise(label + ".key_nope", EwFunc::kCopy, BL * H * nope, a, a, {kv}, true);
  const TensorUse key = e.pointwise(label + ".key_rope", EwFunc::kCopy, BL * H * rd, a, a, {kr, kn}, true);
  const TensorUse o = e.new_act(label + ".sdpa", static_cast<double>(T * H * vd));
  const std::map<std::string, TensorUse> names{{"q", qs}, {"k", key}, {"v", kv}, {"o", o}};
  if (s.past_tokens > 0) {
    e.b().emit_op(label + ".sdpa",
                  models::Op(models::OpKind::kSdpaDecode, a, models::SdpaDecodeShape{s.batch, H, H, keys, qk}), names);
  } else {
    e.b().emit_op(label + ".sdpa", models::Op(models::OpKind::kSdpa, a, models::SdpaShape{s.batch, H, s.new_tokens, qk, true}),
                  names);
  }
  const TensorUse wo = w("o_proj", d, H * vd);
  if (tape) {
    tape->h = h;
    tape->wkva = wkva;
    tape->wkvb = wkvb;
    tape->wo = wo;
    tape->q = q;
    tape->ckv = ckv;
    tape->latent = lat;
    tape->kv = kv;
    tape->query = qs;
    tape->key = key;
    tape->attn = o;
    tape->out = o;
    tape->cis = rot.first;
  }
  return e.linear(label + ".o_proj", T, d, H * vd, false, o, wo);
}

}  // namespace gpusim::workloads::detail
