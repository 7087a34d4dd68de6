#include "validation/error_bands.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "hw/hardware_loader.h"
#include "hw/yaml_document.h"
#include "sim/error.h"
#include "sim/parsed_file_cache.h"

namespace gpusim::validation {
namespace {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

struct Samples {
  std::vector<double> ratios;
  double smallest_us = 0, largest_us = 0;
  void add(double ratio, double main_us) {
    smallest_us = ratios.empty() ? main_us : std::min(smallest_us, main_us);
    largest_us = ratios.empty() ? main_us : std::max(largest_us, main_us);
    ratios.push_back(ratio);
  }
  FamilyBand band() const {
    FamilyBand b;
    b.rows = static_cast<std::int64_t>(ratios.size());
    if (ratios.empty()) return b;
    b.low = percentile(ratios, 0.1);
    b.high = percentile(ratios, 0.9);
    b.smallest_us = smallest_us;
    b.largest_us = largest_us;
    return b;
  }
};

FamilyBand read_band(hw::MappingReader& m) {
  FamilyBand b;
  b.rows = m.integer("rows", 1, 1000000);
  b.low = m.number("low", 0.001, 1000);
  b.high = m.number("high", b.low, 1000);
  b.smallest_us = m.number("smallest_us", 0, 1e12);
  b.largest_us = m.number("largest_us", b.smallest_us, 1e12);
  m.reject_unknown();
  return b;
}

std::string band_text(const FamilyBand& b) {
  return fmt::format("{{rows: {}, low: {:.3f}, high: {:.3f}, smallest_us: {:.2f}, largest_us: {:.2f}}}", b.rows,
                     b.low, b.high, b.smallest_us, b.largest_us);
}

}  // namespace

std::string band_variant(const std::string& family, const std::string& kernel_name) {
  if (family != "gemm") return "";
  std::string n = kernel_name.rfind("void ", 0) == 0 ? kernel_name.substr(5) : kernel_name;
  n = n.substr(0, n.find_first_of("<("));
  // The first two words ("nvjet_sm90", "gemmSN_NN"), three for CUTLASS ("cutlass_80_simt").
  const int words = n.rfind("cutlass", 0) == 0 ? 3 : 2;
  std::size_t end = 0;
  for (int w = 0; w < words && end != std::string::npos; ++w) end = n.find('_', end == 0 ? 0 : end + 1);
  return "gemm/" + n.substr(0, end);
}

const ChipBands* ErrorBands::find(const std::string& chip) const {
  for (const auto& c : chips) {
    if (c.chip == chip) return &c;
  }
  return nullptr;
}

ChipBands compute_chip_bands(const std::string& chip, const std::vector<Comparison>& rows) {
  std::map<std::string, Samples> by_family;
  Samples pooled;
  for (const auto& r : rows) {
    if (r.reference.held_out || r.simulated_us <= 0 || r.main_family.empty()) continue;
    const double ratio = r.reference.measured_us / r.simulated_us;
    by_family[r.main_family].add(ratio, r.main_kernel_us);
    if (const std::string v = band_variant(r.main_family, r.main_kernel); !v.empty()) {
      by_family[v].add(ratio, r.main_kernel_us);
    }
    pooled.add(ratio, r.main_kernel_us);
  }
  ChipBands out;
  out.chip = chip;
  out.pooled = pooled.band();
  for (const auto& [family, s] : by_family) {
    if (static_cast<std::int64_t>(s.ratios.size()) >= kMinBandRows) out.families[family] = s.band();
  }
  return out;
}

ErrorBands compute_error_bands(const std::filesystem::path& data_dir, const hw::PresetCatalog& catalog,
                               const models::KernelModelRegistry& models) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> sources{
      {"h100", {"ops_h100.csv", "ops2_h100.csv", "ops3_h100.csv"}},
      {"h200", {"ops_h200.csv", "ops2_h200.csv", "ops3_h200.csv"}}};
  ErrorBands out;
  for (const auto& [preset, files] : sources) {
    const hw::HardwareSpec spec = hw::load_hardware(preset, catalog);
    std::vector<Comparison> rows;
    for (const auto& f : files) {
      auto r = compare_measured(read_measured_ops(data_dir / f), spec, models);
      rows.insert(rows.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
    }
    out.chips.push_back(compute_chip_bands(spec.name, rows));
  }
  return out;
}

void write_error_bands(const ErrorBands& bands, std::ostream& out) {
  out << "# Prediction bands: measured / simulated kernel time at the 10th and 90th percentile (an 80%\n"
         "# band) per kernel family, from the calibration rows of each chip's measured op suites; the\n"
         "# simulated durations the rows covered. Written by `gpusim validate --write-bands`; method in\n"
         "# validation/error_bands.h. Do not edit by hand.\n";
  for (const auto& c : bands.chips) {
    out << c.chip << ":\n";
    out << "  pooled: " << band_text(c.pooled) << "\n";
    out << "  families:\n";
    for (const auto& [family, b] : c.families) out << "    \"" << family << "\": " << band_text(b) << "\n";
  }
}

ErrorBands read_error_bands(const std::filesystem::path& file) {
  // Every run reads the file; its parse is kept while the text is unchanged (parsing it was
  // a third of a short run's time).
  static ParsedFileCache<ErrorBands> cache;
  return *cache.get(file, [&file](const std::string& text) { return parse_error_bands(text, file.string()); });
}

ErrorBands parse_error_bands(const std::string& text, const std::string& label) {
  const hw::YamlDocument doc = hw::YamlDocument::from_string(text, label);
  ErrorBands out;
  if (!doc.root().IsMap()) throw ConfigError(label, 1, "", "expected a mapping of chips");
  for (const auto& chip : doc.root()) {
    const std::string name = chip.first.as<std::string>();
    hw::MappingReader c(doc, chip.second, name);
    ChipBands cb;
    cb.chip = name;
    hw::MappingReader pooled(doc, c.node("pooled"), c.path("pooled"));
    cb.pooled = read_band(pooled);
    const YAML::Node families = c.node("families");
    if (families.IsMap()) {
      for (const auto& f : families) {
        const std::string family = f.first.as<std::string>();
        hw::MappingReader fr(doc, f.second, c.path("families") + "." + family);
        cb.families[family] = read_band(fr);
      }
    }
    c.reject_unknown();
    out.chips.push_back(std::move(cb));
  }
  return out;
}

}  // namespace gpusim::validation
