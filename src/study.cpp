#include "src/study.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/yaml_document.h"
#include "sim/error.h"

namespace gpusim::cli {
namespace {

bool is_axis_key(const std::string& key) {
  return key == "hw" || key == "workload" || key.rfind("hw.", 0) == 0 || key.rfind("workload.", 0) == 0;
}

void check_axis_key(const hw::YamlDocument& doc, const YAML::Node& at, const std::string& path,
                    const std::string& key) {
  if (!is_axis_key(key) || key == "hw." || key == "workload.") {
    throw ConfigError(doc.label(), hw::YamlDocument::line_of(at), path,
                      fmt::format("'{}' is not a study axis: use hw, workload, hw.KEY or workload.KEY", key));
  }
}

// A file value (hw: or workload:) relative to the study file; a bare preset name stays as is.
std::string resolve_value(const Study& s, const std::string& key, const std::string& value) {
  const bool path_like = value.find('/') != std::string::npos || value.ends_with(".yaml") ||
                         value.ends_with(".yml");
  if ((key == "hw" && path_like) || key == "workload") {
    return (s.file.parent_path() / value).lexically_normal().string();
  }
  return value;
}

void note_column(Study& s, const std::string& key) {
  if (std::find(s.columns.begin(), s.columns.end(), key) == s.columns.end()) s.columns.push_back(key);
}

// grid: {KEY: [v1, v2, ...], ...}: every combination, the first key varying slowest.
void read_grid(Study& s, const hw::YamlDocument& doc, const YAML::Node& grid) {
  if (!grid.IsMap() || grid.size() == 0) {
    throw ConfigError(doc.label(), hw::YamlDocument::line_of(grid), "grid",
                      "expected a mapping of axes to lists of values, e.g. hw.sm_count: [66, 132]");
  }
  std::vector<std::vector<StudySetting>> axes;
  for (const auto& kv : grid) {
    const std::string key = kv.first.Scalar(), path = "grid." + key;
    check_axis_key(doc, kv.first, path, key);
    if (!kv.second.IsSequence() || kv.second.size() == 0) {
      throw ConfigError(doc.label(), hw::YamlDocument::line_of(kv.second), path, "expected a non-empty list of values");
    }
    note_column(s, key);
    std::vector<StudySetting> values;
    for (std::size_t i = 0; i < kv.second.size(); ++i) {
      const YAML::Node v = kv.second[i];
      const std::string value = hw::scalar_text(doc, v, fmt::format("{}[{}]", path, i));
      values.push_back({key, value, resolve_value(s, key, value), hw::YamlDocument::line_of(v)});
    }
    axes.push_back(std::move(values));
  }
  std::vector<std::size_t> at(axes.size(), 0);
  while (true) {
    StudyPoint p;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const StudySetting& v = axes[a][at[a]];
      p.settings.push_back(v);
      p.name += (p.name.empty() ? "" : " ") + v.key + "=" + v.value;
    }
    s.points.push_back(std::move(p));
    std::size_t a = axes.size();
    while (a > 0 && ++at[a - 1] == axes[a - 1].size()) at[--a] = 0;
    if (a == 0) break;
  }
}

// points: [{name: ..., KEY: value, ...}, ...]
void read_points(Study& s, const hw::YamlDocument& doc, const YAML::Node& points) {
  if (!points.IsSequence() || points.size() == 0) {
    throw ConfigError(doc.label(), hw::YamlDocument::line_of(points), "points", "expected a non-empty list of points");
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const YAML::Node item = points[i];
    const std::string prefix = fmt::format("points[{}]", i);
    if (!item.IsMap()) {
      throw ConfigError(doc.label(), hw::YamlDocument::line_of(item), prefix, "expected a mapping such as {name: a, hw: h100}");
    }
    StudyPoint p;
    p.name = fmt::format("point {}", i);
    for (const auto& kv : item) {
      const std::string key = kv.first.Scalar(), path = prefix + "." + key;
      const std::string value = hw::scalar_text(doc, kv.second, path);
      if (key == "name") {
        p.name = value;
        continue;
      }
      check_axis_key(doc, kv.first, path, key);
      note_column(s, key);
      p.settings.push_back({key, value, resolve_value(s, key, value), hw::YamlDocument::line_of(kv.second)});
    }
    s.points.push_back(std::move(p));
  }
  // Settings in column order, so every row lists its values the same way.
  for (auto& p : s.points) {
    std::stable_sort(p.settings.begin(), p.settings.end(), [&](const StudySetting& a, const StudySetting& b) {
      return std::find(s.columns.begin(), s.columns.end(), a.key) < std::find(s.columns.begin(), s.columns.end(), b.key);
    });
  }
}

std::vector<std::string> read_metrics(const hw::YamlDocument& doc, const std::optional<YAML::Node>& node,
                                      const std::vector<std::string>& columns, const std::vector<std::string>& known) {
  if (!node) return known;
  if (!node->IsSequence() || node->size() == 0) {
    throw ConfigError(doc.label(), hw::YamlDocument::line_of(*node), "metrics", "expected a non-empty list of metric names");
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node->size(); ++i) {
    const std::string name = hw::scalar_text(doc, (*node)[i], fmt::format("metrics[{}]", i));
    const std::string base = name.substr(0, name.find('/'));
    if (std::find(known.begin(), known.end(), base) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw ConfigError(doc.label(), hw::YamlDocument::line_of((*node)[i]), fmt::format("metrics[{}]", i),
                        fmt::format("unknown metric '{}' (known: {}; METRIC/AXIS divides by a numeric axis)", base, list));
    }
    const auto slash = name.find('/');
    if (slash != std::string::npos &&
        std::find(columns.begin(), columns.end(), name.substr(slash + 1)) == columns.end()) {
      throw ConfigError(doc.label(), hw::YamlDocument::line_of((*node)[i]), fmt::format("metrics[{}]", i),
                        fmt::format("'{}' divides by '{}', which is not an axis of the study", name, name.substr(slash + 1)));
    }
    out.push_back(name);
  }
  return out;
}

StudyPlot read_plot(const Study& s, const hw::YamlDocument& doc, const YAML::Node& node) {
  if (!node.IsMap()) {
    throw ConfigError(doc.label(), hw::YamlDocument::line_of(node), "plot", "expected {metric: M, x: AXIS[, series: AXIS]}");
  }
  hw::MappingReader r(doc, node, "plot");
  StudyPlot p{r.text("metric"), r.text("x"), r.optional_text("series")};
  r.reject_unknown();
  if (std::find(s.metrics.begin(), s.metrics.end(), p.metric) == s.metrics.end()) {
    throw ConfigError(doc.label(), hw::YamlDocument::line_of(node), "plot.metric",
                      fmt::format("'{}' is not among the study's metrics", p.metric));
  }
  for (const auto& axis : {std::optional(p.x), p.series}) {
    if (axis && std::find(s.columns.begin(), s.columns.end(), *axis) == s.columns.end()) {
      throw ConfigError(doc.label(), hw::YamlDocument::line_of(node), "plot",
                        fmt::format("'{}' is not an axis of the study", *axis));
    }
  }
  return p;
}

}  // namespace

const std::vector<std::string>& serve_metric_names() {
  static const std::vector<std::string> kNames{
      "completed", "rejected", "requests_per_s", "output_tokens_per_s", "goodput_requests_per_s",
      "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "itl_p99_s",
      "e2e_p50_s", "e2e_p99_s", "queueing_p99_s", "preemptions", "mean_batch", "peak_kv_share", "kv_blocks"};
  return kNames;
}

const std::vector<std::string>& study_metric_names() {
  static const std::vector<std::string> kNames{
      "total_us", "kernel_time_us", "kernels", "ttft_us", "tpot_us", "tokens_per_s",
      "memory_bytes", "fits", "top_bound", "top_bound_share_pct", "top_kernel", "top_kernel_us",
      "top_kernel_ctas", "top_kernel_waves", "top_kernel_ctas_per_sm",
      "top_kernel_theoretical_occupancy", "top_kernel_achieved_occupancy"};
  return kNames;
}

namespace {

// `file` is the study file, or for text the label naming it: files the study names are relative
// to its folder (to the working folder for text).
Study read_study(const hw::YamlDocument& doc, const std::filesystem::path& file) {
  if (!doc.root().IsMap()) throw ConfigError(doc.label(), 1, "", "a study file is a mapping (name, workload, hw, grid or points)");
  hw::MappingReader r(doc, doc.root(), "");
  Study s;
  s.file = file;
  s.name = r.optional_text("name").value_or(file.stem().string());
  s.workload = (file.parent_path() / r.text("workload")).lexically_normal();
  // A serve file (requests: at its top) is served at each point; anything else is run.
  {
    std::error_code ec;
    if (std::filesystem::is_regular_file(s.workload, ec)) {
      const hw::YamlDocument w = hw::YamlDocument::from_file(s.workload);
      s.serve = w.root().IsMap() && w.root()["requests"].IsDefined();
    }
  }
  s.hw = resolve_value(s, "hw", r.text("hw"));
  const std::string mode = r.has("mode") ? r.choice("mode", {"graph", "eager"}) : "graph";
  s.mode = mode == "eager" ? hw::LaunchMode::kEager : hw::LaunchMode::kGraph;
  const auto grid = r.optional_node("grid");
  const auto points = r.optional_node("points");
  if (grid.has_value() == points.has_value()) {
    throw ConfigError(doc.label(), 1, "grid", "a study has either grid: (every combination of axes) or points: (a list)");
  }
  if (grid) read_grid(s, doc, *grid);
  if (points) read_points(s, doc, *points);
  s.metrics = read_metrics(doc, r.optional_node("metrics"), s.columns, s.serve ? serve_metric_names() : study_metric_names());
  if (const auto plot = r.optional_node("plot")) s.plot = read_plot(s, doc, *plot);
  r.reject_unknown();
  return s;
}

}  // namespace

Study load_study(const std::filesystem::path& file) { return read_study(hw::YamlDocument::from_file(file), file); }

Study parse_study(std::string text, const std::string& label) {
  return read_study(hw::YamlDocument::from_string(std::move(text), label), label);
}

}  // namespace gpusim::cli
