// A serving run: requests arrive, the scheduler forms each step's batch, the step's time comes
// from the simulated chip (serve/step_timer.h) plus the engine's host time, tokens are emitted
// at the end of the step that samples them. Deterministic: the same spec and chip give the same
// run, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "serve/serve_spec.h"

namespace gpusim::serve {

struct RequestResult {
  bool rejected = false;
  std::string why;                // why it could never be admitted
  double first_scheduled_s = -1;  // when a step first ran any of it
  std::vector<double> token_s;    // when each output token was emitted
  std::int64_t preemptions = 0;
};

struct StepRecord {
  double start_s = 0, duration_s = 0;  // duration: GPU time plus the engine's host time
  double host_s = 0;                   // the engine's host time (serial with the GPU work)
  double gpu_us = 0;
  std::int64_t seqs = 0, tokens = 0, prefills = 0, decodes = 0;
  std::int64_t kv_blocks = 0;  // in use after the step
  std::int64_t waiting = 0;    // requests queued after it
  std::int64_t preempted = 0;
  bool graph = false;
  bool captured = false;  // its graph was captured in it (a lazily capturing engine)
};

// What a served engine carries into its next run: the static shapes whose graphs it captured,
// and the attention kernels (decode, prefill) it has built (EngineSpec::attention_first_use).
struct EngineState {
  std::set<std::vector<std::int64_t>> graphs;
  std::set<int> attention_kernels;
};

struct ServeResult {
  std::vector<RequestResult> requests;  // as spec.requests
  std::vector<StepRecord> steps;
  std::int64_t num_blocks = 0, block_size = 0;
  // One GPU's figures when the engine runs on several (tensor_parallel, expert_parallel): its
  // share of the weights and of each token's K and V, its activation peak and usable memory.
  double kv_bytes_per_token = 0, weights_bytes = 0, activation_bytes = 0, capacity_bytes = 0;
  int gpus = 1;  // GPUs the engine runs on
  double end_s = 0;  // the last step's end
  std::size_t shapes_simulated = 0, shapes_reused = 0;
  EngineState engine;  // by the end of the run
};

// `progress(done, total)` is called as requests finish (for a progress display), may be empty.
// `reuse`: steps of a shape seen before, and kernels that repeat, take the earlier results (the
// same run, faster); off only to check that against a simulation of every step from scratch.
// `engine`: what the engine has from serving before (none for a fresh engine).
ServeResult run_serve(const ServeSpec& spec, const hw::HardwareSpec& hw, const models::KernelModelRegistry& models,
                      const std::function<void(std::size_t, std::size_t)>& progress = {}, bool reuse = true,
                      const EngineState& engine = {});

// One request's latencies in seconds: to its first token, per output token after the first,
// end to end, and queued before its first step; -1 where one does not apply (a rejected request,
// TPOT of a single token).
struct RequestFigures {
  double ttft_s = -1, tpot_s = -1, e2e_s = -1, queueing_s = -1;
};
RequestFigures request_figures(const Request& q, const RequestResult& r);

// Latency and throughput figures of a run.
struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
  std::size_t n = 0;
};
Percentiles percentiles(std::vector<double> values);

struct ServeSummary {
  std::size_t requests = 0, completed = 0, rejected = 0;
  double duration_s = 0;  // first arrival to the last token
  double requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
  Percentiles ttft_s, tpot_s, itl_s, e2e_s, queueing_s;
  std::size_t good = 0;  // completed within every SLO given
  double goodput_requests_per_s = 0;
  std::int64_t preemptions = 0;
  double mean_batch = 0, peak_kv_share = 0, mean_kv_share = 0;
  double host_share = 0;  // of the steps' time, the engine's host time (the rest is GPU work)
};
ServeSummary summarize(const ServeSpec& spec, const ServeResult& r);

}  // namespace gpusim::serve
