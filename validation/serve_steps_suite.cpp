#include "validation/serve_steps_suite.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/hf_config.h"
#include "workloads/model_run.h"

namespace gpusim::validation {

std::vector<Comparison> compare_serve_steps(const std::filesystem::path& file, const hw::HardwareSpec& hw,
                                            const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(file);
  std::vector<Comparison> out;
  workloads::OpLoweringCache lowering(hw, models);
  hw::KernelOutcomeCache cache(hw);
  try {
    for (const auto& c : doc.at("cases")) {
      if (c.contains("error")) continue;
      const std::string id = c.at("id").get<std::string>();
      nlohmann::json config = c.at("config");
      config["model_type"] = "llama";
      workloads::ModelWorkload w;
      w.name = id;
      w.model = workloads::parse_hf_config(config.dump(), file.string() + ": " + id, c.at("model").get<std::string>());
      w.phase = workloads::Phase::kDecode;
      w.lowering = workloads::Lowering::kFused;
      w.dtype = hw::DType::kBf16;
      // The measured stand-in engine's kernels (configs/engines/pytorch-fa2-varlen.yaml).
      w.serving.attention = workloads::ModelWorkload::ServingKernels::Attention::kUnifiedVarlen;
      w.serving.elementwise = workloads::ModelWorkload::ServingKernels::Elementwise::kInductor;
      std::vector<workloads::SeqSlice> seqs;
      for (const auto& s : c.at("seqs")) {
        // Every sequence samples: the measured step runs the lm_head on each sequence's last row.
        seqs.push_back({s.at(0).get<std::int64_t>(), s.at(1).get<std::int64_t>(), true});
      }
      const workloads::StepShape shape(std::move(seqs));
      const double simulated =
          workloads::simulate_step(w, "serve", shape, lowering, hw, hw::LaunchMode::kGraph, &cache).kernel_time_us;
      const bool held_out = c.at("split").get<std::string>() == "holdout";
      out.push_back(figure_row(fmt::format("{} ({} seqs, {} tokens) kernel time", id, shape.batch, shape.tokens()),
                               "serve-step", held_out, c.at("kernel_time_us_median").get<double>(), simulated));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file.string(), 0, "cases", std::string("malformed: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
