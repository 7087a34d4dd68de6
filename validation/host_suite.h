// The host suite: eager wall time of Hugging Face forwards that the host CPU bounds, measured
// in one session with the host characterization the preset's host section was fitted on
// (validation/measure/host_costs.py, validation/measure/fit_host.py):
//  * host_costs_<gpu>.json "layers": one config per model family with 1, 2 and 4 decoder layers,
//    a decode step (B=1, 16 cached tokens) and a prefill (B=1, S=16); the families at even
//    positions of the sorted list are the calibration half (fit_host.py fits the host section
//    on them), the others held out;
//  * hf_wall_recheck_<gpu>.json: full-size cases of hf_models.py re-measured in the same
//    session, held out.
// Each is simulated in eager mode with the hf-eager lowering and compared on wall time (the
// forward's start to its last kernel's end). A host preset fits one machine in one session:
// these rows say how far one fit carries across models on that host.
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// `host_costs` and `recheck` are read as above (hf_config paths relative to the repository
// root that holds validation/data, or embedded config JSON). ConfigError on a malformed file.
std::vector<Comparison> compare_host_walls(const std::filesystem::path& host_costs,
                                           const std::filesystem::path& recheck,
                                           const hw::HardwareSpec& hw,
                                           const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
