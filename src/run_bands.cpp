#include "src/run_bands.h"

namespace gpusim::cli {

void attach_bands(RunReport& r, const std::string& chip, const validation::ErrorBands& bands) {
  const validation::ChipBands* own = bands.find(chip);
  const validation::ChipBands* used = own ? own : bands.find("h100-sxm5");
  if (used == nullptr) return;
  r.band_source = own ? chip : "h100-sxm5 (transferred: no measurements of " + chip + ")";
  double listed = 0, low = 0, high = 0;
  r.kernels_outside_bands = 0;
  for (auto& k : r.kernels) {
    const double t = k.metrics.duration_us;
    // The kernel's variant band, else its family's, when calibrated on kernels of its duration.
    auto it = used->families.find(validation::band_variant(k.family, k.name));
    if (it == used->families.end()) it = used->families.find(k.family);
    const bool inside = it != used->families.end() && t >= 0.5 * it->second.smallest_us &&
                        t <= 2.0 * it->second.largest_us;
    const validation::FamilyBand& b = inside ? it->second : used->pooled;
    k.band_low_us = t * b.low;
    k.band_high_us = t * b.high;
    k.band_calibrated = inside;
    if (!inside) ++r.kernels_outside_bands;
    listed += t;
    low += k.band_low_us;
    high += k.band_high_us;
  }
  const double lo_ratio = listed > 0 ? low / listed : used->pooled.low;
  const double hi_ratio = listed > 0 ? high / listed : used->pooled.high;
  r.kernel_time_low_us = r.kernel_time_us * lo_ratio;
  r.kernel_time_high_us = r.kernel_time_us * hi_ratio;
  // Gaps between kernels (launch overhead) are not part of the band.
  r.total_low_us = r.total_us - r.kernel_time_us + r.kernel_time_low_us;
  r.total_high_us = r.total_us - r.kernel_time_us + r.kernel_time_high_us;
}

void attach_shipped_bands(RunReport& report, const std::string& chip, const std::filesystem::path& config_dir,
                          std::ostream& err) {
  const auto file = config_dir / "error_bands.yaml";
  if (!std::filesystem::exists(file)) {
    err << "gpusim: note: no prediction bands (" << file.string() << " is missing)\n";
    return;
  }
  attach_bands(report, chip, validation::read_error_bands(file));
}

}  // namespace gpusim::cli
