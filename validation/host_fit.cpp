#include "validation/host_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/hf_config.h"
#include "workloads/model_run.h"

namespace gpusim::validation {
namespace {

// The model with its first `layers` decoder layers, as host_costs.py cuts a config (per-layer
// patterns repeat; a dense prefix keeps at least one MoE layer).
workloads::ModelConfig with_layers(workloads::ModelConfig m, std::int64_t layers) {
  m.layers = layers;
  if (m.moe) m.moe->dense_layers = std::min(m.moe->dense_layers, std::max<std::int64_t>(0, layers - 1));
  return m;
}

}  // namespace

std::vector<HostSample> read_host_sweep(const std::filesystem::path& json) {
  return read_host_sweep(read_json_file(json), json);
}

std::vector<HostSample> read_host_sweep(const nlohmann::json& doc, const std::filesystem::path& json) {
  if (!doc.is_object() || !doc.contains("layers") || !doc.at("layers").is_array()) {
    throw ConfigError(json.string(), 0, "layers", "missing: the file has no layer sweep (host_walls.py writes one)");
  }
  const std::filesystem::path root = json.parent_path().parent_path().parent_path();
  std::vector<HostSample> out;
  try {
    for (const auto& x : doc.at("layers")) {
      const std::string family = x.at("family").get<std::string>();
      const std::int64_t layers = x.at("layers").get<std::int64_t>();
      const workloads::ModelConfig model =
          with_layers(workloads::load_hf_config(root / x.at("config").get<std::string>()), layers);
      for (const std::string phase : {"decode", "prefill"}) {
        if (!x.contains(phase) || x.at(phase).contains("error")) continue;  // not measured there
        const auto& m = x.at(phase);
        HostSample s;
        s.label = fmt::format("{} {}L {} B=1 16 tokens", family, layers, phase);
        s.family = x.at("model_type").get<std::string>() + " " + phase;
        s.host_us = m.at("host_us").get<double>();
        s.wall_us = m.at("wall_us").get<double>();
        s.measured_kernels = m.at("kernels").get<std::int64_t>();
        s.workload.name = s.label;
        s.workload.model = model;
        s.workload.phase = phase == "decode" ? workloads::Phase::kDecode : workloads::Phase::kPrefill;
        s.workload.batch = 1;
        s.workload.seq_len = 16;
        s.workload.dtype = hw::DType::kBf16;
        out.push_back(std::move(s));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(json.string(), 0, "layers", std::string("malformed entry: ") + e.what());
  }
  return out;
}

HostFit fit_host(const std::vector<HostSample>& samples, const hw::HardwareSpec& hw,
                 const models::KernelModelRegistry& models) {
  std::vector<double> kernels, host;
  for (const auto& s : samples) {
    std::int64_t k = 0;
    for (const auto& step : workloads::simulate_model(s.workload, hw, hw::LaunchMode::kGraph, models).steps) {
      k += step.kernels;
    }
    kernels.push_back(static_cast<double>(k));
    host.push_back(s.host_us);
  }
  if (std::set<double>(kernels.begin(), kernels.end()).size() < 2) {
    throw ConfigError("host sweep", 0, "layers", "a line needs forwards of at least two kernel counts");
  }
  const double n = static_cast<double>(kernels.size());
  double mk = 0, mh = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    mk += kernels[i] / n;
    mh += host[i] / n;
  }
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    sxy += (kernels[i] - mk) * (host[i] - mh);
    sxx += (kernels[i] - mk) * (kernels[i] - mk);
  }
  HostFit f;
  f.model_kernel_issue_us = sxy / sxx;
  f.forward_fixed_us = mh - f.model_kernel_issue_us * mk;
  if (f.forward_fixed_us < 0) {  // through the origin instead: no negative host time
    double xy = 0, xx = 0;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      xy += kernels[i] * host[i];
      xx += kernels[i] * kernels[i];
    }
    f.forward_fixed_us = 0;
    f.model_kernel_issue_us = xy / xx;
  }
  double err = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    err += std::fabs(f.forward_fixed_us + f.model_kernel_issue_us * kernels[i] - host[i]) / host[i];
  }
  f.host_mape_pct = 100.0 * err / n;
  f.samples = kernels.size();
  return f;
}

}  // namespace gpusim::validation
