// A PyTorch profiler trace (the Chrome-trace JSON torch.profiler exports through Kineto, plain or
// gzip'd), read into what `gpusim replay` needs: the GPU activities in stream order (kernels with
// their launch shapes, memcpy and memset with their bytes) and, for each, the innermost CPU op
// that launched it with the input shapes and types record_shapes=True records.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <simdjson.h>

#include "hw/launch.h"

namespace gpusim::replay {

// An aten op as record_shapes recorded it: per input its dims (empty for a scalar or None) and
// type ("c10::BFloat16", "float", "Scalar", "" for None, "TensorList" for lists), the concrete
// value of scalars ("True", "0.125"), and, for a tensor list, the dims of each tensor.
struct RecordedOp {
  std::string name;  // "aten::mm"
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<std::string> types;
  std::vector<std::string> concrete;
  std::vector<std::vector<std::vector<std::int64_t>>> list_dims;  // per input: a tensor list's tensors
  std::vector<std::vector<std::int64_t>> strides;  // per input, where recorded ("Input Strides")
  std::int64_t external_id = 0;
};

enum class ActivityKind { kKernel, kMemcpy, kMemset };

// One GPU activity. `op` indexes RecordedTrace::ops (nullopt: launched outside any recorded op).
struct RecordedActivity {
  ActivityKind kind = ActivityKind::kKernel;
  std::string name;
  int stream = 0;
  double start_us = 0, duration_us = 0;
  hw::Dim3 grid, block;
  int regs = 0;
  std::int64_t smem = 0;
  std::int64_t bytes = 0;  // memcpy / memset
  std::optional<std::size_t> op;
  // When the host called the launch (the CUDA runtime event of the same correlation id), on the
  // trace's clock; nullopt when the trace has no runtime events for it.
  std::optional<double> launch_us;
};

// A synchronization the host asked for: a stream waiting for an event recorded on another stream
// (cudaStreamWaitEvent), or the whole device (cudaDeviceSynchronize). Traces name the waiting
// stream and the event but not the stream the event was recorded on.
struct RecordedSync {
  enum class Kind { kStreamWaitEvent, kDevice } kind = Kind::kStreamWaitEvent;
  int stream = -1;     // the waiting stream (kStreamWaitEvent)
  double host_us = 0;  // when the host made the call, on the trace's clock
};

struct RecordedTrace {
  std::string file;         // as given, for messages
  std::string device_name;  // deviceProperties[0].name, if recorded
  std::vector<RecordedOp> ops;
  std::vector<RecordedActivity> activities;  // by start time
  std::vector<RecordedSync> syncs;            // by host time
  // False where the format records no scalar arguments and flattens tensor lists into their
  // tensors (Nsight Systems' NVTX ranges): rules then read what they need from the shapes
  // (replay/kernel_mapping.cpp says how).
  bool scalars_recorded = true;
};

// Reads a trace. Bad input (not JSON, truncated, no traceEvents, no GPU activity, recorded
// without record_shapes) is a ConfigError naming the file and what to do.
RecordedTrace read_profiler_trace(const std::filesystem::path& file);

// The same from text in memory (`file` names it in errors).
RecordedTrace parse_profiler_trace(const std::string& text, const std::string& file);
RecordedTrace parse_profiler_trace(simdjson::padded_string_view text, const std::string& file);

// The number of elements of a tensor of these dims (1 for a scalar).
std::int64_t numel(const std::vector<std::int64_t>& dims);

}  // namespace gpusim::replay
