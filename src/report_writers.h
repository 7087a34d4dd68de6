// The formats a run is written in: a readable table, JSON (DESIGN.md's results schema), CSV
// (one row per kernel) and a Chrome trace (Perfetto, chrome://tracing).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "src/run_report.h"

namespace gpusim::cli {

// One kernel with every metric, as JSON lists it and trace spans carry it.
nlohmann::ordered_json kernel_json(const KernelReport& k);

// The table lists the `top` costliest kernels (identical launches merged); 0 lists them all.
void write_table(const RunReport& report, std::ostream& out, int top = 15);
// The JSON document write_json writes, for callers that add sections of their own.
nlohmann::ordered_json report_json(const RunReport& report);
void write_json(const RunReport& report, std::ostream& out);
void write_csv(const RunReport& report, std::ostream& out);
// Kernel spans on one track per stream, counter tracks for DRAM bandwidth and resident warps,
// and CTA spans on one track per SM (lanes where CTA groups overlap) when the timeline has them.
void write_chrome_trace(const RunReport& report, std::ostream& out);

// Every format into `dir` (made when missing): summary.txt (the table with `top` kernels),
// result.json, kernels.csv, trace.json.
void write_run_folder(const RunReport& report, const std::filesystem::path& dir, int top);

}  // namespace gpusim::cli
