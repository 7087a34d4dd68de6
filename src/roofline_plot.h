// The report's roofline image: scripts/plot_roofline.py (matplotlib, Agg backend) reads the
// kernels CSV and draws every kernel under the DRAM and compute roofs, through the shared
// plotting runner (src/python_plot.h). Python is optional: when it or matplotlib is missing,
// or the script fails, the result says why in one line and the report goes on without it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "src/python_plot.h"

namespace gpusim::cli {

struct RooflineRequest {
  std::filesystem::path config_dir;  // the script is <config_dir>/../scripts/plot_roofline.py
  std::filesystem::path csv;         // kernels.csv (write_csv's columns)
  std::filesystem::path png;         // the image to write
  double dram_bytes_per_s = 0;       // the memory roof
  double tensor_flops_per_s = 0;     // 0: no tensor roof (fp32 workloads)
  std::string tensor_label;          // e.g. "bf16 tensor"
  double fp32_flops_per_s = 0;
  std::string title;
  std::vector<std::string> pythons = kPythons;  // interpreters to try (src/python_plot.h)
};

// The script's arguments for `r` (without --out, which the runner adds).
std::vector<std::string> roofline_args(const RooflineRequest& r);

PlotResult draw_roofline(const RooflineRequest& r);

}  // namespace gpusim::cli
