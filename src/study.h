// A design study (`gpusim sweep`): a base workload and hardware, the points to simulate (a grid
// over axes, or a list of named points), the metrics to record and an optional plot.
// Every point is resolved and validated when the study is loaded, so a bad value is reported
// against the study file's line before anything runs.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu_engine.h"

namespace gpusim::cli {

// One field a point sets: "hw" (a preset or hardware file), "workload" (a workload file),
// "hw.KEY" or "workload.KEY" (as --set takes them).
struct StudySetting {
  std::string key, value;  // the value as the study file writes it (what results show)
  std::string resolved;    // what the simulation uses: hw and workload files made relative to
                           // the working folder instead of the study file; else the value
  int line = 0;            // of the value in the study file
};

struct StudyPoint {
  std::string name;
  std::vector<StudySetting> settings;  // in column order; keys not set take the base value
};

struct StudyPlot {
  std::string metric, x;
  std::optional<std::string> series;  // one line per value of this column
};

struct Study {
  std::string name;
  std::filesystem::path file;       // the study file
  std::filesystem::path workload;   // base workload file (resolved against the study file)
  bool serve = false;               // the workload is a serve file (gpusim serve): serve metrics
  std::string hw;                   // base hardware: preset name or resolved file path
  hw::LaunchMode mode = hw::LaunchMode::kGraph;
  std::vector<std::string> columns;  // every key any point sets, in first-seen order
  std::vector<StudyPoint> points;
  std::vector<std::string> metrics;  // names from study_metric_names()
  std::optional<StudyPlot> plot;
};

// The metric names a study may record: of a run workload, and of a serve file.
const std::vector<std::string>& study_metric_names();
const std::vector<std::string>& serve_metric_names();

// Reads and checks a study file (ConfigError naming file, line and key on bad input).
Study load_study(const std::filesystem::path& file);
// The same for text already in memory (the Python API's dicts); `label` names it in messages and
// the files it names are relative to the working folder.
Study parse_study(std::string text, const std::string& label);

}  // namespace gpusim::cli
