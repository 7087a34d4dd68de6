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

std::vector<Comparison> compare_cs336_train_steps(const std::filesystem::path& json,
                                                  const std::filesystem::path& models_dir, const hw::HardwareSpec& hw,
                                                  const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(json);
  std::vector<Comparison> out;
  try {
    for (const auto& c : doc.at("cases")) {
      const std::string id = c.at("id").get<std::string>();
      const bool held_out = c.at("split").get<std::string>() == "holdout";
      const std::string yaml = fmt::format(
          "model: {}\nphase: train\nbatch: {}\nseq_len: {}\ndtype: fp32\nlowering: cs336-basics\noptimizer: none\n",
          c.at("model").get<std::string>(), c.at("batch").get<std::int64_t>(), c.at("seq_len").get<std::int64_t>());
      const auto parsed = workloads::parse_workload(yaml, json.filename().string() + ": " + id, {}, models_dir);
      const auto& w = std::get<workloads::ModelWorkload>(parsed);
      const auto run = workloads::simulate_model(w, hw, hw::LaunchMode::kGraph, models);
      if (run.steps.size() != 1) throw ModelError("cs336 train suite: expected one training step");
      const auto& step = run.steps.front();
      for (const auto& split : step.phase_splits) {
        const double measured = c.at("phases").at(split.name).at("kernel_time_us").get<double>();
        out.push_back(figure_row(fmt::format("{} {} kernel time", id, split.name), "cs336-train-" + split.name,
                                held_out, measured, split.kernel_time_us));
      }
      out.push_back(figure_row(fmt::format("{} step kernel time", id), "cs336-train-step", held_out,
                              c.at("kernel_time_us_median").get<double>(), step.kernel_time_us));
      // Memory in MiB above the weights (and the script's buffers): the step's peak, and what the
      // forward leaves allocated for the backward.
      const auto steps = workloads::build_steps(w, hw, models);
      const auto& p = steps.front();
      const double before_backward = p.activation_profile.at(p.phase_starts.at(1).second - 1);
      constexpr double kMiB = 1048576.0;
      out.push_back(figure_row(fmt::format("{} peak above persistent (MiB)", id), "cs336-train-memory", held_out,
                              c.at("peak_above_persistent_bytes").get<double>() / kMiB,
                              static_cast<double>(run.memory.activation_peak_bytes) / kMiB));
      out.push_back(figure_row(fmt::format("{} allocated before backward (MiB)", id), "cs336-train-memory", held_out,
                              c.at("allocated_before_backward_bytes").get<double>() / kMiB, before_backward / kMiB));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(json.string(), 0, "cases", std::string("malformed case: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
