// A pipeline's schedule (pipeline_parallel, issue 19): each stage's GPU runs its micro-batches'
// forwards (and, in training, their backwards) in the order the schedule gives, and each waits for
// its input from the neighbouring stage. The bubbles are what these dependencies leave idle.
//
// Inference runs every micro-batch's forward in order on every stage. Training runs Megatron's
// non-interleaved 1F1B: stage s runs min(stages - s - 1, micro_batches) forwards to fill the
// pipeline, then alternates one forward and one backward, then drains the remaining backwards.
#pragma once

#include <vector>

namespace gpusim::workloads {

// One micro-batch's work on a stage, as simulated on its GPU.
struct StageTimes {
  double forward_us = 0;   // first kernel (the receive) to last (the send)
  double backward_us = 0;  // training only
  // How long before its forward (backward) ends the stage's send starts: the neighbouring stage's
  // receive runs alongside it (NCCL's send and receive meet), so that stage may start then.
  double forward_send_us = 0, backward_send_us = 0;
  double optimizer_us = 0;  // training: once, after the stage's last backward (gradient sync too)
};

struct PipelineTask {
  int micro_batch = 0;
  bool backward = false;
  double start_us = 0, end_us = 0;
};

struct PipelineSchedule {
  // Per stage, its tasks in the order it runs them; then its optimizer (training).
  std::vector<std::vector<PipelineTask>> stages;
  std::vector<double> optimizer_start_us, optimizer_us;  // per stage (training; empty otherwise)
  double makespan_us = 0;                  // from the first task's start to the last end
  // A stage's work (its tasks and optimizer) and its idle time within the makespan.
  double busy_us(int stage) const;
  double idle_us(int stage) const { return makespan_us - busy_us(stage); }
};

PipelineSchedule schedule_pipeline(const std::vector<StageTimes>& stages, int micro_batches, bool training);

}  // namespace gpusim::workloads
