// A continuous-batching scheduler as serving engines run one (vLLM V1's Scheduler, simplified):
// every step has a token budget and a sequence cap; running requests are served first (one token
// for a decode, the next chunk of a prompt), then waiting requests are admitted in arrival order
// while budget, sequence slots and KV-cache blocks last; when a running request's next tokens
// find no free block, the most recently admitted running request is preempted (its blocks freed,
// its tokens recomputed from scratch when it is admitted again). Pure bookkeeping: no time.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "serve/requests.h"

namespace gpusim::serve {

struct SchedulerConfig {
  std::int64_t max_num_batched_tokens = 8192;  // tokens a step may run
  std::int64_t max_num_seqs = 1024;            // sequences a step may hold
  std::int64_t block_size = 16;                // tokens per KV-cache block
  std::int64_t num_blocks = 0;                 // blocks the cache holds
  bool chunked_prefill = true;                 // a prompt may run over several steps
  // decode-first: running requests, then admissions (vLLM); prefill-first: admissions first.
  enum class Policy { kDecodeFirst, kPrefillFirst } policy = Policy::kDecodeFirst;
};

// One sequence of a step: `new_tokens` run against `past_tokens` already cached; `samples`: the
// step produces the request's next output token.
struct ScheduledSeq {
  std::size_t request = 0;
  std::int64_t new_tokens = 0, past_tokens = 0;
  bool samples = false;
};

struct StepPlan {
  std::vector<ScheduledSeq> seqs;     // running requests first, in admission order
  std::vector<std::size_t> admitted;  // requests that started (or restarted) this step
  std::vector<std::size_t> preempted;
  std::int64_t tokens() const;
  bool empty() const { return seqs.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, const std::vector<Request>& requests);

  // Blocks a request needs at its longest (its prompt and every output token but the last).
  std::int64_t blocks_needed(std::size_t request) const;
  // The request arrives: queued, or refused when the cache could never hold it (returns false).
  bool arrive(std::size_t request);
  // The next step's batch (empty when nothing can run).
  StepPlan schedule();
  // The step ran: caches grow, tokens are sampled, finished requests free their blocks. Returns
  // the requests that produced a token, in the plan's order.
  std::vector<std::size_t> complete(const StepPlan& plan);

  bool idle() const { return running_.empty() && waiting_.empty(); }
  std::int64_t used_blocks() const { return used_blocks_; }
  std::int64_t generated(std::size_t request) const { return state_[request].generated; }
  bool finished(std::size_t request) const { return state_[request].finished; }
  std::int64_t preemptions(std::size_t request) const { return state_[request].preemptions; }
  std::size_t running() const { return running_.size(); }
  std::size_t waiting() const { return waiting_.size(); }

 private:
  struct State {
    std::int64_t computed = 0;   // tokens in the cache
    std::int64_t generated = 0;  // output tokens sampled
    std::int64_t blocks = 0;     // blocks held
    std::int64_t preemptions = 0;
    bool finished = false;
  };
  std::int64_t known_tokens(std::size_t r) const;  // prompt + sampled: what must be cached before the next sample
  std::int64_t blocks_for(std::int64_t tokens) const;
  // Grows r's blocks to hold `tokens`; false when the cache has too few free.
  bool grow(std::size_t r, std::int64_t tokens);
  void release(std::size_t r);
  // Schedules running requests into `plan`; returns whether any was preempted.
  bool schedule_running(StepPlan& plan, std::int64_t& budget);
  void schedule_waiting(StepPlan& plan, std::int64_t& budget);

  SchedulerConfig config_;
  const std::vector<Request>& requests_;
  std::vector<State> state_;
  std::vector<std::size_t> running_;  // admission order
  std::deque<std::size_t> waiting_;   // arrival order; preempted requests go to the front
  std::int64_t used_blocks_ = 0;
};

}  // namespace gpusim::serve
