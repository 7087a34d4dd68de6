// Test helper: a model workload parsed from YAML text against the shipped model presets, and a
// hardware preset by name (the shipped configs/).
#pragma once

#include <string>
#include <variant>

#include "hw/hardware_loader.h"
#include "tests/support/temp_files.h"
#include "workloads/workload.h"

namespace gpusim::testing {

inline workloads::ModelWorkload model_workload(const std::string& yaml, const std::string& file = "train.yaml") {
  return std::get<workloads::ModelWorkload>(workloads::parse_workload(yaml, file, {}, config_dir() / "models"));
}

inline hw::HardwareSpec preset(const std::string& name) {
  return hw::load_hardware(name, hw::PresetCatalog(config_dir() / "hw"), {});
}

}  // namespace gpusim::testing
