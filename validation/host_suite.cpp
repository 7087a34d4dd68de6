#include "validation/host_suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/error.h"
#include "workloads/hf_config.h"
#include "workloads/model_run.h"

namespace gpusim::validation {
namespace {

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file.string(), 0, "", "cannot read this file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file.string(), 0, "", std::string("not valid JSON: ") + e.what());
  }
}

workloads::Phase phase_of(const std::string& s, const std::filesystem::path& file) {
  if (s == "prefill") return workloads::Phase::kPrefill;
  if (s == "decode") return workloads::Phase::kDecode;
  throw ConfigError(file.string(), 0, "phase", "unknown phase '" + s + "' (prefill or decode)");
}

// The model with its first `layers` decoder layers, as host_costs.py cuts the config
// (per-layer patterns repeat; DeepSeek's dense prefix keeps at least one MoE layer).
workloads::ModelConfig with_layers(workloads::ModelConfig m, std::int64_t layers) {
  m.layers = layers;
  if (m.moe) m.moe->dense_layers = std::min(m.moe->dense_layers, std::max<std::int64_t>(0, layers - 1));
  return m;
}

Comparison simulate_wall(MeasuredOp ref, workloads::ModelWorkload w, const hw::HardwareSpec& hw,
                         const models::KernelModelRegistry& models) {
  w.dtype = hw::DType::kBf16;
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

}  // namespace

std::vector<Comparison> compare_host_walls(const std::filesystem::path& host_costs,
                                           const std::filesystem::path& recheck,
                                           const hw::HardwareSpec& hw,
                                           const models::KernelModelRegistry& models) {
  std::vector<Comparison> out;
  const std::filesystem::path root = host_costs.parent_path().parent_path().parent_path();
  const nlohmann::json costs = read_json(host_costs);
  try {
    std::set<std::string> families;
    for (const auto& x : costs.at("layers")) families.insert(x.at("family").get<std::string>());
    std::map<std::string, bool> held_out;  // alternate families by name, as fit_host.py
    bool odd = false;
    for (const auto& f : families) {
      held_out[f] = odd;
      odd = !odd;
    }
    for (const auto& x : costs.at("layers")) {
      const std::string family = x.at("family").get<std::string>();
      const std::int64_t layers = x.at("layers").get<std::int64_t>();
      const workloads::ModelConfig model =
          with_layers(workloads::load_hf_config(root / x.at("config").get<std::string>()), layers);
      for (const std::string phase : {"decode", "prefill"}) {
        MeasuredOp ref;
        ref.label = fmt::format("{} {}L {} B=1 16 tokens", family, layers, phase);
        ref.family = x.at("model_type").get<std::string>() + " " + phase;
        ref.held_out = held_out[family];
        ref.measured_us = x.at(phase).at("wall_us").get<double>();
        ref.measured_kernels.resize(x.at(phase).at("kernels").get<std::size_t>());
        workloads::ModelWorkload w;
        w.name = ref.label;
        w.model = model;
        w.phase = phase_of(phase, host_costs);
        w.batch = 1;
        w.seq_len = 16;
        out.push_back(simulate_wall(std::move(ref), std::move(w), hw, models));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(host_costs.string(), 0, "layers", std::string("malformed entry: ") + e.what());
  }
  const nlohmann::json again = read_json(recheck);
  try {
    for (const auto& c : again.at("cases")) {
      MeasuredOp ref;
      ref.label = c.at("id").get<std::string>() + " (full size)";
      ref.family = c.at("model_type").get<std::string>() + " " + c.at("phase").get<std::string>();
      ref.held_out = true;
      ref.measured_us = c.at("wall_us_median").get<double>();
      ref.measured_kernels.resize(c.at("n_kernels").get<std::size_t>());
      workloads::ModelWorkload w;
      w.name = c.at("id").get<std::string>();
      w.model = workloads::parse_hf_config(c.at("hf_config_json").get<std::string>(),
                                           recheck.string() + ": " + w.name, w.name);
      w.phase = phase_of(c.at("phase").get<std::string>(), recheck);
      w.batch = c.at("batch").get<std::int64_t>();
      w.seq_len = c.at("seq_len").get<std::int64_t>();
      out.push_back(simulate_wall(std::move(ref), std::move(w), hw, models));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(recheck.string(), 0, "cases", std::string("malformed case: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
