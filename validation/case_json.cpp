#include "validation/case_json.h"

#include "replay/gzip_text.h"
#include "sim/error.h"

namespace gpusim::validation {

nlohmann::json read_json_file(const std::filesystem::path& file) {
  const std::string text = replay::read_text_file(file);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file.string(), 0, "", std::string("not valid JSON: ") + e.what());
  }
}

workloads::Phase case_phase(const std::string& s, const std::filesystem::path& file) {
  if (s == "prefill") return workloads::Phase::kPrefill;
  if (s == "decode") return workloads::Phase::kDecode;
  if (s == "generate") return workloads::Phase::kGenerate;
  throw ConfigError(file.string(), 0, "cases[].phase", "unknown phase '" + s + "'");
}

Comparison compare_run(MeasuredOp ref, const workloads::ModelRun& run, bool wall) {
  Comparison c;
  std::int64_t kernels = 0;
  for (const auto& step : run.steps) {
    c.simulated_us += wall ? step.total_us : step.kernel_time_us;
    kernels += step.kernels;
    if (step.detail) {
      for (const auto& k : step.detail->result.kernels) c.simulated_kernels.push_back(k.name);
    }
  }
  c.simulated_kernels.resize(static_cast<std::size_t>(kernels));
  c.error_pct = 100.0 * (c.simulated_us - ref.measured_us) / ref.measured_us;
  c.reference = std::move(ref);
  return c;
}

Comparison figure_row(const std::string& label, const std::string& family, bool held_out, double measured,
                      double simulated) {
  Comparison c;
  c.reference.label = label;
  c.reference.family = family;
  c.reference.held_out = held_out;
  c.reference.measured_us = measured;
  c.simulated_us = simulated;
  c.error_pct = measured > 0 ? 100.0 * (simulated - measured) / measured : 0.0;
  return c;
}

}  // namespace gpusim::validation
