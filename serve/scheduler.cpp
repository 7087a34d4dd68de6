#include "serve/scheduler.h"

#include <algorithm>

namespace gpusim::serve {

std::int64_t StepPlan::tokens() const {
  std::int64_t t = 0;
  for (const auto& s : seqs) t += s.new_tokens;
  return t;
}

Scheduler::Scheduler(const SchedulerConfig& config, const std::vector<Request>& requests)
    : config_(config), requests_(requests), state_(requests.size()) {}

std::int64_t Scheduler::known_tokens(std::size_t r) const {
  return requests_[r].prompt_tokens + state_[r].generated;
}

std::int64_t Scheduler::blocks_for(std::int64_t tokens) const {
  return (tokens + config_.block_size - 1) / config_.block_size;
}

std::int64_t Scheduler::blocks_needed(std::size_t r) const {
  return blocks_for(requests_[r].prompt_tokens + requests_[r].output_tokens - 1);
}

bool Scheduler::arrive(std::size_t r) {
  if (blocks_needed(r) > config_.num_blocks) return false;
  waiting_.push_back(r);
  return true;
}

bool Scheduler::grow(std::size_t r, std::int64_t tokens) {
  const std::int64_t more = blocks_for(tokens) - state_[r].blocks;
  if (more <= 0) return true;
  if (used_blocks_ + more > config_.num_blocks) return false;
  used_blocks_ += more;
  state_[r].blocks += more;
  return true;
}

void Scheduler::release(std::size_t r) {
  used_blocks_ -= state_[r].blocks;
  state_[r].blocks = 0;
}

bool Scheduler::schedule_running(StepPlan& plan, std::int64_t& budget) {
  bool preempted = false;
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    const std::size_t r = running_[i];
    State& s = state_[r];
    const std::int64_t n = std::min(known_tokens(r) - s.computed, budget);
    bool scheduled = false;
    while (true) {
      if (grow(r, s.computed + n)) {
        scheduled = true;
        break;
      }
      // No room: preempt the most recently admitted running request (vLLM V1: running.pop()).
      const std::size_t victim = running_.back();
      running_.pop_back();
      release(victim);
      state_[victim].computed = 0;
      ++state_[victim].preemptions;
      waiting_.push_front(victim);
      plan.preempted.push_back(victim);
      preempted = true;
      if (victim == r) break;
    }
    if (!scheduled) break;  // r itself was preempted; it was the last running request
    plan.seqs.push_back({r, n, s.computed, s.computed + n == known_tokens(r)});
    budget -= n;
    ++i;
  }
  return preempted;
}

void Scheduler::schedule_waiting(StepPlan& plan, std::int64_t& budget) {
  while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < config_.max_num_seqs) {
    const std::size_t r = waiting_.front();
    State& s = state_[r];
    std::int64_t n = known_tokens(r) - s.computed;
    if (n > budget) {
      if (!config_.chunked_prefill) break;
      n = budget;
    }
    if (!grow(r, s.computed + n)) break;
    waiting_.pop_front();
    running_.push_back(r);
    plan.admitted.push_back(r);
    plan.seqs.push_back({r, n, s.computed, s.computed + n == known_tokens(r)});
    budget -= n;
  }
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  std::int64_t budget = config_.max_num_batched_tokens;
  if (config_.policy == SchedulerConfig::Policy::kPrefillFirst) {
    schedule_waiting(plan, budget);
    // The requests just admitted are in running_ already: serve only those admitted before.
    const std::size_t admitted = plan.admitted.size();
    std::vector<std::size_t> fresh(running_.end() - static_cast<std::ptrdiff_t>(admitted), running_.end());
    running_.resize(running_.size() - admitted);
    schedule_running(plan, budget);
    running_.insert(running_.end(), fresh.begin(), fresh.end());
    return plan;
  }
  // vLLM admits nothing in a step that had to preempt.
  if (!schedule_running(plan, budget)) schedule_waiting(plan, budget);
  return plan;
}

std::vector<std::size_t> Scheduler::complete(const StepPlan& plan) {
  std::vector<std::size_t> sampled;
  for (const ScheduledSeq& q : plan.seqs) {
    State& s = state_[q.request];
    s.computed += q.new_tokens;
    if (!q.samples) continue;
    ++s.generated;
    sampled.push_back(q.request);
    if (s.generated == requests_[q.request].output_tokens) {
      s.finished = true;
      release(q.request);
      running_.erase(std::find(running_.begin(), running_.end(), q.request));
    }
  }
  return sampled;
}

}  // namespace gpusim::serve
