// serve/scheduler.cpp against a reference written here independently from the documented rules
// (vLLM V1's scheduler, simplified): per step, running requests first in admission order (the
// rest of their known tokens, capped by the budget; a preemption of the last admitted when the
// cache is short), then admissions in arrival order while budget, slots and blocks last, none in
// a step that preempted. Compared step by step: who runs, how many tokens, who is preempted.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "serve/scheduler.h"

namespace gpusim::serve {
namespace {

struct RefSeq {
  std::size_t id;
  std::int64_t cached = 0, sampled = 0, blocks = 0;
};

// The reference: plain lists, recomputing the free blocks from scratch every time.
class Reference {
 public:
  Reference(const SchedulerConfig& c, const std::vector<Request>& r) : c_(c), r_(r) {}
  void arrive(std::size_t i) { waiting_.push_back({i}); }
  std::int64_t free_blocks() const {
    std::int64_t used = 0;
    for (const auto& s : running_) used += s.blocks;
    return c_.num_blocks - used;
  }
  std::int64_t blocks(std::int64_t tokens) const { return (tokens + c_.block_size - 1) / c_.block_size; }
  std::int64_t target(const RefSeq& s) const { return r_[s.id].prompt_tokens + s.sampled; }

  // (request, new tokens, cached) per scheduled sequence, and the preempted requests.
  std::pair<std::vector<std::array<std::int64_t, 3>>, std::vector<std::size_t>> step() {
    std::vector<std::array<std::int64_t, 3>> plan;
    std::vector<std::size_t> preempted;
    std::int64_t budget = c_.max_num_batched_tokens;
    std::size_t i = 0;
    while (i < running_.size() && budget > 0) {
      RefSeq& s = running_[i];
      const std::int64_t n = std::min(target(s) - s.cached, budget);
      const std::int64_t need = std::max<std::int64_t>(0, blocks(s.cached + n) - s.blocks);
      if (need <= free_blocks()) {
        s.blocks += need;
        plan.push_back({static_cast<std::int64_t>(s.id), n, s.cached});
        budget -= n;
        ++i;
        continue;
      }
      RefSeq victim = running_.back();
      running_.pop_back();
      preempted.push_back(victim.id);
      waiting_.insert(waiting_.begin(), RefSeq{victim.id, 0, victim.sampled, 0});
      if (i >= running_.size()) break;
    }
    if (preempted.empty()) {
      while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_num_seqs) {
        RefSeq s = waiting_.front();
        std::int64_t n = target(s) - s.cached;
        if (n > budget) n = budget;
        const std::int64_t need = blocks(s.cached + n);
        if (need > free_blocks()) break;
        s.blocks = need;
        plan.push_back({static_cast<std::int64_t>(s.id), n, s.cached});
        budget -= n;
        waiting_.erase(waiting_.begin());
        running_.push_back(s);
      }
    }
    // The step runs: caches grow; completed prompts sample; finished requests leave.
    for (const auto& entry : plan) {
      const auto id = static_cast<std::size_t>(entry[0]);
      auto it = std::find_if(running_.begin(), running_.end(), [&](const RefSeq& s) { return s.id == id; });
      it->cached += entry[1];
      if (it->cached == target(*it)) ++it->sampled;
      if (it->sampled == r_[it->id].output_tokens) running_.erase(it);
    }
    return {plan, preempted};
  }
  bool idle() const { return running_.empty() && waiting_.empty(); }

 private:
  SchedulerConfig c_;
  const std::vector<Request>& r_;
  std::vector<RefSeq> running_, waiting_;
};

void compare(const SchedulerConfig& config, const std::vector<Request>& requests, std::size_t arrive_every,
             std::size_t* preemptions = nullptr) {
  Scheduler s(config, requests);
  Reference ref(config, requests);
  std::size_t next = 0;
  for (int step = 0; step < 100000 && (next < requests.size() || !s.idle()); ++step) {
    // A few requests arrive every `arrive_every` steps.
    if (step % static_cast<int>(arrive_every) == 0) {
      for (int k = 0; k < 3 && next < requests.size(); ++k, ++next) {
        ASSERT_TRUE(s.arrive(next));
        ref.arrive(next);
      }
    }
    const StepPlan plan = s.schedule();
    const auto [want, want_preempted] = ref.step();
    ASSERT_EQ(plan.seqs.size(), want.size()) << "step " << step;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(static_cast<std::int64_t>(plan.seqs[i].request), want[i][0]) << "step " << step << " seq " << i;
      EXPECT_EQ(plan.seqs[i].new_tokens, want[i][1]) << "step " << step << " seq " << i;
      EXPECT_EQ(plan.seqs[i].past_tokens, want[i][2]) << "step " << step << " seq " << i;
    }
    ASSERT_EQ(plan.preempted, want_preempted) << "step " << step;
    if (preemptions) *preemptions += plan.preempted.size();
    s.complete(plan);
    EXPECT_LE(s.used_blocks(), config.num_blocks);
  }
  EXPECT_TRUE(s.idle());
  EXPECT_TRUE(ref.idle());
  for (std::size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(s.generated(i), requests[i].output_tokens);
}

std::vector<Request> random_requests(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<Request> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    r[i].id = std::to_string(i);
    r[i].prompt_tokens = 1 + static_cast<std::int64_t>(g() % 300);
    r[i].output_tokens = 1 + static_cast<std::int64_t>(g() % 60);
  }
  return r;
}

TEST(ServeScheduler, MatchesTheReferenceWithChunkedPrefills) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 256;  // long prompts run in chunks
  c.max_num_seqs = 16;
  c.block_size = 16;
  c.num_blocks = 400;  // ample: no preemption
  std::size_t preemptions = 0;
  compare(c, random_requests(60, 1), 2, &preemptions);
  EXPECT_EQ(preemptions, 0u);
}

TEST(ServeScheduler, MatchesTheReferenceWhenTheCacheRunsOutAndRequestsArePreempted) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 512;
  c.max_num_seqs = 32;
  c.block_size = 8;
  c.num_blocks = 60;  // 480 tokens for everyone: preemptions happen
  std::size_t preemptions = 0;
  compare(c, random_requests(40, 2), 1, &preemptions);
  EXPECT_GT(preemptions, 5u);
}

TEST(ServeScheduler, AChunkIsTheBudgetLeftAndAPromptCompletesBeforeItSamples) {
  std::vector<Request> r(2);
  r[0].prompt_tokens = 1000;
  r[0].output_tokens = 3;
  r[1].prompt_tokens = 10;
  r[1].output_tokens = 2;
  SchedulerConfig c;
  c.max_num_batched_tokens = 400;
  c.num_blocks = 1000;
  Scheduler s(c, r);
  s.arrive(0);
  s.arrive(1);
  auto p = s.schedule();  // 400 of request 0's prompt; nothing left for request 1
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].new_tokens, 400);
  EXPECT_FALSE(p.seqs[0].samples);
  EXPECT_TRUE(s.complete(p).empty());
  p = s.schedule();  // 400 more
  s.complete(p);
  p = s.schedule();  // the last 200 (samples), then request 1's prompt of 10 (samples)
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].new_tokens, 200);
  EXPECT_EQ(p.seqs[0].past_tokens, 800);
  EXPECT_TRUE(p.seqs[0].samples);
  EXPECT_EQ(p.seqs[1].new_tokens, 10);
  EXPECT_EQ(s.complete(p), (std::vector<std::size_t>{0, 1}));
  p = s.schedule();  // two decodes
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].new_tokens, 1);
  EXPECT_EQ(p.seqs[0].past_tokens, 1000);
  s.complete(p);  // request 1 is done (2 tokens)
  EXPECT_TRUE(s.finished(1));
  // A request that needs more blocks than the cache holds is refused at arrival.
  std::vector<Request> big(1);
  big[0].prompt_tokens = 100000;
  big[0].output_tokens = 1;
  Scheduler tiny(c, big);
  EXPECT_FALSE(tiny.arrive(0));
}

}  // namespace
}  // namespace gpusim::serve
