// Simulating a model-level workload: every step's kernel DAG runs on the engine (each step
// starts on an idle GPU, as consecutive steps of eager PyTorch are separated by host work);
// per-step totals are kept for all steps, kernel-level results for the representative ones.
// Steps are independent, so they are lowered one at a time and simulated side by side, and
// kernels that run alone replay outcomes simulated before (hw/kernel_outcome_cache.h); neither
// changes a result.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "hw/kernel_outcome_cache.h"
#include "hw/timeline_recorder.h"
#include "models/kernel_model.h"
#include "workloads/memory_footprint.h"
#include "workloads/op_lowering_cache.h"
#include "workloads/pipeline_schedule.h"
#include "workloads/transformer_phases.h"
#include "workloads/transformer_step.h"
#include "workloads/workload.h"

namespace gpusim::workloads {

struct StepDetail {
  std::vector<hw::KernelNode> nodes;
  hw::EngineResult result;
  std::optional<hw::Timeline> timeline;  // when SimulateOptions asked for one
};

// A training step's phase within its one step: its kernels, their summed time, and its span
// from its first kernel's start to its last kernel's end.
struct PhaseSplit {
  std::string name;  // forward | backward | optimizer
  std::int64_t kernels = 0;
  double kernel_time_us = 0, total_us = 0;
  double end_us = 0;  // its last kernel's end, from the step's start
};

// Several GPUs in a pipeline (pipeline_parallel): one stage's GPU over the step.
struct PipelineStageRun {
  int stage = 0;
  std::int64_t first_layer = 0, layers = 0;
  double busy_us = 0, idle_us = 0;  // within the step: its work, and the bubbles
  std::int64_t kernels = 0;         // over the step (every micro-batch)
  double kernel_time_us = 0;
  std::vector<PipelineTask> tasks;  // when it ran each micro-batch's forward (backward)
  double optimizer_start_us = 0;    // training: after its last backward
  // One micro-batch's kernels (the step's detailed ones), and its phases (training) in order.
  std::optional<StepDetail> detail;
  std::vector<PhaseSplit> phase_splits;
};

struct StepRun {
  std::string phase;  // "prefill" | "decode" | "train"
  StepShape shape;
  double total_us = 0;        // first launch to last kernel end
  double kernel_time_us = 0;  // sum of kernel durations
  std::int64_t kernels = 0;
  std::uint64_t events = 0;
  std::optional<StepDetail> detail;  // the first step of each phase and the last step
  // Simulated with its first repeating layers only and extended (workloads/layer_repeat.h):
  // the same totals, reached faster.
  bool extended = false;
  std::vector<PhaseSplit> phase_splits;  // training steps only
  // pipeline_parallel: every stage's GPU; the step's kernels and kernel time are theirs summed
  // (one GPU of each stage), its total the schedule's makespan.
  std::vector<PipelineStageRun> pipeline;
};

struct ModelRun {
  std::vector<StepRun> steps;
  MemoryFootprint memory;
};

struct SimulateOptions {
  bool record_timeline = false;  // the detailed steps keep their timeline (counters)...
  bool record_ctas = false;      // ...and, with this too, every CTA group on every SM
  // Called after each step with the steps done and the steps in all (for progress displays).
  std::function<void(std::size_t done, std::size_t total)> on_step;
  // Reuse what was simulated before (kernels that run alone, hw/kernel_outcome_cache.h): the
  // same results, faster. Off only to check the caches against a simulation from scratch.
  bool reuse = true;
  // Shared with other runs on the same chip (a study's points); one of the run's own when null.
  // Given one, steps run in order on the calling thread (the caller is already parallel).
  hw::KernelOutcomeCache* cache = nullptr;
  // Simulate a run's steps side by side (TBB); results are the same either way.
  bool parallel_steps = true;
};

// The kernel outcome cache a run uses: none without reuse, the caller's when it serves this
// chip, else `own` (made here).
hw::KernelOutcomeCache* outcome_cache(const SimulateOptions& options, const hw::HardwareSpec& hw,
                                      std::optional<hw::KernelOutcomeCache>& own);

// One step's totals as simulate_model gets them: with a cache, its repeating layers simulated
// three deep and extended when they repeat (workloads/layer_repeat.h); otherwise, or when they do
// not, the whole step lowered and run. The same result either way.
// One GPU's program of a step, lowered and run, with its activation peak: as simulate_model runs a
// step (layer repetition with a cache, the whole program when `detailed` asks for a timeline).
struct SimulatedStep {
  StepRun run;
  double activation_peak_bytes = 0;
};
SimulatedStep simulate_one_step(const ModelWorkload& w, const std::string& phase, const StepShape& shape, bool detailed,
                                OpLoweringCache& lowering, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                                const SimulateOptions& options, hw::KernelOutcomeCache* cache);
// Runs a lowered program on the engine; `detailed` keeps its kernels and results.
StepRun run_step_program(StepProgram p, bool detailed, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                         const SimulateOptions& options, hw::KernelOutcomeCache* cache);

StepRun simulate_step(const ModelWorkload& w, const std::string& phase, const StepShape& shape, OpLoweringCache& lowering,
                      const hw::HardwareSpec& hw, hw::LaunchMode mode, hw::KernelOutcomeCache* cache);

ModelRun simulate_model(const ModelWorkload& w, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                        const models::KernelModelRegistry& models, const SimulateOptions& options = {});

// The same in two parts, for callers that size a run before deciding to simulate it: the
// footprint of steps already built (build_steps), then their simulation.
MemoryFootprint steps_footprint(const ModelWorkload& w, const std::vector<StepProgram>& steps,
                                const hw::HardwareSpec& hw);
ModelRun simulate_steps(const ModelWorkload& w, std::vector<StepProgram> steps, const hw::HardwareSpec& hw,
                        hw::LaunchMode mode, const SimulateOptions& options = {});

}  // namespace gpusim::workloads
