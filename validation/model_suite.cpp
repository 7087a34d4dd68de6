#include "validation/model_suite.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/hf_config.h"
#include "workloads/model_run.h"

namespace gpusim::validation {
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
      out.push_back(compare_run(std::move(ref), workloads::simulate_model(w, hw, hw::LaunchMode::kGraph, models), false));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(json.string(), 0, "cases", std::string("malformed case: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
