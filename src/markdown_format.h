// Number formats and grid tables shared by the report's Markdown writers (markdown_report.cpp,
// markdown_training.cpp). Fixed and locale-free: the text must be byte-identical across runs.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "src/markdown_report.h"

namespace gpusim::cli {

inline constexpr double kMiB = 1024.0 * 1024.0;

inline std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<std::size_t>(i), ",");
  return (v < 0 ? "-" : "") + digits;
}

inline std::string mib(std::int64_t bytes) { return grouped(std::llround(static_cast<double>(bytes) / kMiB)); }

// About four significant digits without scientific notation.
inline std::string num(double v) {
  const double a = std::fabs(v);
  if (a >= 1000) return grouped(std::llround(v));
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 10) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

inline std::string ms(double us) { return num(us / 1000); }
inline std::string pct(double p) { return fmt::format("{:.1f}", p); }

// The grid's header: one column per sequence length; rows by batch size, or by model.
inline std::string grid_header(const ReportGrid& g) {
  std::string out = g.models.empty() ? "| Batch size |" : "| Model (batch) |";
  for (const auto s : g.seq_lens) out += fmt::format(" Seq len {} |", s);
  out += g.models.empty() ? "\n|---:|" : "\n|---|";
  for (std::size_t i = 0; i < g.seq_lens.size(); ++i) out += "---:|";
  return out + "\n";
}

template <class CellText>
std::string grid_table(const ReportGrid& g, CellText text) {
  std::string out = grid_header(g);
  for (std::size_t b = 0; b < g.batches.size(); ++b) {
    out += g.models.empty() ? fmt::format("| {} |", g.batches[b]) : fmt::format("| {} ({}) |", g.models[b], g.batches[b]);
    for (std::size_t s = 0; s < g.seq_lens.size(); ++s) out += " " + text(g.prefill_cell(b, s)) + " |";
    out += "\n";
  }
  return out;
}

inline std::string status_text(const GridCell& c) {
  return c.status == GridCell::Status::kOutOfMemory ? "OOM" : "n/a";
}

}  // namespace gpusim::cli
