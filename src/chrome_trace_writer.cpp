// The Chrome trace event format (the JSON object form), which Perfetto and chrome://tracing
// open: complete events ("X") for kernel and CTA spans, counter events ("C") for the chip's
// DRAM bandwidth and resident warps, metadata events ("M") naming processes and tracks.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "src/report_writers.h"

namespace gpusim::cli {
namespace {

using Json = nlohmann::ordered_json;

// Kernels on one process per GPU (0, 1, ...); the CTA tracks (of the first GPU's timeline) after them.
constexpr int kKernelProcess = 0;
constexpr int kLanesPerSm = 1000;  // CTA track ids: SM x kLanesPerSm + lane

Json metadata(const std::string& what, int pid, int tid, const Json& args) {
  Json e = {{"name", what}, {"ph", "M"}, {"pid", pid}};
  if (tid >= 0) e["tid"] = tid;
  e["args"] = args;
  return e;
}

// The GPUs of the run: a stage's group (tensor or expert parallel) runs the same kernels on each
// of its GPUs, so each gets a copy of its stage's spans.
int gpu_count(const RunReport& r) {
  return std::max<int>(1, static_cast<int>(r.pipeline.size())) * r.gpus_per_stage;
}

void add_kernel_spans(const RunReport& r, Json& events) {
  std::set<int> streams;
  for (const auto& k : r.kernels) streams.insert(k.stream);
  const int gpus = gpu_count(r);
  for (int gpu = 0; gpu < gpus; ++gpu) {
    if (gpus > 1) {
      const std::string what = r.pipeline.empty() ? "" : fmt::format(", pipeline stage {}", gpu / r.gpus_per_stage);
      events.push_back(metadata("process_name", kKernelProcess + gpu, -1,
                                {{"name", fmt::format("GPU {}{} — {} (simulated)", gpu, what, r.hw)}}));
      events.push_back(metadata("process_sort_index", kKernelProcess + gpu, -1, {{"sort_index", gpu}}));
    }
    for (const int s : streams) {
      events.push_back(metadata("thread_name", kKernelProcess + gpu, s, {{"name", fmt::format("stream {}", s)}}));
    }
  }
  for (const auto& k : r.kernels) {
    const Json args = kernel_json(k);
    for (int rank = 0; rank < r.gpus_per_stage; ++rank) {
      events.push_back({{"name", k.name},
                        {"cat", k.family},
                        {"ph", "X"},
                        {"pid", kKernelProcess + k.stage * r.gpus_per_stage + rank},
                        {"tid", k.stream},
                        {"ts", k.start_us},
                        {"dur", k.metrics.duration_us},
                        {"args", args}});
    }
  }
}

void add_counters(const TimelineSegment& seg, Json& events) {
  for (const auto& s : seg.timeline.samples) {
    const double ts = seg.offset_us + s.at.us();
    events.push_back({{"name", "DRAM bandwidth"}, {"ph", "C"}, {"pid", kKernelProcess}, {"ts", ts},
                      {"args", {{"GB/s", s.dram_bytes_per_s / 1e9}}}});
    events.push_back({{"name", "resident warps"}, {"ph", "C"}, {"pid", kKernelProcess}, {"ts", ts},
                      {"args", {{"warps", s.resident_warps}}}});
  }
}

// CTA groups on one track per SM; groups that overlap in time on one SM go to extra lanes, so
// every track holds spans that never overlap.
void add_cta_spans(const RunReport& r, Json& events) {
  const int kSmProcess = gpu_count(r);
  std::map<int, std::vector<double>> lane_ends;  // per SM: when each lane frees up
  std::set<int> used_tracks;
  for (const auto& seg : r.timelines) {
    std::vector<hw::CtaSpan> spans = seg.timeline.ctas;
    std::sort(spans.begin(), spans.end(), [](const hw::CtaSpan& a, const hw::CtaSpan& b) {
      return std::tie(a.start, a.sm, a.kernel, a.end) < std::tie(b.start, b.sm, b.kernel, b.end);
    });
    for (const auto& s : spans) {
      const double start = seg.offset_us + s.start.us(), end = seg.offset_us + s.end.us();
      auto& ends = lane_ends[s.sm];
      std::size_t lane = 0;
      while (lane < ends.size() && ends[lane] > start) ++lane;
      if (lane == ends.size()) ends.push_back(end);
      ends[lane] = end;
      const int tid = s.sm * kLanesPerSm + static_cast<int>(lane);
      used_tracks.insert(tid);
      const KernelReport& k = r.kernels.at(seg.first_kernel + static_cast<std::size_t>(s.kernel));
      events.push_back({{"name", k.op},
                        {"cat", k.family},
                        {"ph", "X"},
                        {"pid", kSmProcess},
                        {"tid", tid},
                        {"ts", start},
                        {"dur", end - start},
                        {"args", {{"kernel", k.name}, {"ctas", s.count}}}});
    }
  }
  if (used_tracks.empty()) return;
  events.push_back(metadata("process_name", kSmProcess, -1, {{"name", "SMs (CTA groups)"}}));
  for (const int tid : used_tracks) {
    const int sm = tid / kLanesPerSm, lane = tid % kLanesPerSm;
    events.push_back(metadata("thread_name", kSmProcess, tid,
                              {{"name", lane == 0 ? fmt::format("SM {}", sm) : fmt::format("SM {} +{}", sm, lane)}}));
    events.push_back(metadata("thread_sort_index", kSmProcess, tid, {{"sort_index", tid}}));
  }
}

}  // namespace

void write_chrome_trace(const RunReport& r, std::ostream& out) {
  Json events = Json::array();
  if (gpu_count(r) == 1) events.push_back(metadata("process_name", kKernelProcess, -1, {{"name", r.hw + " (simulated)"}}));
  add_kernel_spans(r, events);
  for (const auto& seg : r.timelines) add_counters(seg, events);
  add_cta_spans(r, events);
  Json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ns";
  j["otherData"] = {{"workload", r.workload}, {"hw", r.hw}, {"mode", r.mode}};
  out << j.dump() << "\n";
}

}  // namespace gpusim::cli
