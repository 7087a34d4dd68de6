// Tables read (Nsight Systems' export schema, stable since 2021): CUPTI_ACTIVITY_KIND_KERNEL,
// _MEMCPY and _MEMSET (GPU activities, times in ns, names as StringIds), CUPTI_ACTIVITY_KIND_RUNTIME
// (the launch calls: thread and time by correlation id), NVTX_EVENTS (push/pop and start/end
// ranges, text inline or as a StringId) and TARGET_INFO_GPU (the device's name).
#include "replay/nsys_trace.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "sim/error.h"

namespace gpusim::replay {
namespace {

struct Db {
  sqlite3* db = nullptr;
  std::string file;
  ~Db() { sqlite3_close(db); }

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(file, 0, "", what); }

  bool has_table(const std::string& name) const {
    bool found = false;
    each("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '" + name + "'",
         [&](sqlite3_stmt*) { found = true; });
    return found;
  }

  // Runs `sql`, calling `row` for each result row.
  void each(const std::string& sql, const std::function<void(sqlite3_stmt*)>& row) const {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      fail(fmt::format("not an Nsight Systems export gpusim reads ({}); export one with nsys export --type "
                       "sqlite REPORT.nsys-rep",
                       sqlite3_errmsg(db)));
    }
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
    int rc = 0;
    while ((rc = sqlite3_step(raw)) == SQLITE_ROW) row(raw);
    if (rc != SQLITE_DONE) fail(fmt::format("cannot read the export: {}", sqlite3_errmsg(db)));
  }
};

std::string text_column(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
}

// "[[1024, 2048], [], [8]]" (PyTorch's shapesToStr) read from `at`; nullopt when malformed.
std::optional<std::vector<std::vector<std::int64_t>>> parse_sizes(std::string_view s) {
  std::size_t i = 0;
  const auto skip = [&] {
    while (i < s.size() && s[i] == ' ') ++i;
  };
  const auto eat = [&](char c) {
    skip();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  std::vector<std::vector<std::int64_t>> out;
  if (!eat('[')) return std::nullopt;
  if (eat(']')) return out;
  do {
    if (!eat('[')) return std::nullopt;
    std::vector<std::int64_t> dims;
    if (!eat(']')) {
      do {
        skip();
        std::size_t j = i;
        while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '-')) ++j;
        if (j == i) return std::nullopt;
        dims.push_back(std::stoll(std::string(s.substr(i, j - i))));
        i = j;
      } while (eat(','));
      if (!eat(']')) return std::nullopt;
    }
    out.push_back(std::move(dims));
  } while (eat(','));
  if (!eat(']')) return std::nullopt;
  return out;
}

// An NVTX range's text as PyTorch's emit_nvtx writes it: the op's name, then ", seq = N",
// ", op_id = N", ", sizes = [[...]]", ", input_op_ids = [...]" as they apply.
struct RangeText {
  std::string name;
  std::optional<std::vector<std::vector<std::int64_t>>> sizes;
};

RangeText parse_range_text(const std::string& text) {
  RangeText r;
  std::size_t cut = text.size();
  for (const char* field : {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "}) {
    cut = std::min(cut, text.find(field));
  }
  r.name = text.substr(0, cut);
  if (const auto at = text.find(", sizes = "); at != std::string::npos) {
    r.sizes = parse_sizes(std::string_view(text).substr(at + std::strlen(", sizes = ")));
  }
  return r;
}

struct Range {
  std::int64_t start = 0, end = 0;
  std::size_t text = 0;  // into the texts read
};

struct LaunchCall {
  std::int64_t at = 0;
  std::size_t activity = 0;
};

// For each launch, the innermost range open at its time on its thread (ranges on one thread nest).
void innermost_ranges(std::vector<Range>& ranges, std::vector<LaunchCall>& launches,
                      const std::function<void(std::size_t activity, const Range&)>& found) {
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;  // outer first
  });
  std::sort(launches.begin(), launches.end(), [](const LaunchCall& a, const LaunchCall& b) { return a.at < b.at; });
  std::vector<const Range*> open;
  std::size_t next = 0;
  for (const LaunchCall& l : launches) {
    while (next < ranges.size() && ranges[next].start <= l.at) {
      while (!open.empty() && open.back()->end < ranges[next].start) open.pop_back();
      open.push_back(&ranges[next++]);
    }
    while (!open.empty() && open.back()->end < l.at) open.pop_back();
    if (!open.empty()) found(l.activity, *open.back());
  }
}

}  // namespace

bool is_sqlite_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  char head[16] = {};
  return in.read(head, sizeof head) && std::memcmp(head, "SQLite format 3", 16) == 0;
}

std::string type_in_kernel_name(const std::string& name) {
  const auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("BFloat16") || has("bfloat16") || has("bf16")) return "c10::BFloat16";
  if (has("c10::Half") || has("__half") || has("fp16") || has("f16")) return "c10::Half";
  if (has("<float") || has(" float") || has("float>") || has("float,") || has("fp32") || has("f32")) return "float";
  return "";
}

RecordedTrace read_nsys_trace(const std::filesystem::path& path, const std::string& default_type) {
  Db db;
  db.file = path.string();
  if (sqlite3_open_v2(db.file.c_str(), &db.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    db.fail(fmt::format("cannot open the export: {}", db.db ? sqlite3_errmsg(db.db) : "out of memory"));
  }
  const std::string how =
      "profile with nsys profile --trace=cuda,nvtx, the program's steps under "
      "torch.autograd.profiler.emit_nvtx(record_shapes=True), then nsys export --type sqlite";
  if (!db.has_table("CUPTI_ACTIVITY_KIND_KERNEL") || !db.has_table("StringIds")) {
    db.fail("the export has no CUDA kernel activity (" + how + ")");
  }
  std::unordered_map<std::int64_t, std::string> strings;
  db.each("SELECT id, value FROM StringIds", [&](sqlite3_stmt* s) { strings[sqlite3_column_int64(s, 0)] = text_column(s, 1); });
  const auto string_of = [&](std::int64_t id) {
    const auto it = strings.find(id);
    return it == strings.end() ? std::string() : it->second;
  };

  RecordedTrace t;
  t.file = db.file;
  t.scalars_recorded = false;
  std::vector<std::int64_t> correlation;  // per activity
  std::map<std::int64_t, std::size_t> kernels_by_device;
  db.each(
      "SELECT start, end, deviceId, streamId, correlationId, demangledName, gridX, gridY, gridZ, blockX, blockY, "
      "blockZ, registersPerThread, staticSharedMemory + dynamicSharedMemory FROM CUPTI_ACTIVITY_KIND_KERNEL",
      [&](sqlite3_stmt* s) {
        RecordedActivity a;
        a.kind = ActivityKind::kKernel;
        a.start_us = static_cast<double>(sqlite3_column_int64(s, 0)) * 1e-3;
        a.duration_us = static_cast<double>(sqlite3_column_int64(s, 1) - sqlite3_column_int64(s, 0)) * 1e-3;
        ++kernels_by_device[sqlite3_column_int64(s, 2)];
        a.stream = static_cast<int>(sqlite3_column_int64(s, 3));
        correlation.push_back(sqlite3_column_int64(s, 4));
        a.name = string_of(sqlite3_column_int64(s, 5));
        a.grid = {sqlite3_column_int64(s, 6), sqlite3_column_int64(s, 7), sqlite3_column_int64(s, 8)};
        a.block = {sqlite3_column_int64(s, 9), sqlite3_column_int64(s, 10), sqlite3_column_int64(s, 11)};
        a.regs = sqlite3_column_int(s, 12);
        a.smem = sqlite3_column_int64(s, 13);
        t.activities.push_back(std::move(a));
      });
  if (t.activities.empty()) db.fail("the export has no CUDA kernel activity (" + how + ")");
  if (kernels_by_device.size() > 1) {
    db.fail(fmt::format("the export holds kernels of {} GPUs; replay reads one GPU's trace (profile one process "
                        "per GPU, or export each rank's report on its own)",
                        kernels_by_device.size()));
  }
  const std::int64_t device = kernels_by_device.begin()->first;
  const auto copies = [&](const std::string& table, ActivityKind kind) {
    if (!db.has_table(table)) return;
    const bool memcpy = kind == ActivityKind::kMemcpy;
    db.each(fmt::format("SELECT start, end, streamId, correlationId, bytes, {} FROM {} WHERE deviceId = {}",
                        memcpy ? "copyKind" : "0", table, device),
            [&](sqlite3_stmt* s) {
              RecordedActivity a;
              a.kind = kind;
              a.start_us = static_cast<double>(sqlite3_column_int64(s, 0)) * 1e-3;
              a.duration_us = static_cast<double>(sqlite3_column_int64(s, 1) - sqlite3_column_int64(s, 0)) * 1e-3;
              a.stream = static_cast<int>(sqlite3_column_int64(s, 2));
              correlation.push_back(sqlite3_column_int64(s, 3));
              a.bytes = sqlite3_column_int64(s, 4);
              // The names the PyTorch profiler gives copies (CUPTI's copy kinds 1, 2 and 8).
              static const std::map<std::int64_t, std::string> kinds = {
                  {1, "Memcpy HtoD"}, {2, "Memcpy DtoH"}, {8, "Memcpy DtoD (Device -> Device)"}, {10, "Memcpy PtoP"}};
              const auto k = kinds.find(sqlite3_column_int64(s, 5));
              a.name = memcpy ? (k != kinds.end() ? k->second : "Memcpy") : "Memset (Device)";
              t.activities.push_back(std::move(a));
            });
  };
  copies("CUPTI_ACTIVITY_KIND_MEMCPY", ActivityKind::kMemcpy);
  copies("CUPTI_ACTIVITY_KIND_MEMSET", ActivityKind::kMemset);
  if (db.has_table("TARGET_INFO_GPU")) {
    db.each(fmt::format("SELECT name FROM TARGET_INFO_GPU WHERE id = {}", device),
            [&](sqlite3_stmt* s) { t.device_name = text_column(s, 0); });
  }

  // Stream waits on events (CUPTI synchronization type 2) and device synchronizations (4), timed
  // by their runtime calls below.
  std::unordered_map<std::int64_t, std::size_t> sync_of;  // correlation id -> t.syncs
  if (db.has_table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) {
    db.each(fmt::format("SELECT start, streamId, correlationId, syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION "
                        "WHERE syncType IN (2, 4) AND deviceId = {}",
                        device),
            [&](sqlite3_stmt* s) {
              RecordedSync sy;
              sy.kind = sqlite3_column_int(s, 3) == 4 ? RecordedSync::Kind::kDevice : RecordedSync::Kind::kStreamWaitEvent;
              sy.stream = static_cast<int>(sqlite3_column_int64(s, 1));
              sy.host_us = static_cast<double>(sqlite3_column_int64(s, 0)) * 1e-3;
              sync_of.emplace(sqlite3_column_int64(s, 2), t.syncs.size());
              t.syncs.push_back(sy);
            });
  }

  // The launch calls: thread and time of each activity's runtime call.
  std::unordered_map<std::int64_t, std::size_t> activity_of;  // correlation id -> activity
  for (std::size_t i = 0; i < correlation.size(); ++i) activity_of.emplace(correlation[i], i);
  std::map<std::int64_t, std::vector<LaunchCall>> launches;  // by thread
  if (db.has_table("CUPTI_ACTIVITY_KIND_RUNTIME")) {
    db.each("SELECT start, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME", [&](sqlite3_stmt* s) {
      if (const auto sy = sync_of.find(sqlite3_column_int64(s, 2)); sy != sync_of.end()) {
        t.syncs[sy->second].host_us = static_cast<double>(sqlite3_column_int64(s, 0)) * 1e-3;
      }
      const auto it = activity_of.find(sqlite3_column_int64(s, 2));
      if (it == activity_of.end()) return;
      const std::int64_t at = sqlite3_column_int64(s, 0);
      t.activities[it->second].launch_us = static_cast<double>(at) * 1e-3;
      launches[sqlite3_column_int64(s, 1)].push_back({at, it->second});
    });
  }

  // PyTorch's op ranges (push/pop 59, start/end 60) with their texts.
  std::vector<RangeText> texts;
  std::map<std::int64_t, std::vector<Range>> ranges;  // by thread
  bool shapes = false;
  if (db.has_table("NVTX_EVENTS")) {
    db.each("SELECT start, end, globalTid, COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) "
            "FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL",
            [&](sqlite3_stmt* s) {
              RangeText r = parse_range_text(text_column(s, 3));
              if (r.name.empty()) return;
              shapes = shapes || r.sizes.has_value();
              ranges[sqlite3_column_int64(s, 2)].push_back({sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), texts.size()});
              texts.push_back(std::move(r));
            });
  }
  if (!shapes) {
    throw ConfigError(db.file, 0, "NVTX_EVENTS",
                      "the export has no PyTorch op ranges with shapes: " + how);
  }
  std::unordered_map<std::size_t, std::size_t> op_of_text;
  for (auto& [thread, mine] : launches) {
    auto it = ranges.find(thread);
    if (it == ranges.end()) continue;
    innermost_ranges(it->second, mine, [&](std::size_t activity, const Range& r) {
      auto [o, added] = op_of_text.emplace(r.text, t.ops.size());
      if (added) {
        RecordedOp op;
        op.name = texts[r.text].name;
        if (texts[r.text].sizes) op.dims = *texts[r.text].sizes;
        op.external_id = static_cast<std::int64_t>(r.text);
        t.ops.push_back(std::move(op));
      }
      t.activities[activity].op = o->second;
    });
  }

  // Types: an op's from its kernels' names, else the type most kernels name, else default_type.
  std::map<std::string, std::size_t> named;
  std::vector<std::string> op_type(t.ops.size());
  for (const auto& a : t.activities) {
    const std::string ty = a.kind == ActivityKind::kKernel ? type_in_kernel_name(a.name) : "";
    if (ty.empty()) continue;
    ++named[ty];
    if (a.op && op_type[*a.op].empty()) op_type[*a.op] = ty;
  }
  std::string common = default_type;
  if (common.empty() && !named.empty()) {
    common = std::max_element(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  }
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const std::string& ty = op_type[i].empty() ? common : op_type[i];
    for (const auto& d : t.ops[i].dims) t.ops[i].types.push_back(d.empty() ? std::string() : ty);
    t.ops[i].list_dims.resize(t.ops[i].dims.size());
  }
  std::stable_sort(t.activities.begin(), t.activities.end(),
                   [](const RecordedActivity& x, const RecordedActivity& y) { return x.start_us < y.start_us; });
  std::stable_sort(t.syncs.begin(), t.syncs.end(),
                   [](const RecordedSync& x, const RecordedSync& y) { return x.host_us < y.host_us; });
  return t;
}

}  // namespace gpusim::replay
