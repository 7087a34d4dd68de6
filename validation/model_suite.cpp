#include "validation/model_suite.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/hf_config.h"
#include "workloads/model_run.h"

namespace gpusim::validation {
namespace {
// A MoE case's recorded routing (hf_models.py, set 8 on): the tokens each expert received in
// each MoE layer, given to the simulation as that layer's expert weights, so that it routes as
// the benchmark's random weights did rather than as a balanced router would.
void read_routing(const nlohmann::json& routing, const std::string& id,
                  const std::filesystem::path& json, workloads::ModelWorkload& w) {
  const auto fail = [&](const std::string& what) {
    throw ConfigError(json.string(), 0, "cases[" + id + "].routing", what);
  };
  if (!w.model.moe) fail("model " + w.model.name + " has no experts");
  for (const auto& [key, counts] : routing.at("layers").items()) {
    std::int64_t layer = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), layer);
    if (ec != std::errc() || end != key.data() + key.size()) layer = -1;
    if (layer < 0 || layer >= w.model.layers || !w.model.moe_layer(layer)) {
      fail(fmt::format("layer {} is not a MoE layer of {}", key, w.model.name));
    }
    auto weights = counts.get<std::vector<double>>();
    if (static_cast<std::int64_t>(weights.size()) != w.model.moe->experts) {
      fail(fmt::format("layer {} lists {} experts; the model has {}", key, weights.size(),
                       w.model.moe->experts));
    }
    if (std::accumulate(weights.begin(), weights.end(), 0.0) <= 0)
      fail("layer " + key + " routes no tokens");
    w.layer_expert_weights[layer] = std::move(weights);
  }
}
}  // namespace

std::vector<Comparison> compare_measured_models(const std::filesystem::path& json,
                                                const hw::HardwareSpec& hw,
                                                const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(json);
  std::vector<Comparison> out;
  try {
    for (const auto& c : doc.at("cases")) {
      MeasuredOp ref;
      const std::string id = c.at("id").get<std::string>();
      ref.label = id;
      ref.held_out = c.at("split").get<std::string>() == "holdout";
      ref.measured_us = c.at("kernel_time_us_median").get<double>();
      const std::string phase = c.at("phase").get<std::string>();
      ref.family = c.at("model_type").get<std::string>() + " " + phase;
      const auto& names = c.at("names");
      for (const auto& k : c.at("kernels")) ref.measured_kernels.push_back(names.at(k.at(0).get<std::size_t>()));
      ref.measured_kernels.resize(c.at("n_kernels").get<std::size_t>());  // generate lists a part

      workloads::ModelWorkload w;
      w.name = id;
      w.model = workloads::load_hf_config(json.parent_path() / c.at("hf_config").get<std::string>());
      w.phase = case_phase(phase, json);
      w.batch = c.at("batch").get<std::int64_t>();
      w.seq_len = c.at("seq_len").get<std::int64_t>();
      if (!c.at("output_len").is_null()) w.output_len = c.at("output_len").get<std::int64_t>();
      w.dtype = hw::DType::kBf16;
      if (c.contains("routing")) read_routing(c.at("routing"), id, json, w);
      out.push_back(compare_run(std::move(ref), workloads::simulate_model(w, hw, hw::LaunchMode::kGraph, models), false));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(json.string(), 0, "cases", std::string("malformed case: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
