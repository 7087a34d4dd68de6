// Nsight Systems' SQLite export (`nsys export --type sqlite report.nsys-rep`), read into the same
// RecordedTrace as a PyTorch profiler trace. The program must have been profiled with PyTorch's
// NVTX ranges carrying shapes (`with torch.autograd.profiler.emit_nvtx(record_shapes=True):`
// under `nsys profile --trace=cuda,nvtx`): each range's text is "aten::mm, seq = 12, op_id = 40,
// sizes = [[1024, 2048], [2048, 4096]], ...". A kernel's op is the innermost such range open on
// the launching thread when the launch call was made (the runtime row of the kernel's
// correlation id). NVTX records no element types and no scalar arguments: an op's type is read
// from its kernels' names (c10::BFloat16, __half, float, ...), else `default_type`.
#pragma once

#include <filesystem>
#include <string>

#include "replay/profiler_trace.h"

namespace gpusim::replay {

// True when the file starts with SQLite's header.
bool is_sqlite_file(const std::filesystem::path& file);

// Reads an Nsight Systems export. `default_type` ("c10::BFloat16", "c10::Half", "float", or
// empty) types the ops whose kernels name no type; empty: the type most of the trace's kernels
// name. Bad input (not an nsys export, no kernels, kernels of several GPUs, no NVTX shapes) is a
// ConfigError naming the file and what to do.
RecordedTrace read_nsys_trace(const std::filesystem::path& file, const std::string& default_type = "");

// The PyTorch type a kernel's name names ("c10::BFloat16", "c10::Half", "float"), or empty.
std::string type_in_kernel_name(const std::string& name);

}  // namespace gpusim::replay
