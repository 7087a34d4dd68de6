#include "src/roofline_plot.h"

#include <fmt/format.h>

namespace gpusim::cli {

std::vector<std::string> roofline_args(const RooflineRequest& r) {
  return {"--csv",          r.csv.string(),
          "--dram-bw",      fmt::format("{:.6e}", r.dram_bytes_per_s),
          "--tensor-peak",  fmt::format("{:.6e}", r.tensor_flops_per_s),
          "--tensor-label", r.tensor_label,
          "--fp32-peak",    fmt::format("{:.6e}", r.fp32_flops_per_s),
          "--title",        r.title};
}

PlotResult draw_roofline(const RooflineRequest& r) {
  return draw_plot(plot_script(r.config_dir, "plot_roofline.py"), roofline_args(r), r.png, r.pythons);
}

}  // namespace gpusim::cli
