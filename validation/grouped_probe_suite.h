// The grouped GEMM probes (validation/measure/grouped_mm_probe.py ->
// validation/data/grouped_mm*_<gpu>.json.gz): torch._grouped_mm's grouped kernel alone, after the
// op sets' L2 flush, over expert shapes of Qwen3-MoE, DeepSeek-V2-Lite and Mixtral with given
// rows an expert. Each row is lowered with lower_grouped_gemm and compared on the grouped
// kernel's time (the prepare kernel left out). Calibration data: every row.
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// Family: "grouped_mm <pingpong|cooperative> <one tile|several tiles> an expert" by the measured
// kernel and the rows. ConfigError on a malformed file.
std::vector<Comparison> compare_grouped_probes(const std::vector<std::filesystem::path>& files,
                                               const hw::HardwareSpec& hw);

}  // namespace gpusim::validation
