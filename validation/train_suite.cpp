#include "validation/train_suite.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/model_run.h"
#include "workloads/workload.h"

namespace gpusim::validation {
namespace {



// A measured case as a `phase: train` workload of its own config (set 2 adds checkpointing and
// gradient accumulation; set 1 has neither); nullopt for a case gpusim does not lower.
std::optional<workloads::ModelWorkload> case_workload(const std::filesystem::path& json, const nlohmann::json& c) {
  const std::string id = c.at("id").get<std::string>();
  const std::string precision = c.at("precision").get<std::string>();
  const std::string type = c.at("model_type").get<std::string>();
  // GPT-2 under autocast (LayerNorm kept in fp32, Conv1D's addmm cast) is not lowered yet.
  if (type == "gpt2" && precision != "bf16") return std::nullopt;
  // bf16 weights, or fp32 weights under bf16 autocast (mixed precision).
  std::string dtype;
  if (precision == "bf16") dtype = "dtype: bf16\n";
  else if (precision == "fp32") dtype = "dtype: fp32\n";
  else if (precision == "fp32+autocast-bf16") dtype = "dtype: fp32\nautocast: bf16\n";
  else throw ConfigError(json.string(), 0, "cases", fmt::format("case {}: unknown precision '{}'", id, precision));
  // Set 4's tuned trainer (a TorchInductor-compiled model) is the fused lowering's training step.
  const std::string trainer = c.value("trainer", std::string("eager"));
  std::string lowering;
  if (trainer == "compiled") lowering = "lowering: fused\n";
  else if (trainer != "eager") throw ConfigError(json.string(), 0, "cases", fmt::format("case {}: unknown trainer '{}'", id, trainer));
  const auto config = json.parent_path() / "hf_configs" / fmt::format("train_{}.json", id);
  const std::string yaml = fmt::format(
      "hf_config: {}\nphase: train\nbatch: {}\nseq_len: {}\n{}optimizer: {}\ncheckpointing: {}\n"
      "gradient_accumulation_steps: {}\n{}",
      config.string(), c.at("batch").get<std::int64_t>(), c.at("seq_len").get<std::int64_t>(), dtype,
      c.at("optimizer").get<std::string>(), c.value("checkpointing", std::string("none")),
      c.value("accumulation_steps", 1), lowering);
  return std::get<workloads::ModelWorkload>(workloads::parse_workload(yaml, json.filename().string() + ": " + id, {}, {}));
}


// Calls fn(case, its workload) for every case of `json` gpusim lowers, counting the others in
// `not_modeled`; a malformed case is a ConfigError naming the file.
template <typename Fn>
void for_each_lowered_case(const std::filesystem::path& json, int& not_modeled, Fn fn) {
  const nlohmann::json doc = read_json_file(json);
  try {
    for (const auto& c : doc.at("cases")) {
      const auto w = case_workload(json, c);
      if (!w) {
        ++not_modeled;
        continue;
      }
      fn(c, *w);
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(json.string(), 0, "cases", std::string("malformed case: ") + e.what());
  }
}

}  // namespace

std::vector<Comparison> compare_train_steps(const std::filesystem::path& json, const hw::HardwareSpec& hw,
                                            const models::KernelModelRegistry& models, int& not_modeled) {
  std::vector<Comparison> out;
  not_modeled = 0;
  for_each_lowered_case(json, not_modeled, [&](const nlohmann::json& c, const workloads::ModelWorkload& w) {
    const std::string id = c.at("id").get<std::string>();
    const bool held_out = c.at("split").get<std::string>() == "holdout";
    const auto run = workloads::simulate_model(w, hw, hw::LaunchMode::kGraph, models);
    if (run.steps.size() != 1) throw ModelError("train suite: expected one training step");
    const auto& step = run.steps.front();
    for (const auto& split : step.phase_splits) {
      if (c.at("phases").at(split.name).at("n_kernels").get<int>() == 0) continue;
      const double measured = c.at("phases").at(split.name).at("kernel_time_us").get<double>();
      out.push_back(figure_row(fmt::format("{} {} kernel time", id, split.name), "train-" + split.name, held_out,
                               measured, split.kernel_time_us));
    }
    out.push_back(figure_row(fmt::format("{} step kernel time", id), "train-step", held_out,
                             c.at("kernel_time_us_median").get<double>(), step.kernel_time_us));
    // Memory in MiB: the step's allocation peak above weights and optimizer state.
    out.push_back(figure_row(fmt::format("{} peak above persistent (MiB)", id), "train-memory", held_out,
                             c.at("peak_above_persistent_bytes").get<double>() / 1048576.0,
                             static_cast<double>(run.memory.activation_peak_bytes) / 1048576.0));
  });
  return out;
}

std::vector<Comparison> compare_train_walls(const std::vector<std::filesystem::path>& files,
                                            const hw::HardwareSpec& hw, const models::KernelModelRegistry& models,
                                            int& not_modeled) {
  std::vector<Comparison> out;
  not_modeled = 0;
  for (const auto& json : files) {
    for_each_lowered_case(json, not_modeled, [&](const nlohmann::json& c, const workloads::ModelWorkload& w) {
      const auto run = workloads::simulate_model(w, hw, hw::LaunchMode::kEager, models);
      out.push_back(figure_row(fmt::format("{} step wall time (eager)", c.at("id").get<std::string>()), "train-wall",
                               c.at("split").get<std::string>() == "holdout", c.at("wall_us_median").get<double>(),
                               run.steps.front().total_us));
    });
  }
  return out;
}

}  // namespace gpusim::validation
