// One step of a pipeline-parallel workload (pipeline_parallel > 1): every stage's GPU simulated
// on the engine for one micro-batch (its layers, the first stage's embedding, the last stage's
// head, the NCCL send and receive between them), then composed by the pipeline's schedule
// (workloads/pipeline_schedule.h) into the step.
#pragma once

#include <string>

#include "workloads/model_run.h"

namespace gpusim::workloads {

// The step's run has `pipeline` filled (a stage per GPU) and its total the schedule's makespan;
// the activation peak is the largest stage's: its gradients, and the activations of the
// micro-batches it holds at once.
SimulatedStep simulate_pipeline_step(const ModelWorkload& w, const std::string& phase, const StepShape& shape,
                                     bool detailed, OpLoweringCache& lowering, const hw::HardwareSpec& hw,
                                     hw::LaunchMode mode, const SimulateOptions& options,
                                     hw::KernelOutcomeCache* cache);

}  // namespace gpusim::workloads
