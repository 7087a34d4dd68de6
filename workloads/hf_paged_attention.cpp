// transformers 5.17's continuous batching with attn_implementation "paged|sdpa": the per-step
// mask preparation and each layer's paged attention over the packed batch, as the profile of
// validation/data/serve_requests1_h100.json shows them (per layer: two index_copy, two
// index_select gathers, four copies: repeat_kv of K and V, q made contiguous, the output
// transposed back; one masked cuDNN SDPA).
#include <fmt/format.h>

#include "models/common.h"
#include "workloads/hf_eager_pieces.h"

namespace gpusim::workloads::detail {

void paged_batch_prep(StepEmitter& e) {
  const auto& p = *e.packed();
  const std::int64_t T = e.tokens();
  const hw::DType a = e.act();
  // _reset_static_tensors: attention_mask[..., :q, :q + kv].fill_(min) (the previous batch's
  // sizes; this batch's stand in for them).
  const TensorUse mask = e.b().state("attention_mask", static_cast<double>(T * p.keys) * e.act_bytes());
  e.pointwise("cb_prep.mask_reset", EwFunc::kFill, T * p.keys, a, a, {}, true);
  // build_attention_mask, per sequence: torch.full, torch.triu, the slice assignment.
  for (const SeqSlice& q : p.ragged.seqs) {
    const std::int64_t n = q.new_tokens * (q.past_tokens + q.new_tokens);
    if (n == 0) continue;
    const TensorUse full = e.pointwise("cb_prep.mask_full", EwFunc::kFill, n, a, a, {}, false);
    const TensorUse tri = e.pointwise("cb_prep.mask_triu", EwFunc::kCopy, n, a, a, {full}, false);
    e.pointwise("cb_prep.mask_slice", EwFunc::kCopy, n, a, a, {tri, mask}, true);
  }
}

TensorUse paged_sdpa(StepEmitter& e, const std::string& label, const TensorUse& q, const TensorUse& k,
                     const TensorUse& v) {
  const auto& m = e.m();
  const std::int64_t T = e.tokens(), K = e.packed()->keys;
  const std::int64_t kv_dim = m.kv_heads * m.head_dim, q_dim = m.heads * m.head_dim;
  const hw::DType a = e.act();
  const double eb = e.act_bytes();
  // PagedAttentionCache.update: the new rows, transposed to [T, Hkv, D], into the cache
  // (index_copy_ of strided views), then index_select of every key the batch attends.
  const TensorUse kc = e.b().state(label + ".k_cache", static_cast<double>(K * kv_dim) * eb);
  const TensorUse vc = e.b().state(label + ".v_cache", static_cast<double>(K * kv_dim) * eb);
  const TensorUse kt = e.pointwise(label + ".k_transpose", EwFunc::kCopy, T * kv_dim, a, a, {k}, true);
  const TensorUse vt = e.pointwise(label + ".v_transpose", EwFunc::kCopy, T * kv_dim, a, a, {v}, true);
  e.pointwise(label + ".k_index_copy", EwFunc::kCopy, T * kv_dim, a, a, {kt, kc}, true);
  e.pointwise(label + ".v_index_copy", EwFunc::kCopy, T * kv_dim, a, a, {vt, vc}, true);
  TensorUse kr = e.new_act(label + ".k_gathered", static_cast<double>(K * kv_dim));
  TensorUse vr = e.new_act(label + ".v_gathered", static_cast<double>(K * kv_dim));
  e.emit(label + ".k_index_select", {models::lower_embedding_lookup(K, kv_dim, a, kc, kr, e.hw())});
  e.emit(label + ".v_index_select", {models::lower_embedding_lookup(K, kv_dim, a, vc, vr, e.hw())});
  // repeat_kv: expand and reshape to every query head, a copy each (nothing to do for MHA).
  if (m.heads > m.kv_heads) {
    kr = e.pointwise(label + ".repeat_k", EwFunc::kCopy, K * q_dim, a, a, {kr}, true);
    vr = e.pointwise(label + ".repeat_v", EwFunc::kCopy, K * q_dim, a, a, {vr}, true);
  }
  const TensorUse qc = e.pointwise(label + ".q_contiguous", EwFunc::kCopy, T * q_dim, a, a, {q}, true);
  const TensorUse o = e.new_act(label + ".sdpa", static_cast<double>(T * q_dim));
  const std::map<std::string, TensorUse> names{{"q", qc}, {"k", kr}, {"v", vr}, {"o", o}};
  models::SdpaShape shape{1, m.heads, T, m.head_dim, false, 0, true, false, K};
  e.b().emit_op(label + ".sdpa", models::Op(models::OpKind::kSdpa, a, shape), names);
  return e.pointwise(label + ".out_transpose", EwFunc::kCopy, T * q_dim, a, a, {o}, true);
}

}  // namespace gpusim::workloads::detail
