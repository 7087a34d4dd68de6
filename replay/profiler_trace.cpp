// Kineto's Chrome trace: "traceEvents" holds complete events ("ph": "X"); GPU activities carry
// cat "kernel", "gpu_memcpy" or "gpu_memset" and, in args, the "External id" of the innermost
// CPU op (cat "cpu_op") whose launch they came from. record_shapes adds "Input Dims",
// "Input type" and "Concrete Inputs" to each cpu_op's args.
#include "replay/profiler_trace.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <unordered_map>

#include "replay/gzip_text.h"
#include "sim/error.h"
#include "sim/input_file.h"

namespace gpusim::replay {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Reads `n` bytes of `file` into `out`.
void read_bytes(const std::filesystem::path& file, char* out, std::size_t n) {
  std::FILE* f = std::fopen(file.string().c_str(), "rb");
  if (f == nullptr) throw ConfigError(file.string(), 0, "", "cannot open the trace (no such file, or not readable)");
  const std::size_t got = std::fread(out, 1, n, f);
  std::fclose(f);
  if (got != n) throw ConfigError(file.string(), 0, "", "cannot read the trace (it changed while it was read?)");
}

// The whole file, gunzipped when it is gzip'd (replay/gzip_text.h), with simdjson's padding after it.
PaddedText read_text(const std::filesystem::path& file) {
  check_input_file(file);
  std::error_code ec;
  const auto file_size = static_cast<std::size_t>(std::filesystem::file_size(file, ec));
  if (ec) throw ConfigError(file.string(), 0, "", "cannot open the trace (no such file, or not readable)");
  PaddedText raw;
  raw.bytes = std::make_unique_for_overwrite<char[]>(file_size + simdjson::SIMDJSON_PADDING);
  raw.capacity = file_size + simdjson::SIMDJSON_PADDING;
  read_bytes(file, raw.bytes.get(), file_size);
  raw.size = file_size;
  const auto* in = reinterpret_cast<const unsigned char*>(raw.bytes.get());
  if (is_gzip(in, file_size)) return gunzip(in, file_size, simdjson::SIMDJSON_PADDING, file.string());
  std::fill_n(raw.bytes.get() + raw.size, simdjson::SIMDJSON_PADDING, '\0');
  return raw;
}

namespace od = simdjson::ondemand;

[[noreturn]] void malformed(const std::string& file, simdjson::error_code err) {
  throw ConfigError(file, 0, "", fmt::format("not a profiler trace: malformed JSON ({}); a trace cut short while it "
                                             "was written is truncated like this",
                                             simdjson::error_message(err)));
}

// Malformed JSON met while scanning; parse_profiler_trace names the file.
struct Malformed {
  simdjson::error_code err;
};

// True on success; false when a value has another type than replay reads it as (the field is
// then ignored, as a field replay does not know is); any other error is malformed JSON.
bool got(simdjson::error_code err) {
  if (err == simdjson::SUCCESS) return true;
  if (err == simdjson::INCORRECT_TYPE || err == simdjson::NUMBER_OUT_OF_RANGE) return false;
  throw Malformed{err};
}

// A number as a double (the trace writes integers and reals alike); `fallback` for another type.
double od_number(od::value v, double fallback = 0) {
  od::number n;
  return got(v.get_number().get(n)) ? n.as_double() : fallback;
}

std::int64_t od_integer(od::value v, std::int64_t fallback = 0) {
  return static_cast<std::int64_t>(od_number(v, static_cast<double>(fallback)));
}

hw::Dim3 od_dim3(od::value v) {
  hw::Dim3 d;
  od::array a;
  if (!got(v.get_array().get(a))) return d;
  std::int64_t* slots[] = {&d.x, &d.y, &d.z};
  std::size_t i = 0;
  for (auto e : a) {
    od::value x;
    got(e.get(x));
    const auto n = od_integer(x);
    if (i < 3) *slots[i] = n;
    ++i;
  }
  return d;
}

// One complete event as found in a single pass over the document: the fields replay reads, and
// for a CPU op the text of its record_shapes lists (parsed only when a kernel names the op).
struct ScannedEvent {
  std::string_view ph, cat, name;
  double ts = 0, dur = 0;
  bool has_args = false;
  std::int64_t external_id = -1, correlation = -1, stream = 0, regs = 0, smem = 0, bytes = 0;
  hw::Dim3 grid, block;
  std::string_view dims, types, concrete, strides;  // raw JSON arrays, empty when absent
  std::string_view sync_kind;                        // cuda_sync events: "Stream Wait Event", ...
};

// Calls `each(key, value)` for every field of `o`; keys compared as written (the keys replay
// reads have nothing to unescape).
template <typename Each>
void for_fields(od::object o, Each&& each) {
  for (auto f : o) {
    od::raw_json_string k;
    od::value v;
    if (!got(f.key().get(k)) || !got(f.value().get(v))) throw Malformed{simdjson::TAPE_ERROR};
    each(k, v);
  }
}

void scan_args(od::object args, ScannedEvent& ev) {
  for_fields(args, [&](od::raw_json_string k, od::value v) {
    const auto raw_array = [&](std::string_view& out) {
      od::array a;
      if (!got(v.get_array().get(a)) || !got(a.raw_json().get(out))) out = {};
    };
    if (k == "External id") ev.external_id = od_integer(v, -1);
    else if (k == "correlation") ev.correlation = od_integer(v, -1);
    else if (k == "stream") ev.stream = od_integer(v);
    else if (k == "registers per thread") ev.regs = od_integer(v);
    else if (k == "shared memory") ev.smem = od_integer(v);
    else if (k == "bytes") ev.bytes = od_integer(v);
    else if (k == "grid") ev.grid = od_dim3(v);
    else if (k == "block") ev.block = od_dim3(v);
    else if (k == "Input Dims") raw_array(ev.dims);
    else if (k == "Input type") raw_array(ev.types);
    else if (k == "Concrete Inputs") raw_array(ev.concrete);
    else if (k == "Input Strides") raw_array(ev.strides);
    else if (k == "cuda_sync_kind" && !got(v.get_string().get(ev.sync_kind))) ev.sync_kind = {};
  });
}

ScannedEvent scan_event(od::object o) {
  ScannedEvent ev;
  for_fields(o, [&](od::raw_json_string k, od::value v) {
    const auto text = [&](std::string_view& out) {
      if (!got(v.get_string().get(out))) out = {};
    };
    if (k == "ph") {
      text(ev.ph);
    } else if (k == "cat") {
      text(ev.cat);
    } else if (k == "name") {
      text(ev.name);
    } else if (k == "ts") {
      ev.ts = od_number(v);
    } else if (k == "dur") {
      ev.dur = od_number(v);
    } else if (k == "args") {
      od::object args;
      if (!got(v.get_object().get(args))) return;
      ev.has_args = true;
      scan_args(args, ev);
    }
  });
  return ev;
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

// A CPU op from its scanned event: the record_shapes lists parsed (each a small JSON array inside
// the padded document, so the DOM parser may read past its end).
RecordedOp read_op(const ScannedEvent& ev, simdjson::dom::parser& parser, const std::string& file) {
  RecordedOp op;
  op.name = std::string(ev.name);
  op.external_id = ev.external_id;
  const auto parse = [&](std::string_view raw, array& out) {
    element e;
    if (raw.empty()) return false;
    if (const auto err = parser.parse(raw.data(), raw.size(), false).get(e)) malformed(file, err);
    return !e.get(out);
  };
  array dims;
  if (parse(ev.dims, dims)) {
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
  const auto strings = [&](std::string_view raw, std::vector<std::string>& out) {
    array arr;
    if (!parse(raw, arr)) return;
    for (element v : arr) {
      std::string_view sv;
      out.push_back(v.get(sv) ? std::string() : std::string(sv));
    }
  };
  strings(ev.types, op.types);
  strings(ev.concrete, op.concrete);
  array strides;
  if (parse(ev.strides, strides)) {
    for (element st : strides) op.strides.push_back(int_list(st));
  }
  return op;
}

}  // namespace

std::int64_t numel(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (const auto d : dims) n *= d;
  return n;
}

// One pass with simdjson's on-demand API: nothing is built for the events replay does not read,
// and a CPU op's shapes are parsed only when a GPU activity names the op.
RecordedTrace parse_profiler_trace(const simdjson::padded_string_view text, const std::string& file) {
  od::parser parser;
  od::document doc;
  RecordedTrace t;
  t.file = file;
  bool have_events = false, shapes = false;
  std::unordered_map<std::int64_t, ScannedEvent> ops;  // External id -> its cpu_op
  std::unordered_map<std::int64_t, double> launch_at;  // correlation id -> the runtime call's time
  std::vector<std::pair<ActivityKind, ScannedEvent>> gpu;
  std::vector<ScannedEvent> syncs;
  const auto on_event = [&](const ScannedEvent& ev) {
    if (ev.ph != "X" || !ev.has_args) return;
    if (ev.cat == "cpu_op") {
      shapes = shapes || !ev.dims.empty();
      ops[ev.external_id] = ev;
    } else if (ev.cat == "cuda_runtime" || ev.cat == "cuda_driver") {
      if (ev.correlation >= 0) launch_at[ev.correlation] = ev.ts;
    } else if (ev.cat == "kernel") {
      gpu.emplace_back(ActivityKind::kKernel, ev);
    } else if (ev.cat == "gpu_memcpy") {
      gpu.emplace_back(ActivityKind::kMemcpy, ev);
    } else if (ev.cat == "gpu_memset") {
      gpu.emplace_back(ActivityKind::kMemset, ev);
    } else if (ev.cat == "cuda_sync" && (ev.sync_kind == "Stream Wait Event" || ev.sync_kind == "Context Sync")) {
      syncs.push_back(ev);
    }
  };
  try {
    if (const auto err = parser.iterate(text).get(doc)) throw Malformed{err};
    od::object root;
    if (got(doc.get_object().get(root))) {
      for (auto field : root) {
        std::string_view key;
        od::value value;
        if (!got(field.unescaped_key().get(key)) || !got(field.value().get(value))) throw Malformed{simdjson::TAPE_ERROR};
        od::array list;
        if (key == "deviceProperties" && got(value.get_array().get(list))) {
          for (auto p : list) {
            od::object po;
            if (!got(p.get_object().get(po))) continue;
            for_fields(po, [&](od::raw_json_string k, od::value v) {
              std::string_view name;
              if (k == "name" && t.device_name.empty() && got(v.get_string().get(name))) t.device_name = std::string(name);
            });
          }
        } else if (key == "traceEvents" && got(value.get_array().get(list))) {
          have_events = true;
          for (auto item : list) {
            od::object o;
            if (got(item.get_object().get(o))) on_event(scan_event(o));
          }
        }
      }
    }
  } catch (const Malformed& m) {
    malformed(file, m.err);
  } catch (const simdjson::simdjson_error& e) {
    malformed(file, e.error());
  }
  if (!have_events) {
    throw ConfigError(file, 0, "traceEvents",
                      "not a profiler trace: no traceEvents list (export one with torch.profiler's "
                      "prof.export_chrome_trace(path))");
  }
  simdjson::dom::parser list_parser;
  std::unordered_map<std::int64_t, std::size_t> op_index;  // External id -> t.ops, for ops a kernel names
  for (const auto& [kind, e] : gpu) {
    RecordedActivity a;
    a.kind = kind;
    a.name = std::string(e.name);
    a.stream = static_cast<int>(e.stream);
    a.start_us = e.ts;
    a.duration_us = e.dur;
    a.grid = e.grid;
    a.block = e.block;
    a.regs = static_cast<int>(e.regs);
    a.smem = e.smem;
    a.bytes = e.bytes;
    if (const auto it = launch_at.find(e.correlation); it != launch_at.end()) a.launch_us = it->second;
    if (const auto it = op_index.find(e.external_id); it != op_index.end()) {
      a.op = it->second;
    } else if (const auto op = ops.find(e.external_id); op != ops.end()) {
      a.op = t.ops.size();
      op_index.emplace(e.external_id, t.ops.size());
      t.ops.push_back(read_op(op->second, list_parser, file));
    }
    t.activities.push_back(std::move(a));
  }
  for (const ScannedEvent& e : syncs) {
    RecordedSync sy;
    sy.kind = e.sync_kind == "Context Sync" ? RecordedSync::Kind::kDevice : RecordedSync::Kind::kStreamWaitEvent;
    sy.stream = static_cast<int>(e.stream);
    const auto it = launch_at.find(e.correlation);
    sy.host_us = it != launch_at.end() ? it->second : e.ts;
    t.syncs.push_back(sy);
  }
  std::stable_sort(t.syncs.begin(), t.syncs.end(),
                   [](const RecordedSync& x, const RecordedSync& y) { return x.host_us < y.host_us; });
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

RecordedTrace parse_profiler_trace(const std::string& text, const std::string& file) {
  const simdjson::padded_string padded(text);
  return parse_profiler_trace(simdjson::padded_string_view(padded), file);
}

RecordedTrace read_profiler_trace(const std::filesystem::path& file) {
  const PaddedText text = read_text(file);
  return parse_profiler_trace(simdjson::padded_string_view(text.bytes.get(), text.size, text.capacity), file.string());
}

}  // namespace gpusim::replay
