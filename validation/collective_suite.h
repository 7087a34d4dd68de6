// The collective suites (issue 19): NCCL collectives simulated on a system preset
// (models/collective_model.h on the engine) against (1) our measurements through PyTorch
// (validation/measure/nccl_collectives.py -> validation/data/nccl_<gpu>x<n>.json) and (2)
// published nccl-tests bus bandwidths (validation/data/published_multi_gpu.json). Messages of
// 16 MiB and more only: below that a call through torch.distributed is bound by the host (30-70 us
// a call whatever the size). Measured rows of 64 MiB and 1 GiB calibrated the link efficiency;
// 16 MiB and 256 MiB are held out; published rows were never fitted to (held out).
#pragma once

#include <filesystem>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/preset_catalog.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// Our measured files (", "-separated names in `data`) on the system `hw`.
std::vector<Comparison> compare_measured_collectives(const std::vector<std::filesystem::path>& files,
                                                     const hw::HardwareSpec& hw);

// Our CUDA-graph-timed files (nccl_collectives.py --graph: `graph_us`, the GPU's time a call
// without Python's launches), messages in [min_bytes, max_bytes). The first files calibrated the
// per-call latency; the other size grids' files (`_half`, `_third`) are held out. With
// `never_fitted` (files no constant was fitted to, such as the H200's) every row is held out.
std::vector<Comparison> compare_graph_collectives(const std::vector<std::filesystem::path>& files,
                                                  const hw::HardwareSpec& hw, double min_bytes, double max_bytes,
                                                  bool never_fitted = false);

// Published nccl-tests rows of single-node NVSwitch systems (dgx-h100/hgx-h100 on `h100`'s
// system, hgx-h200 on `h200`'s), NVLink SHARP on or off as the source ran.
std::vector<Comparison> compare_published_collectives(const std::filesystem::path& json, const hw::HardwareSpec& h100,
                                                      const hw::HardwareSpec& h200);

// One collective alone on an idle system, as the engine runs it: its kernel's duration, us.
double simulate_collective_us(const hw::HardwareSpec& hw, int kind, double bytes, int ranks, hw::DType dtype);

}  // namespace gpusim::validation
