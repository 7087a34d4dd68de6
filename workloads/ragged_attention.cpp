#include "workloads/ragged_attention.h"

#include <algorithm>

#include "models/common.h"
#include "models/flash_common.h"
#include "models/op.h"
#include "sim/error.h"

namespace gpusim::workloads {

void ragged_attention(detail::StepEmitter& e, const std::string& label, const hw::TensorUse& q,
                      const hw::TensorUse& cache, const hw::TensorUse& o, std::int64_t layer) {
  const auto& m = e.m();
  if (m.mla) throw ModelError("serving steps of multi-head latent attention models are not modeled yet");
  const std::int64_t window = m.sliding_layer(layer) ? *m.sliding_window : 0;
  const double eb = e.act_bytes();
  const auto traits = models::flash_fwd_traits(m.head_dim, e.hw());
  const bool unified = e.workload().serving.attention == ModelWorkload::ServingKernels::Attention::kUnifiedVarlen;
  const auto& seqs = e.s().seqs;
  const bool decode_only = std::all_of(seqs.begin(), seqs.end(), [](const SeqSlice& s) { return s.new_tokens == 1 && s.past_tokens > 0; });
  // FlashAttention-2's varlen forward, a batch of one-query sequences with grouped-query heads
  // (mha_varlen_fwd's seqlenq_ngroups_swapped): each sequence's query groups become rows of one
  // KV head, non-causal, the queries transposed in and the output out.
  const bool swapped = unified && decode_only && m.heads > m.kv_heads && window == 0;
  const std::int64_t T = e.tokens(), q_elems = T * m.heads * m.head_dim;
  if (swapped) e.pointwise(label + ".swap_in", models::EwFunc::kCopy, q_elems, e.act(), e.act(), {q}, true);
  hw::Launch prefill;
  std::int64_t prefill_tokens = 0, prefill_keys = 0, decodes = 0, decode_keys = 0;
  for (const SeqSlice& s : seqs) {
    std::int64_t keys = s.past_tokens + s.new_tokens;
    if (!unified && s.new_tokens == 1 && s.past_tokens > 0) {
      ++decodes;
      decode_keys += window > 0 ? std::min(keys, window) : keys;
      continue;
    }
    models::FlashFwdProblem p;
    p.H = swapped ? m.kv_heads : m.heads;
    p.Hk = m.kv_heads;
    p.Sq = swapped ? m.heads / m.kv_heads : s.new_tokens;
    p.Sk = keys;
    p.D = m.head_dim;
    p.causal = !swapped;
    p.window = window;
    p.dtype = e.act();
    const hw::Launch one = models::lower_flash_fwd(p, e.hw(), traits);
    if (prefill.ctas.empty()) {
      prefill = one;
      prefill.grid = {0, 1, 1};
      prefill.ctas.clear();
    }
    prefill.grid.x += one.cta_count();
    prefill.ctas.insert(prefill.ctas.end(), one.ctas.begin(), one.ctas.end());
    prefill_tokens += s.new_tokens;
    prefill_keys += window > 0 ? std::min(keys, window) : keys;
  }
  if (prefill_tokens > 0) {
    const double kv = 2.0 * static_cast<double>(prefill_keys * m.kv_heads * m.head_dim) * eb;
    prefill.name = "flash_fwd_varlen_kernel";  // one launch over every sequence's tiles
    prefill.reads = {{q.tensor, static_cast<std::int64_t>(static_cast<double>(prefill_tokens * m.heads * m.head_dim) * eb)},
                     {cache.tensor, static_cast<std::int64_t>(kv)}};
    prefill.writes = {{o.tensor, static_cast<std::int64_t>(static_cast<double>(prefill_tokens * m.heads * m.head_dim) * eb)}};
    e.emit(label + ".prefill", {prefill});
  }
  if (swapped) {
    // The output transposed back, then copied into the contiguous result.
    const hw::TensorUse back = e.pointwise(label + ".swap_out", models::EwFunc::kCopy, q_elems, e.act(), e.act(), {o}, true);
    e.pointwise(label + ".swap_copy", models::EwFunc::kCopy, q_elems, e.act(), e.act(), {back}, true);
  }
  if (decodes > 0) {
    const std::int64_t mean_keys = (decode_keys + decodes - 1) / decodes;
    e.b().emit_op(label + ".decode",
                  models::Op(models::OpKind::kSdpaDecode, e.act(),
                             models::SdpaDecodeShape{decodes, m.heads, m.kv_heads, mean_keys, m.head_dim}),
                  {{"q", q}, {"k", cache}, {"v", cache}, {"o", o}});
  }
}

}  // namespace gpusim::workloads
