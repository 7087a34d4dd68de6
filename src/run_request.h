// A run as `gpusim run` and the Python API name it (a workload file or YAML text, a chip, --set
// overrides, a launch mode), loaded, checked, simulated and given its prediction bands: the one
// library call both make.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "src/cli.h"
#include "src/run_report.h"
#include "workloads/model_run.h"

namespace gpusim::cli {

struct RunRequest {
  std::string workload_file;                 // read unless text is given; names the workload in messages
  std::optional<std::string> workload_text;  // YAML in memory; files it names are relative to the working folder
  std::string hw;                            // preset name or hardware file
  std::vector<std::string> sets;             // "hw.KEY=VALUE" / "workload.KEY=VALUE", as --set takes them
  hw::LaunchMode mode = hw::LaunchMode::kGraph;
  workloads::SimulateOptions simulate;
};

// Throws ConfigError for bad input (before anything is simulated); notes (no bands shipped) go to `err`.
RunReport run_request(const RunRequest& request, const Environment& env, std::ostream& err);

}  // namespace gpusim::cli
