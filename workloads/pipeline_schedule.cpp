#include "workloads/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace gpusim::workloads {
namespace {

// The order stage `s` of `p` runs its tasks (1F1B in training).
std::vector<PipelineTask> task_order(int s, int p, int m, bool training) {
  std::vector<PipelineTask> order;
  if (!training) {
    for (int j = 0; j < m; ++j) order.push_back({j, false});
    return order;
  }
  const int warmup = std::min(p - s - 1, m);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back({next_forward, false});
  while (next_forward < m) {
    order.push_back({next_forward++, false});
    order.push_back({next_backward++, true});
  }
  while (next_backward < m) order.push_back({next_backward++, true});
  return order;
}

}  // namespace

double PipelineSchedule::busy_us(int stage) const {
  const auto s = static_cast<std::size_t>(stage);
  double busy = optimizer_us.empty() ? 0 : optimizer_us[s];
  for (const auto& t : stages[s]) busy += t.end_us - t.start_us;
  return busy;
}

PipelineSchedule schedule_pipeline(const std::vector<StageTimes>& times, int micro_batches, bool training) {
  const int p = static_cast<int>(times.size());
  PipelineSchedule out;
  out.stages.resize(times.size());
  std::vector<std::vector<PipelineTask>> order(times.size());
  for (int s = 0; s < p; ++s) order[static_cast<std::size_t>(s)] = task_order(s, p, micro_batches, training);
  // When each micro-batch's input is ready on each stage (its neighbour's send started); < 0: not yet.
  std::vector<std::vector<double>> fwd_ready(times.size(), std::vector<double>(static_cast<std::size_t>(micro_batches), -1));
  std::vector<std::vector<double>> bwd_ready = fwd_ready;
  for (auto& r : fwd_ready.front()) r = 0;  // the first stage has its inputs
  for (auto& r : bwd_ready.back()) r = 0;   // the last stage starts the backward from its loss
  std::vector<std::size_t> next(times.size(), 0);
  std::vector<double> free_at(times.size(), 0);
  // Every pass schedules each stage's tasks until one waits for an input not yet produced; the
  // schedules are deadlock-free, so each pass makes progress until every task is placed.
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      const auto si = static_cast<std::size_t>(s);
      while (next[si] < order[si].size()) {
        PipelineTask t = order[si][next[si]];
        const auto j = static_cast<std::size_t>(t.micro_batch);
        const double ready = t.backward ? bwd_ready[si][j] : fwd_ready[si][j];
        if (ready < 0) break;
        const StageTimes& st = times[si];
        t.start_us = std::max(free_at[si], ready);
        t.end_us = t.start_us + (t.backward ? st.backward_us : st.forward_us);
        free_at[si] = t.end_us;
        if (!t.backward && s + 1 < p) fwd_ready[si + 1][j] = t.end_us - st.forward_send_us;
        if (t.backward && s > 0) bwd_ready[si - 1][j] = t.end_us - st.backward_send_us;
        if (!t.backward && training && s + 1 == p) bwd_ready[si][j] = t.end_us;
        out.stages[si].push_back(t);
        ++next[si];
        progress = true;
      }
    }
  }
  for (std::size_t s = 0; s < times.size(); ++s) {
    if (next[s] != order[s].size()) throw std::logic_error("pipeline schedule: a stage waits forever");
  }
  for (std::size_t s = 0; s < times.size(); ++s) {
    double end = free_at[s];
    if (training) {
      out.optimizer_start_us.push_back(end);
      out.optimizer_us.push_back(times[s].optimizer_us);
      end += times[s].optimizer_us;
    }
    out.makespan_us = std::max(out.makespan_us, end);
  }
  return out;
}

}  // namespace gpusim::workloads
