// Kineto's Chrome trace: "traceEvents" holds complete events ("ph": "X"); GPU activities carry
// cat "kernel", "gpu_memcpy" or "gpu_memset" and, in args, the "External id" of the innermost
// CPU op (cat "cpu_op") whose launch they came from. record_shapes adds "Input Dims",
// "Input type" and "Concrete Inputs" to each cpu_op's args.
#include "replay/profiler_trace.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/error.h"

namespace gpusim::replay {
namespace {

using nlohmann::json;

// The whole file, gunzipped when it is gzip'd (zlib reads plain files through as they are).
std::string read_text(const std::filesystem::path& file) {
  gzFile f = gzopen(file.string().c_str(), "rb");
  if (f == nullptr) throw ConfigError(file.string(), 0, "", "cannot open the trace (no such file, or not readable)");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  int err = 0;
  const char* msg = gzerror(f, &err);
  const std::string why = err != Z_OK && err != Z_STREAM_END ? std::string(msg ? msg : "") : std::string();
  gzclose(f);
  if (n < 0 || !why.empty()) {
    throw ConfigError(file.string(), 0, "", fmt::format("cannot read the trace: {} (a truncated gzip file?)", why));
  }
  return text;
}

std::vector<std::int64_t> int_list(const json& j) {
  std::vector<std::int64_t> out;
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (v.is_number_integer()) out.push_back(v.get<std::int64_t>());
  }
  return out;
}

hw::Dim3 dim3(const json& j) {
  const auto v = int_list(j);
  hw::Dim3 d;
  if (v.size() > 0) d.x = v[0];
  if (v.size() > 1) d.y = v[1];
  if (v.size() > 2) d.z = v[2];
  return d;
}

RecordedOp read_op(const json& e) {
  RecordedOp op;
  op.name = e.value("name", "");
  const json& a = e.at("args");
  op.external_id = a.value("External id", std::int64_t{0});
  if (a.contains("Input Dims") && a["Input Dims"].is_array()) {
    for (const auto& d : a["Input Dims"]) {
      // A tensor list's dims are a list of lists.
      std::vector<std::vector<std::int64_t>> list;
      if (d.is_array() && !d.empty() && d.front().is_array()) {
        for (const auto& t : d) list.push_back(int_list(t));
        op.dims.emplace_back();
      } else {
        op.dims.push_back(int_list(d));
      }
      op.list_dims.push_back(std::move(list));
    }
  }
  if (a.contains("Input type") && a["Input type"].is_array()) {
    for (const auto& t : a["Input type"]) op.types.push_back(t.is_string() ? t.get<std::string>() : std::string());
  }
  if (a.contains("Concrete Inputs") && a["Concrete Inputs"].is_array()) {
    for (const auto& c : a["Concrete Inputs"]) op.concrete.push_back(c.is_string() ? c.get<std::string>() : std::string());
  }
  return op;
}

}  // namespace

std::int64_t numel(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (const auto d : dims) n *= d;
  return n;
}

RecordedTrace parse_profiler_trace(const std::string& text, const std::string& file) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(file, 0, "", fmt::format("not a profiler trace: malformed JSON at byte {} ({}); a trace cut short "
                                               "while it was written is truncated like this",
                                               e.byte, e.what()));
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    throw ConfigError(file, 0, "traceEvents",
                      "not a profiler trace: no traceEvents list (export one with torch.profiler's "
                      "prof.export_chrome_trace(path))");
  }
  RecordedTrace t;
  t.file = file;
  if (doc.contains("deviceProperties") && doc["deviceProperties"].is_array() && !doc["deviceProperties"].empty()) {
    t.device_name = doc["deviceProperties"].front().value("name", "");
  }
  std::map<std::int64_t, std::size_t> op_by_id;
  bool shapes = false;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("args") || !e["args"].is_object()) continue;
    const std::string cat = e.value("cat", "");
    if (cat == "cpu_op") {
      RecordedOp op = read_op(e);
      shapes = shapes || e["args"].contains("Input Dims");
      op_by_id[op.external_id] = t.ops.size();
      t.ops.push_back(std::move(op));
    }
  }
  for (const auto& e : doc["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("args") || !e["args"].is_object()) continue;
    const std::string cat = e.value("cat", "");
    RecordedActivity a;
    if (cat == "kernel") a.kind = ActivityKind::kKernel;
    else if (cat == "gpu_memcpy") a.kind = ActivityKind::kMemcpy;
    else if (cat == "gpu_memset") a.kind = ActivityKind::kMemset;
    else continue;
    const json& args = e["args"];
    a.name = e.value("name", "");
    a.stream = args.value("stream", 0);
    a.start_us = e.value("ts", 0.0);
    a.duration_us = e.value("dur", 0.0);
    a.grid = dim3(args.value("grid", json::array()));
    a.block = dim3(args.value("block", json::array()));
    a.regs = args.value("registers per thread", 0);
    a.smem = args.value("shared memory", std::int64_t{0});
    a.bytes = args.value("bytes", std::int64_t{0});
    if (const auto it = op_by_id.find(args.value("External id", std::int64_t{-1})); it != op_by_id.end()) a.op = it->second;
    t.activities.push_back(std::move(a));
  }
  if (t.activities.empty()) {
    throw ConfigError(file, 0, "traceEvents",
                      "the trace has no GPU activity (record with activities=[ProfilerActivity.CPU, "
                      "ProfilerActivity.CUDA])");
  }
  if (!shapes) {
    throw ConfigError(file, 0, "Input Dims",
                      "the trace was recorded without shapes: record it with torch.profiler.profile(..., "
                      "record_shapes=True) so each kernel's op carries its input shapes");
  }
  std::stable_sort(t.activities.begin(), t.activities.end(),
                   [](const RecordedActivity& x, const RecordedActivity& y) { return x.start_us < y.start_us; });
  return t;
}

RecordedTrace read_profiler_trace(const std::filesystem::path& file) {
  return parse_profiler_trace(read_text(file), file.string());
}

}  // namespace gpusim::replay
