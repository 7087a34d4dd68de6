// Measured model cases (the JSON files of validation/measure/): reading the document and a
// case's phase (bad input is a ConfigError naming the file), and comparing a simulated run.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "validation/measured_suite.h"
#include "workloads/model_run.h"
#include "workloads/workload.h"

namespace gpusim::validation {

// The parsed document, plain or gzip'd; ConfigError when the file cannot be read or is not JSON.
nlohmann::json read_json_file(const std::filesystem::path& file);

// "prefill", "decode" or "generate" (a case's `phase`); ConfigError naming the file otherwise.
workloads::Phase case_phase(const std::string& s, const std::filesystem::path& file);

// What gpusim gives for a measured case: the run's summed step time (`wall`: from each step's
// start to its last kernel's end) or summed kernel time, its kernel count and the detailed
// steps' kernel names, and the error against `ref`.
Comparison compare_run(MeasuredOp ref, const workloads::ModelRun& run, bool wall);

// One figure of a measured case (a phase's kernel time, a memory peak) beside gpusim's: the
// relative error, 0 for a measured 0.
Comparison figure_row(const std::string& label, const std::string& family, bool held_out, double measured,
                      double simulated);

}  // namespace gpusim::validation
