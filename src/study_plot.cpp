#include "src/study_plot.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace gpusim::cli {

PlotResult draw_study_plot(const Study& study, const std::filesystem::path& csv, const std::filesystem::path& png,
                           const Environment& env) {
  std::vector<std::string> args{"--csv", csv.string(), "--metric", study.plot->metric, "--x",
                                study.plot->x, "--title", fmt::format("{}: {}", study.name, study.plot->metric)};
  if (study.plot->series) args.insert(args.end(), {"--series", *study.plot->series});
  std::string others;
  for (const auto& c : study.columns) {
    if (c != study.plot->x) others += (others.empty() ? "" : ",") + c;
  }
  if (!others.empty()) args.insert(args.end(), {"--others", others});
  return draw_plot(plot_script(env.config_dir, "plot_sweep.py"), args, png);
}

}  // namespace gpusim::cli
