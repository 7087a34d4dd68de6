// Kineto's Chrome trace: "traceEvents" holds complete events ("ph": "X"); GPU activities carry
// cat "kernel", "gpu_memcpy" or "gpu_memset" and, in args, the "External id" of the innermost
// CPU op (cat "cpu_op") whose launch they came from. record_shapes adds "Input Dims",
// "Input type" and "Concrete Inputs" to each cpu_op's args.
#include "replay/profiler_trace.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <map>

#include "sim/error.h"

namespace gpusim::replay {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

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

// A number as a double (the trace writes integers and reals alike); `fallback` when absent.
double number(const object& o, std::string_view key, double fallback = 0) {
  element e;
  if (o[key].get(e)) return fallback;
  double d = 0;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  if (!e.get(d)) return d;
  if (!e.get(i)) return static_cast<double>(i);
  if (!e.get(u)) return static_cast<double>(u);
  return fallback;
}

std::int64_t integer(const object& o, std::string_view key, std::int64_t fallback = 0) {
  return static_cast<std::int64_t>(number(o, key, static_cast<double>(fallback)));
}

std::string text_of(const object& o, std::string_view key) {
  std::string_view v;
  return o[key].get(v) ? std::string() : std::string(v);
}

std::vector<std::int64_t> int_list(const element& e) {
  std::vector<std::int64_t> out;
  array a;
  if (e.get(a)) return out;
  for (element v : a) {
    std::int64_t i = 0;
    if (!v.get(i)) out.push_back(i);
  }
  return out;
}

hw::Dim3 dim3(const object& args, std::string_view key) {
  element e;
  hw::Dim3 d;
  if (args[key].get(e)) return d;
  const auto v = int_list(e);
  if (v.size() > 0) d.x = v[0];
  if (v.size() > 1) d.y = v[1];
  if (v.size() > 2) d.z = v[2];
  return d;
}

RecordedOp read_op(std::string_view name, const object& a) {
  RecordedOp op;
  op.name = std::string(name);
  op.external_id = integer(a, "External id");
  array dims;
  if (!a["Input Dims"].get(dims)) {
    for (element d : dims) {
      // A tensor list's dims are a list of lists.
      std::vector<std::vector<std::int64_t>> list;
      array inner;
      bool is_list = false;
      if (!d.get(inner)) {
        for (element t : inner) {
          array tt;
          if (!t.get(tt)) {
            is_list = true;
            list.push_back(int_list(t));
          }
        }
      }
      op.dims.push_back(is_list ? std::vector<std::int64_t>{} : int_list(d));
      op.list_dims.push_back(std::move(list));
    }
  }
  const auto strings = [&](std::string_view key, std::vector<std::string>& out) {
    array arr;
    if (a[key].get(arr)) return;
    for (element v : arr) {
      std::string_view sv;
      out.push_back(v.get(sv) ? std::string() : std::string(sv));
    }
  };
  strings("Input type", op.types);
  strings("Concrete Inputs", op.concrete);
  return op;
}

}  // namespace

std::int64_t numel(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (const auto d : dims) n *= d;
  return n;
}

RecordedTrace parse_profiler_trace(const std::string& text, const std::string& file) {
  simdjson::dom::parser parser;
  element doc;
  if (const auto err = parser.parse(text).get(doc)) {
    throw ConfigError(file, 0, "", fmt::format("not a profiler trace: malformed JSON ({}); a trace cut short while it "
                                               "was written is truncated like this",
                                               simdjson::error_message(err)));
  }
  object root;
  array events;
  if (doc.get(root) || root["traceEvents"].get(events)) {
    throw ConfigError(file, 0, "traceEvents",
                      "not a profiler trace: no traceEvents list (export one with torch.profiler's "
                      "prof.export_chrome_trace(path))");
  }
  RecordedTrace t;
  t.file = file;
  array props;
  if (!root["deviceProperties"].get(props)) {
    for (element p : props) {
      object po;
      if (!p.get(po)) t.device_name = text_of(po, "name");
      break;
    }
  }
  std::map<std::int64_t, std::size_t> op_by_id;
  std::map<std::int64_t, double> launch_at;  // correlation id -> the runtime call's time
  bool shapes = false;
  struct Gpu {
    ActivityKind kind;
    object e, args;
  };
  std::vector<Gpu> gpu;
  for (element ev : events) {
    object e, args;
    std::string_view ph, cat;
    if (ev.get(e) || e["ph"].get(ph) || ph != "X" || e["args"].get(args) || e["cat"].get(cat)) continue;
    if (cat == "cpu_op") {
      std::string_view name;
      if (e["name"].get(name)) name = "";
      RecordedOp op = read_op(name, args);
      element dims;
      shapes = shapes || !args["Input Dims"].get(dims);
      op_by_id[op.external_id] = t.ops.size();
      t.ops.push_back(std::move(op));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      const std::int64_t corr = integer(args, "correlation", -1);
      if (corr >= 0) launch_at[corr] = number(e, "ts");
    } else if (cat == "kernel") {
      gpu.push_back({ActivityKind::kKernel, e, args});
    } else if (cat == "gpu_memcpy") {
      gpu.push_back({ActivityKind::kMemcpy, e, args});
    } else if (cat == "gpu_memset") {
      gpu.push_back({ActivityKind::kMemset, e, args});
    }
  }
  for (const Gpu& g : gpu) {
    RecordedActivity a;
    a.kind = g.kind;
    a.name = text_of(g.e, "name");
    a.stream = static_cast<int>(integer(g.args, "stream"));
    a.start_us = number(g.e, "ts");
    a.duration_us = number(g.e, "dur");
    a.grid = dim3(g.args, "grid");
    a.block = dim3(g.args, "block");
    a.regs = static_cast<int>(integer(g.args, "registers per thread"));
    a.smem = integer(g.args, "shared memory");
    a.bytes = integer(g.args, "bytes");
    if (const auto it = op_by_id.find(integer(g.args, "External id", -1)); it != op_by_id.end()) a.op = it->second;
    if (const auto it = launch_at.find(integer(g.args, "correlation", -1)); it != launch_at.end()) a.launch_us = it->second;
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
