// Command-line overrides of workload fields (`--set workload.KEY=VALUE`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/yaml_document.h"
#include "sim/error.h"

namespace gpusim::workloads {

struct WorkloadOverride {
  std::string key;    // without the "workload." prefix: "batch", "model.layers"
  std::string value;  // as typed: "32"
};

// Sets each override's value in the document's tree (in place: yaml-cpp nodes share their
// data), so the workload is then read and validated as if the file said it. Keys are top-level
// keys or paths into mappings and list items written in the file (model.layers of an inline
// model, ops[0].H of an op list); a path through anything else is a ConfigError on the
// command line.
void apply_overrides(const hw::YamlDocument& doc, const std::vector<WorkloadOverride>& overrides);

// When `error` is about a value an override set (or a key it added), the same error placed on
// the command line under the full key "workload.<key>"; otherwise nullopt.
std::optional<ConfigError> blame_override(const ConfigError& error, const hw::YamlDocument& doc,
                                          const std::vector<WorkloadOverride>& overrides);

}  // namespace gpusim::workloads
