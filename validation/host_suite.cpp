#include "validation/host_suite.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "validation/host_fit.h"
#include "workloads/hf_config.h"
#include "workloads/model_run.h"

namespace gpusim::validation {
namespace {

Comparison simulate_wall(MeasuredOp ref, const workloads::ModelWorkload& w, const hw::HardwareSpec& hw,
                         const models::KernelModelRegistry& models) {
  const auto run = workloads::simulate_model(w, hw, hw::LaunchMode::kEager, models);
  Comparison c;
  std::int64_t kernels = 0;
  for (const auto& step : run.steps) {
    c.simulated_us += step.total_us;
    kernels += step.kernels;
  }
  c.simulated_kernels.resize(static_cast<std::size_t>(kernels));
  c.error_pct = 100.0 * (c.simulated_us - ref.measured_us) / ref.measured_us;
  c.reference = std::move(ref);
  return c;
}

workloads::Phase phase_of(const std::string& s, const std::filesystem::path& file) {
  if (s == "prefill") return workloads::Phase::kPrefill;
  if (s == "decode") return workloads::Phase::kDecode;
  if (s == "generate") return workloads::Phase::kGenerate;
  throw ConfigError(file.string(), 0, "cases[].phase", "unknown phase '" + s + "'");
}

}  // namespace

std::vector<Comparison> compare_host_walls(const std::filesystem::path& host_walls, const hw::HardwareSpec& hw,
                                           const models::KernelModelRegistry& models) {
  std::vector<Comparison> out;
  for (auto& s : read_host_sweep(host_walls)) {
    MeasuredOp ref;
    ref.label = s.label;
    ref.family = s.family;
    ref.held_out = false;
    ref.measured_us = s.wall_us;
    ref.measured_kernels.resize(static_cast<std::size_t>(s.measured_kernels));
    out.push_back(simulate_wall(std::move(ref), s.workload, hw, models));
  }
  std::ifstream in(host_walls);
  const nlohmann::json doc = nlohmann::json::parse(in);  // read_host_sweep parsed it already
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
      w.phase = phase_of(c.at("phase").get<std::string>(), host_walls);
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
