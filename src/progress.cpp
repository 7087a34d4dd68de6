#include "src/progress.h"

#include <fmt/format.h>

#include <ostream>

namespace gpusim::cli {

ProgressLine::ProgressLine(std::ostream* out, std::string label) : out_(out), label_(std::move(label)) {}

ProgressLine::~ProgressLine() {
  if (out_ && shown_percent_ >= 0) *out_ << "\r\033[K" << std::flush;  // erase the line
}

void ProgressLine::update(std::size_t done, std::size_t total) {
  if (!out_ || total == 0) return;
  const int percent = static_cast<int>(100 * done / total);
  if (percent == shown_percent_) return;
  shown_percent_ = percent;
  constexpr int kWidth = 30;
  const int filled = percent * kWidth / 100;
  *out_ << fmt::format("\r{} [{}{}] {}/{} ({}%)", label_, std::string(filled, '#'),
                       std::string(kWidth - filled, ' '), done, total, percent)
        << std::flush;
}

}  // namespace gpusim::cli
