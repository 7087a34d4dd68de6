// The measured suites' rows as JSON (gpusim validate --rows-json): every op with its measured and
// simulated kernels, launch shapes and durations, for looking into where an error comes from.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "validation/measured_suite.h"

namespace gpusim::validation {

// {"suite", "hardware", "rows": [{"op", "family", "split", "measured_us", "simulated_us",
// "error_pct", "measured": [{"name", "grid", "block", "us"}], "simulated": [...]}]}
nlohmann::json measured_rows_json(const std::string& suite, const std::string& hardware,
                                  const std::vector<Comparison>& rows);

}  // namespace gpusim::validation
