// The report's section 2 for a training workload (phase: train): peak memory with the
// out-of-memory verdict, step time and throughput, and the GEMMs' share of kernel time over the
// grid (batch or model x sequence length), as seed 002 tabulates them.
#pragma once

#include <string>

#include "src/markdown_report.h"

namespace gpusim::cli {

// The abstract's sentences on the grid.
std::string training_grid_summary(const ReportData& d);

// Sections 2.1-2.3.
void training_sections(const ReportData& d, std::string& out);

}  // namespace gpusim::cli
