#include "serve/step_timer.h"

#include <algorithm>

#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"

namespace gpusim::serve {

StepTimer::StepTimer(const workloads::ModelWorkload& w, const hw::HardwareSpec& hw, const EngineSpec& engine,
                     const models::KernelModelRegistry& models, bool reuse)
    : w_(w), hw_(hw), engine_(engine), lowering_(hw, models), outcomes_(hw), reuse_(reuse) {}

namespace {
// transformers' pad_to_interval: the smallest multiple of `interval` at least `size` (one
// interval for nothing), capped at `cap`.
std::int64_t pad_to_interval(std::int64_t size, std::int64_t interval, std::int64_t cap) {
  const std::int64_t padded = size > 0 ? (size + interval - 1) / interval * interval : interval;
  return std::min(padded, cap);
}
}  // namespace

workloads::StepShape StepTimer::padded(const std::vector<workloads::SeqSlice>& seqs) const {
  workloads::StepShape s(seqs);
  const auto& pad = engine_.padding;
  if (pad.queries <= 0 && pad.keys <= 0) return s;
  std::int64_t q = 0, kv = 0;
  for (const auto& x : seqs) {
    q += x.new_tokens;
    kv += x.past_tokens;
  }
  if (q > engine_.cuda_graph_max_tokens) return s;  // launched eagerly: no static shapes
  const auto& sc = engine_.scheduler;
  if (pad.queries > 0) s.pad_tokens = std::max<std::int64_t>(0, pad_to_interval(q, pad.queries, sc.max_num_batched_tokens) - q);
  if (pad.keys > 0 && cache_tokens_ > 0) s.pad_keys = std::max<std::int64_t>(0, pad_to_interval(kv, pad.keys, cache_tokens_) - kv);
  // A padded batch samples a row for every padded sequence slot (min(queries, max_num_seqs)).
  s.pad_rows = std::max<std::int64_t>(0, std::min(q + s.pad_tokens, sc.max_num_seqs) - s.sampled());
  return s;
}

const StepTime& StepTimer::time(const std::vector<workloads::SeqSlice>& seqs) {
  std::vector<std::int64_t> key;
  key.reserve(3 * seqs.size());
  std::int64_t tokens = 0;
  for (const auto& s : seqs) {
    key.insert(key.end(), {s.new_tokens, s.past_tokens, s.samples ? 1 : 0});
    tokens += s.new_tokens;
  }
  if (reuse_) {
    if (const auto it = memo_.find(key); it != memo_.end()) {
      ++hits_;
      return it->second;
    }
  }
  StepTime t;
  t.graph = tokens <= engine_.cuda_graph_max_tokens;
  const workloads::StepShape shape = padded(seqs);
  const workloads::StepRun run =
      workloads::simulate_step(w_, "serve", shape, lowering_, hw_,
                               t.graph ? hw::LaunchMode::kGraph : hw::LaunchMode::kEager, reuse_ ? &outcomes_ : nullptr);
  t.gpu_us = run.total_us;
  t.kernel_us = run.kernel_time_us;
  t.kernels = run.kernels;
  if (t.graph && engine_.graph_capture == EngineSpec::GraphCapture::kLazy) {
    // transformers' key: padded queries, padded keys, and the longest sequence's keys padded to
    // a power of two (at least 1024, at most the cache's tokens).
    std::int64_t longest = 0;
    for (const auto& s : seqs) longest = std::max(longest, s.past_tokens + s.new_tokens);
    std::int64_t bucket = 1024;
    while (bucket < longest) bucket *= 2;
    if (cache_tokens_ > 0) bucket = std::min(bucket, cache_tokens_);
    std::int64_t keys = shape.pad_keys;
    for (const auto& s : seqs) keys += s.past_tokens;
    t.graph_key = {shape.tokens(), keys, bucket};
    const workloads::StepRun eager = workloads::simulate_step(w_, "serve", shape, lowering_, hw_, hw::LaunchMode::kEager,
                                                              reuse_ ? &outcomes_ : nullptr);
    t.capture_us = eager.total_us + hw_.host.forward_fixed.us() +
                   static_cast<double>(eager.kernels) * hw_.host.model_kernel_issue.us();
  }
  ++simulated_;
  if (!reuse_) {
    last_ = t;
    return last_;
  }
  return memo_.emplace(std::move(key), t).first->second;
}

double StepTimer::activation_peak_bytes(std::int64_t tokens) {
  const workloads::StepShape shape(std::vector<workloads::SeqSlice>{{tokens, 0, true}});
  return workloads::build_step(w_, "serve", shape, lowering_).activation_peak_bytes;
}

}  // namespace gpusim::serve
