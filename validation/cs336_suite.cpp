#include "validation/cs336_suite.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/model_run.h"
#include "workloads/workload.h"

namespace gpusim::validation {

std::vector<Comparison> compare_cs336_forwards(const std::filesystem::path& json, const std::filesystem::path& models_dir,
                                               const hw::HardwareSpec& hw, const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(json);
  std::vector<Comparison> out;
  try {
    for (const auto& c : doc.at("cases")) {
      MeasuredOp ref;
      ref.label = fmt::format("{} fp32 forward", c.at("id").get<std::string>());
      ref.family = c.at("model").get<std::string>();
      ref.held_out = c.at("split").get<std::string>() == "holdout";
      ref.measured_us = c.at("kernel_time_us_median").get<double>();
      // Kernels as [index into names, duration us], in launch order.
      for (const auto& k : c.at("kernels")) ref.measured_kernels.push_back(doc.at("names").at(k.at(0).get<std::size_t>()));
      const std::string yaml = fmt::format("model: {}\nphase: prefill\nbatch: {}\nseq_len: {}\ndtype: fp32\nlowering: cs336-basics\n",
                                           c.at("model").get<std::string>(), c.at("batch").get<std::int64_t>(),
                                           c.at("seq_len").get<std::int64_t>());
      const auto parsed = workloads::parse_workload(yaml, json.filename().string() + ": " + ref.label, {}, models_dir);
      const auto run = workloads::simulate_model(std::get<workloads::ModelWorkload>(parsed), hw, hw::LaunchMode::kGraph, models);
      out.push_back(compare_run(std::move(ref), run, false));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(json.string(), 0, "cases", std::string("malformed case: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
