#include "serve/serve_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "serve/scheduler.h"
#include "serve/step_timer.h"
#include "sim/error.h"
#include "workloads/parallelism.h"
#include "workloads/parameter_count.h"

namespace gpusim::serve {
namespace {

// K and V of every layer for one token, as the engine stores them (16-bit for fp8 weights); of
// one GPU's KV heads when `w` is a shard.
double kv_bytes_per_token(const workloads::ModelWorkload& w) {
  const auto& m = w.model;
  const double e = w.dtype == hw::DType::kFp8 ? 2.0 : hw::bytes_per_element(w.dtype);
  return static_cast<double>(m.layers * 2 * m.kv_heads * m.head_dim) * e;
}

}  // namespace

ServeResult run_serve(const ServeSpec& spec, const hw::HardwareSpec& hw, const models::KernelModelRegistry& models,
                      const std::function<void(std::size_t, std::size_t)>& progress, bool reuse,
                      const EngineState& engine) {
  ServeResult out;
  out.engine = engine;
  workloads::check_parallel_system(spec.model, hw);  // enough GPUs, and links between them
  out.gpus = spec.model.parallel.gpus();
  StepTimer timer(spec.model, hw, spec.engine, models, reuse);
  SchedulerConfig config = spec.engine.scheduler;
  // The KV cache gets what the weights and the largest step's activations leave of the memory
  // the engine may use (vLLM profiles a forward of max_num_batched_tokens to find the latter).
  // Over several GPUs every figure is one GPU's (vLLM sizes the cache on each worker and keeps
  // the smallest; ranks are symmetric): its share of the weights (experts by expert_parallel) and
  // of the KV heads (replicated when there are fewer than GPUs); a block holds its tokens on
  // every GPU at once, so the blocks one GPU's memory holds are the engine's.
  const workloads::ModelWorkload shard = spec.model.parallel.any() ? workloads::rank_shard(spec.model) : spec.model;
  out.capacity_bytes = static_cast<double>(hw.dram.capacity) * spec.engine.gpu_memory_utilization;
  out.weights_bytes = static_cast<double>(workloads::parameter_count(shard.model)) * hw::bytes_per_element(shard.dtype);
  out.activation_bytes = timer.activation_peak_bytes(config.max_num_batched_tokens);
  out.kv_bytes_per_token = kv_bytes_per_token(shard);
  if (config.num_blocks == 0) {
    const double left = out.capacity_bytes - out.weights_bytes - out.activation_bytes;
    config.num_blocks = static_cast<std::int64_t>(std::floor(std::max(0.0, left) / (out.kv_bytes_per_token * static_cast<double>(config.block_size))));
    if (config.num_blocks == 0) {
      throw ConfigError(spec.file, 0, "scheduler.gpu_memory_utilization",
                        fmt::format("no memory is left for a KV cache: {:.1f} GB usable, weights {:.1f} GB, "
                                    "activations {:.1f} GB{} (a smaller model or step, a chip with more memory, "
                                    "or tensor_parallel over a system's GPUs)",
                                    out.capacity_bytes / 1e9, out.weights_bytes / 1e9, out.activation_bytes / 1e9,
                                    out.gpus > 1 ? fmt::format(", per GPU of {}", out.gpus) : std::string()));
    }
  }
  out.num_blocks = config.num_blocks;
  timer.set_cache_tokens(config.num_blocks * config.block_size);
  out.block_size = config.block_size;

  const auto& requests = spec.requests;
  const std::size_t n = requests.size();
  out.requests.resize(n);
  Scheduler scheduler(config, requests);
  // A cache that holds not even the smallest request is a configuration error, not a run of
  // rejections.
  std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < n; ++i) smallest = std::min(smallest, scheduler.blocks_needed(i));
  if (n > 0 && smallest > config.num_blocks) {
    throw ConfigError(spec.file, 0, "scheduler.num_blocks",
                      fmt::format("the KV cache ({} blocks of {} tokens) is too small for any request: the smallest "
                                  "needs {} blocks",
                                  config.num_blocks, config.block_size, smallest));
  }
  std::size_t next = 0, done = 0;
  double t = 0;
  const auto reject = [&](std::size_t r, std::string why) {
    out.requests[r].rejected = true;
    out.requests[r].why = std::move(why);
    ++done;
  };
  while (done < n) {
    for (; next < n && requests[next].arrival_s <= t; ++next) {
      if (!config.chunked_prefill && requests[next].prompt_tokens > config.max_num_batched_tokens) {
        reject(next, fmt::format("its prompt ({} tokens) exceeds max_num_batched_tokens ({}) without chunked prefill",
                                 requests[next].prompt_tokens, config.max_num_batched_tokens));
      } else if (!scheduler.arrive(next)) {
        reject(next, fmt::format("it needs {} KV-cache blocks at its longest and the cache holds {}",
                                 scheduler.blocks_needed(next), config.num_blocks));
      }
    }
    if (done == n) break;
    StepPlan plan = scheduler.schedule();
    if (plan.empty()) {
      if (next < n) {
        t = std::max(t, requests[next].arrival_s);
        continue;
      }
      throw ModelError("serve: the scheduler made no progress with requests waiting");  // a bug, not input
    }
    std::vector<workloads::SeqSlice> seqs;
    seqs.reserve(plan.seqs.size());
    StepRecord step;
    for (const auto& q : plan.seqs) {
      seqs.push_back({q.new_tokens, q.past_tokens, q.samples});
      auto& rr = out.requests[q.request];
      if (rr.first_scheduled_s < 0) rr.first_scheduled_s = t;
      (q.new_tokens == 1 && q.past_tokens > 0 ? step.decodes : step.prefills) += 1;
    }
    const StepTime& st = timer.time(seqs);
    step.start_s = t;
    std::int64_t keys = 0;
    for (const auto& q : plan.seqs) keys += q.past_tokens + q.new_tokens;
    step.host_s = spec.engine.step_overhead.seconds() +
                  static_cast<double>(plan.seqs.size()) * spec.engine.request_overhead.seconds() +
                  static_cast<double>(keys) * spec.engine.key_overhead.seconds();
    // The first step to run the decode or the prefill attention kernel builds it.
    if (spec.engine.attention_first_use > sim::Time{} &&
        out.engine.attention_kernels.insert(step.prefills > 0 ? 1 : 0).second) {
      step.host_s += spec.engine.attention_first_use.seconds();
    }
    // A lazily capturing engine's first step of a static shape captures its graph.
    double gpu_us = st.gpu_us;
    if (!st.graph_key.empty() && out.engine.graphs.insert(st.graph_key).second) {
      gpu_us = st.capture_us;
      step.captured = true;
    }
    step.gpu_us = gpu_us;
    step.duration_s = gpu_us * 1e-6 + step.host_s;
    step.graph = st.graph;
    step.seqs = static_cast<std::int64_t>(plan.seqs.size());
    step.tokens = plan.tokens();
    step.preempted = static_cast<std::int64_t>(plan.preempted.size());
    t += step.duration_s;
    for (const std::size_t r : scheduler.complete(plan)) {
      out.requests[r].token_s.push_back(t);
      if (scheduler.finished(r)) {
        out.requests[r].preemptions = scheduler.preemptions(r);
        ++done;
        if (progress) progress(done, n);
      }
    }
    step.kv_blocks = scheduler.used_blocks();
    step.waiting = static_cast<std::int64_t>(scheduler.waiting());
    out.steps.push_back(step);
  }
  out.end_s = t;
  out.shapes_simulated = timer.simulated();
  out.shapes_reused = timer.reused();
  return out;
}

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  // Linear interpolation between closest ranks (numpy's default).
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return p;
}

RequestFigures request_figures(const Request& q, const RequestResult& r) {
  RequestFigures f;
  if (r.rejected || r.token_s.empty()) return f;
  f.ttft_s = r.token_s.front() - q.arrival_s;
  f.e2e_s = r.token_s.back() - q.arrival_s;
  f.queueing_s = r.first_scheduled_s - q.arrival_s;
  if (r.token_s.size() > 1) f.tpot_s = (r.token_s.back() - r.token_s.front()) / static_cast<double>(r.token_s.size() - 1);
  return f;
}

ServeSummary summarize(const ServeSpec& spec, const ServeResult& r) {
  ServeSummary s;
  s.requests = spec.requests.size();
  std::vector<double> ttft, tpot, itl, e2e, queue;
  double first = spec.requests.empty() ? 0 : spec.requests.front().arrival_s, last = first;
  double out_tokens = 0, in_tokens = 0;
  for (std::size_t i = 0; i < s.requests; ++i) {
    const auto& q = spec.requests[i];
    const auto& rr = r.requests[i];
    if (rr.rejected) {
      ++s.rejected;
      continue;
    }
    ++s.completed;
    s.preemptions += rr.preemptions;
    const RequestFigures f = request_figures(q, rr);
    ttft.push_back(f.ttft_s);
    e2e.push_back(f.e2e_s);
    queue.push_back(f.queueing_s);
    if (f.tpot_s >= 0) {
      tpot.push_back(f.tpot_s);
      for (std::size_t k = 1; k < rr.token_s.size(); ++k) itl.push_back(rr.token_s[k] - rr.token_s[k - 1]);
    }
    last = std::max(last, rr.token_s.back());
    out_tokens += static_cast<double>(q.output_tokens);
    in_tokens += static_cast<double>(q.prompt_tokens);
    const bool good = (!spec.slo.ttft_s || f.ttft_s <= *spec.slo.ttft_s) &&
                      (!spec.slo.tpot_s || f.tpot_s < 0 || f.tpot_s <= *spec.slo.tpot_s) &&
                      (!spec.slo.e2e_s || f.e2e_s <= *spec.slo.e2e_s);
    s.good += good ? 1 : 0;
  }
  s.duration_s = last - first;
  if (s.duration_s > 0) {
    s.requests_per_s = static_cast<double>(s.completed) / s.duration_s;
    s.output_tokens_per_s = out_tokens / s.duration_s;
    s.total_tokens_per_s = (out_tokens + in_tokens) / s.duration_s;
    s.goodput_requests_per_s = static_cast<double>(s.good) / s.duration_s;
  }
  s.ttft_s = percentiles(std::move(ttft));
  s.tpot_s = percentiles(std::move(tpot));
  s.itl_s = percentiles(std::move(itl));
  s.e2e_s = percentiles(std::move(e2e));
  s.queueing_s = percentiles(std::move(queue));
  double busy = 0, batch = 0, kv = 0, host = 0;
  for (const auto& st : r.steps) {
    busy += st.duration_s;
    host += st.host_s;
    batch += static_cast<double>(st.seqs) * st.duration_s;
    const double share = r.num_blocks > 0 ? static_cast<double>(st.kv_blocks) / static_cast<double>(r.num_blocks) : 0;
    kv += share * st.duration_s;
    s.peak_kv_share = std::max(s.peak_kv_share, share);
  }
  if (busy > 0) {
    s.mean_batch = batch / busy;
    s.mean_kv_share = kv / busy;
    s.host_share = host / busy;
  }
  return s;
}

}  // namespace gpusim::serve
