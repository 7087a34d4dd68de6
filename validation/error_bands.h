// Prediction bands: how far measured kernel time strays from gpusim's, per kernel family and
// measured chip, so that a simulated time can be reported with the spread its family showed.
//
// Method: every calibration row of a chip's measured op suites (never a held-out row) gives the
// ratio measured / simulated of the op's kernel time, filed under the family of the op's
// longest simulated kernel. A family with at least kMinRows rows gets the 10th and 90th
// percentiles of its ratios (linear interpolation): an 80% band. Every row also counts towards
// the chip's pooled band, used for families with fewer rows. GEMMs are also banded per kernel
// variant ("gemm/nvjet_sm90", "gemm/cutlass_75_tensorop", ...: band_key), whose errors differ
// most. The durations the rows covered (their longest kernels, smallest and largest) bound
// where a band was calibrated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "hw/preset_catalog.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

struct FamilyBand {
  std::int64_t rows = 0;
  double low = 1, high = 1;  // measured / simulated at the 10th and 90th percentile
  double smallest_us = 0, largest_us = 0;  // the simulated durations its rows covered
};

struct ChipBands {
  std::string chip;  // the hardware spec's name, e.g. h100-sxm5
  FamilyBand pooled;
  std::map<std::string, FamilyBand> families;  // kernel family -> band (kMinRows rows or more)
};

struct ErrorBands {
  std::vector<ChipBands> chips;
  const ChipBands* find(const std::string& chip) const;
};

inline constexpr std::int64_t kMinBandRows = 5;

// The variant key of a kernel: "gemm/<the name's first words>" for GEMMs, else "".
std::string band_variant(const std::string& family, const std::string& kernel_name);

// A chip's bands from its comparisons (held-out rows are skipped).
ChipBands compute_chip_bands(const std::string& chip, const std::vector<Comparison>& rows);

// The bands of every measured chip from validation/data/ops*_<gpu>.csv (H100 and H200).
ErrorBands compute_error_bands(const std::filesystem::path& data_dir, const hw::PresetCatalog& catalog,
                               const models::KernelModelRegistry& models);

// configs/error_bands.yaml: written by `gpusim validate --write-bands`, read by `gpusim run`.
void write_error_bands(const ErrorBands& bands, std::ostream& out);
ErrorBands read_error_bands(const std::filesystem::path& file);  // ConfigError when malformed
// The same from text; `label` names it in messages.
ErrorBands parse_error_bands(const std::string& text, const std::string& label);

}  // namespace gpusim::validation
