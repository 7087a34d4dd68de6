// A progress line on stderr for long runs (generate with many steps, reports, sweeps): drawn
// only when stderr is a terminal (Environment::progress), so logs and pipes stay clean.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

namespace gpusim::cli {

class ProgressLine {
 public:
  // `out` null: quiet.
  ProgressLine(std::ostream* out, std::string label);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Redraws the line when the shown percentage changes.
  void update(std::size_t done, std::size_t total);

 private:
  std::ostream* out_;
  std::string label_;
  int shown_percent_ = -1;
};

}  // namespace gpusim::cli
