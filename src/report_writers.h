// The formats a run is written in: a readable table, JSON (DESIGN.md's results schema), CSV
// (one row per kernel) and a Chrome trace (Perfetto, chrome://tracing).
#pragma once

#include <iosfwd>

#include "src/run_report.h"

namespace gpusim::cli {

void write_table(const RunReport& report, std::ostream& out);
void write_json(const RunReport& report, std::ostream& out);
void write_csv(const RunReport& report, std::ostream& out);
void write_chrome_trace(const RunReport& report, std::ostream& out);

}  // namespace gpusim::cli
