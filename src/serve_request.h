// A serving run as `gpusim serve` and the Python API name it (a serve file or YAML text, a chip,
// --set overrides), loaded, served and summarized: the one library call both make.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "serve/serve_run.h"
#include "serve/serve_spec.h"
#include "src/cli.h"
#include "src/serve_writers.h"

namespace gpusim::cli {

struct ServeRequest {
  std::string serve_file;                 // read unless text is given; names it in messages
  std::optional<std::string> serve_text;  // YAML in memory; files it names are relative to the working folder
  std::string hw;                         // preset name or hardware file
  std::vector<std::string> sets;          // "hw.KEY=VALUE" / "workload.KEY=VALUE", as --set takes them
  std::function<void(std::size_t done, std::size_t total)> on_request;  // progress
};

// Everything a serving run's outputs are written from.
struct ServeRun {
  serve::ServeSpec spec;
  serve::ServeResult result;
  serve::ServeSummary summary;
  std::string hw;  // the chip's name
  ServeOutput output() const { return {spec, result, summary, hw}; }
};

// Throws ConfigError for bad input (before anything is simulated).
ServeRun serve_request(const ServeRequest& request, const Environment& env);

}  // namespace gpusim::cli
