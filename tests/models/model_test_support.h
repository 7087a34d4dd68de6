// Helpers for the kernel-model tests: hardware presets, lowering through the registry, sums
// over launches, and a reader for the measured launch configurations in
// validation/data/ops_h100.csv.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "hw/occupancy.h"
#include "hw/preset_catalog.h"
#include "models/kernel_model.h"

namespace gpusim::models::testing {

inline std::filesystem::path repo() { return GPUSIM_REPO_DIR; }

inline hw::HardwareSpec preset(const std::string& name) {
  return hw::load_hardware(name, hw::PresetCatalog(repo() / "configs" / "hw"));
}

inline const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names{"h100", "h200", "rtx5090", "a100"};
  return names;
}

inline std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw) {
  static const KernelModelRegistry registry = default_kernel_models();
  return registry.lower(op, hw, "op0");
}

// A launch's (or launches') summed work: hw::totals.
using Totals = hw::LaunchTotals;
using hw::totals;

inline std::string dims(const hw::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

// One kernel row of ops_h100.csv.
struct MeasuredKernel {
  std::string op, dtype, shape, params_json, name, grid, block;
  bool held_out = false;
  int index = 0;
  std::string regs, smem;
};

// Splits one CSV line (RFC 4180 quoting; fields have no embedded newlines).
inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// The rows of ops_h100.csv that are not held out (held-out rows are never read by tests).
inline std::vector<MeasuredKernel> measured_h100() {
  std::ifstream in(repo() / "validation" / "data" / "ops_h100.csv");
  std::vector<MeasuredKernel> rows;
  std::string line;
  if (!std::getline(in, line)) return rows;
  const auto header = split_csv(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  while (std::getline(in, line)) {
    const auto f = split_csv(line);
    if (f.size() < header.size()) continue;
    MeasuredKernel k;
    k.held_out = f[col["held_out"]] != "0";
    if (k.held_out) continue;
    k.op = f[col["op"]];
    k.dtype = f[col["dtype"]];
    k.shape = f[col["shape"]];
    k.params_json = f[col["params_json"]];
    k.index = std::stoi(f[col["kernel_index"]]);
    k.name = f[col["kernel_name"]];
    k.grid = f[col["grid"]];
    k.block = f[col["block"]];
    k.regs = f[col["regs"]];
    k.smem = f[col["smem"]];
    rows.push_back(k);
  }
  return rows;
}

// Finds kernel `index` of the measured instance (op, shape); nullptr when absent.
inline const MeasuredKernel* find_measured(const std::vector<MeasuredKernel>& rows,
                                           const std::string& op, const std::string& dtype,
                                           const std::string& shape, int index) {
  for (const auto& r : rows) {
    if (r.op == op && r.dtype == dtype && r.shape == shape && r.index == index) return &r;
  }
  return nullptr;
}

}  // namespace gpusim::models::testing
