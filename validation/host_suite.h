// The host suite: eager wall time of Hugging Face forwards, measured in one session with the
// host characterization the preset's host section was fitted on (validation/measure/
// host_walls.py -> validation/data/host_walls_<gpu>.json; `gpusim hw fit-host` fits it):
//  * calibration: the layer sweep the host section was fitted on (validation/host_fit.h);
//  * held out: full-size cases of every family (prefill, decode, generate) measured the same
//    way after the sweep.
// Each is simulated in eager mode with the hf-eager lowering and compared on wall time (from
// the forward's call to its last kernel's end; generate: the whole call).
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// ConfigError on a malformed file.
std::vector<Comparison> compare_host_walls(const std::filesystem::path& host_walls, const hw::HardwareSpec& hw,
                                           const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
