// A study's plot (its `plot:` section): the metric over one column, a line per value of another,
// drawn from the results CSV into DIR/plot.png by scripts/plot_sweep.py.
#pragma once

#include <filesystem>

#include "src/cli.h"
#include "src/python_plot.h"
#include "src/study.h"

namespace gpusim::cli {

// Call only for a study with a plot.
PlotResult draw_study_plot(const Study& study, const std::filesystem::path& csv, const std::filesystem::path& png,
                           const Environment& env);

}  // namespace gpusim::cli
