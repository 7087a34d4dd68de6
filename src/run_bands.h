// Prediction bands on a run's results: every listed kernel's duration scaled by its kernel
// family's 80% band of measured / simulated (validation/error_bands.h, configs/error_bands.yaml),
// from the residuals of the chip with that name, else of the H100 (marked "transferred"); a GEMM
// takes its kernel variant's band where there is one. A family without a band of its own, or a kernel shorter than half or longer than twice the
// durations its family's rows covered, takes the chip's pooled band and counts as outside.
// Totals add the kernels' bands (errors of a family move together in the measurements, so they
// are not assumed to cancel); kernels of steps not listed are taken to mix families as the
// listed ones do.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "src/run_report.h"
#include "validation/error_bands.h"

namespace gpusim::cli {

void attach_bands(RunReport& report, const std::string& chip, const validation::ErrorBands& bands);

// The same with the shipped configs/error_bands.yaml under `config_dir`; a note on `err` when
// it is missing (the run then reports no bands).
void attach_shipped_bands(RunReport& report, const std::string& chip, const std::filesystem::path& config_dir,
                          std::ostream& err);

}  // namespace gpusim::cli
