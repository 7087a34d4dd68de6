// Plots are drawn by small matplotlib scripts in scripts/ (Agg backend), run as child
// processes. Python is optional: when python3 or matplotlib is missing, or the script fails,
// the result says why in one line and the caller goes on without the image.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpusim::cli {

struct PlotResult {
  bool drawn = false;
  std::string reason;  // when not drawn: one line for the user
  std::string output;  // what the script printed (for a warning when it failed)
};

// A plotting script next to the configuration folder: <config_dir>/../scripts/NAME, which is
// scripts/ in the source tree and share/gpusim/scripts when installed.
std::filesystem::path plot_script(const std::filesystem::path& config_dir, const std::string& name);

// Interpreters to try in order: python3 on PATH may be a virtualenv or pyenv shim without
// matplotlib while Debian's python3-matplotlib sits under /usr/bin/python3.
inline const std::vector<std::string> kPythons{"python3", "/usr/bin/python3"};

// Runs `PYTHON SCRIPT ARGS... --out PNG` with the first of `pythons` that has matplotlib. The
// image is written under a temporary name and renamed, so a failed plot leaves no partial file.
PlotResult draw_plot(const std::filesystem::path& script, const std::vector<std::string>& args,
                     const std::filesystem::path& png, const std::vector<std::string>& pythons = kPythons);

}  // namespace gpusim::cli
