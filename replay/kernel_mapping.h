// Turns a recorded trace's GPU activities into launches on a target chip: each op instance (the
// kernels one recorded aten op launched) is recognized by the op's name and kernels and lowered
// by the cost model of its family with the shapes taken from the op's recorded inputs, so that
// the target chip's library choices (tiles, split-K, kernel variants) are re-made there. What
// no rule maps is carried over with its recorded duration scaled by a documented rule.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "models/kernel_model.h"
#include "replay/profiler_trace.h"

namespace gpusim::replay {

// One op instance: its recorded activities (consecutive on one stream, launched by one op) and
// the launches that stand for them on the target chip.
struct MappedGroup {
  std::string op;             // the recorded op's name ("aten::mm"), or the activity's own name
  std::string family;         // the mapping rule: gemm, attention, attention_backward, elementwise,
                              // cat, reduce, softmax, loss, embedding_backward, foreach, memcpy,
                              // memset; or "unmapped"
  bool mapped = false;        // false: carried over (scaled recorded durations)
  std::string why;            // unmapped: why no rule applied
  int stream = 0;
  std::vector<std::size_t> activities;  // indices into RecordedTrace::activities
  double recorded_us = 0;     // the activities' summed recorded durations
  std::vector<hw::Launch> launches;
};

// How carried-over durations scale from the recording chip to the target: memory-bound work by
// the DRAM bandwidth ratio, GEMM- and convolution-like kernels (by name) by the dense tensor peak
// ratio. 1 when the chips are the same or the recording chip is not known.
double carry_scale(const std::string& kernel_name, const hw::HardwareSpec* from, const hw::HardwareSpec& to);

// Maps every activity of `trace` (in order) to groups. `from` is the chip the trace was
// recorded on (nullptr: unknown; carried kernels keep their recorded durations).
std::vector<MappedGroup> map_trace(const RecordedTrace& trace, const hw::HardwareSpec& to, const hw::HardwareSpec* from,
                                   const models::KernelModelRegistry& models);

}  // namespace gpusim::replay
