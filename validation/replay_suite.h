// The replay suites: PyTorch profiler traces of the same programs recorded on two chips
// (validation/measure/replay_traces.py -> validation/data/traces/), each replayed with
// `gpusim replay`'s mapping (replay/) on a chip's preset: the trace recorded on that chip
// (same-chip: a self-check of the cost models) and the other chip's trace (cross-chip: what a user
// asks of replay), each against that chip's recorded kernel time. index.json lists the programs,
// their split and the chips' presets.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/preset_catalog.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// Rows for chip `chip` (a key of index.json's "chips"); ConfigError on a malformed index or trace.
std::vector<Comparison> compare_replays(const std::filesystem::path& index, const std::string& chip,
                                        const hw::PresetCatalog& catalog, const models::KernelModelRegistry& models);

}  // namespace gpusim::validation
