#include "validation/host_suite.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "validation/case_json.h"
#include "validation/host_fit.h"
#include "workloads/hf_config.h"
#include "workloads/model_run.h"

namespace gpusim::validation {
namespace {

Comparison simulate_wall(MeasuredOp ref, const workloads::ModelWorkload& w, const hw::HardwareSpec& hw,
                         const models::KernelModelRegistry& models) {
  return compare_run(std::move(ref), workloads::simulate_model(w, hw, hw::LaunchMode::kEager, models), true);
}

}  // namespace

std::vector<Comparison> compare_host_walls(const std::filesystem::path& host_walls, const hw::HardwareSpec& hw,
                                           const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(host_walls);
  std::vector<Comparison> out;
  for (auto& s : read_host_sweep(doc, host_walls)) {
    MeasuredOp ref;
    ref.label = s.label;
    ref.family = s.family;
    ref.held_out = false;
    ref.measured_us = s.wall_us;
    ref.measured_kernels.resize(static_cast<std::size_t>(s.measured_kernels));
    out.push_back(simulate_wall(std::move(ref), s.workload, hw, models));
  }
  try {
    for (const auto& c : doc.at("cases")) {
      MeasuredOp ref;
      const std::string id = c.at("id").get<std::string>();
      ref.label = id;
      ref.family = c.at("model_type").get<std::string>() + " " + c.at("phase").get<std::string>();
      ref.held_out = true;
      ref.measured_us = c.at("wall_us").get<double>();
      ref.measured_kernels.resize(c.at("kernels").get<std::size_t>());
      workloads::ModelWorkload w;
      w.name = id;
      w.model = workloads::load_hf_config(host_walls.parent_path() / c.at("hf_config").get<std::string>());
      w.phase = case_phase(c.at("phase").get<std::string>(), host_walls);
      w.batch = c.at("batch").get<std::int64_t>();
      w.seq_len = c.at("seq_len").get<std::int64_t>();
      if (!c.at("output_len").is_null()) w.output_len = c.at("output_len").get<std::int64_t>();
      w.dtype = hw::DType::kBf16;
      out.push_back(simulate_wall(std::move(ref), w, hw, models));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(host_walls.string(), 0, "cases", std::string("malformed case: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
