// One replay: a recorded trace mapped onto a chip (replay/kernel_mapping.h) and run on the
// engine, the launches in recorded order, each recorded stream its own (cross-stream events are
// not read). Modes: graph (back to back in stream order, as CUDA graphs replay), eager (issued one
// by one at the target's launch.eager_gap), as-recorded (issued with the host gaps the trace
// recorded between launch calls: the same program's host on the new chip).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "replay/kernel_mapping.h"
#include "replay/profiler_trace.h"

namespace gpusim::replay {

enum class ReplayMode { kGraph, kEager, kAsRecorded };

struct ReplayRun {
  std::vector<MappedGroup> groups;
  std::vector<hw::KernelNode> nodes;    // the launches run
  std::vector<std::size_t> group_of;    // per node, its group
  hw::EngineResult result;
  std::vector<double> group_us;         // per group, its launches' simulated kernel time
  double kernel_time_us = 0;            // summed over every launch
  std::uint64_t reused_outcomes = 0;    // launches that took a simulated outcome of an earlier one
};

// Maps the trace's kernels and runs them on `to`. With `reuse_outcomes`, a kernel that runs alone
// with the same launch and L2 state as one before it (the same layer's kernels, repeated) takes
// that one's simulated outcome (hw/kernel_outcome_cache.h): the same result, bit for bit, faster.
ReplayRun run_replay(const RecordedTrace& trace, const hw::HardwareSpec& to, const hw::HardwareSpec* from,
                     const models::KernelModelRegistry& models, ReplayMode mode = ReplayMode::kGraph,
                     bool reuse_outcomes = true);

// The trace's recorded kernel time: its GPU activities' summed durations.
// A trace file of either format: Nsight Systems' SQLite export (replay/nsys_trace.h; its ops
// typed `nsys_type` where their kernels name none, see read_nsys_trace) or a PyTorch profiler
// trace (replay/profiler_trace.h).
RecordedTrace read_trace(const std::filesystem::path& file, const std::string& nsys_type = "");

double recorded_kernel_time_us(const RecordedTrace& trace);

// The trace's recorded span: from the first launch call (or activity, without runtime events) to
// the last activity's end: what `--mode as-recorded`'s total compares with.
double recorded_span_us(const RecordedTrace& trace);

}  // namespace gpusim::replay
