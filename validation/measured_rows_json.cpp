#include "validation/measured_rows_json.h"

namespace gpusim::validation {
namespace {

nlohmann::json launches_json(const std::vector<KernelLaunchRecord>& launches) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : launches) {
    out.push_back({{"name", k.name}, {"grid", k.grid}, {"block", k.block}, {"us", k.us}});
  }
  return out;
}

}  // namespace

nlohmann::json measured_rows_json(const std::string& suite, const std::string& hardware,
                                  const std::vector<Comparison>& rows) {
  nlohmann::json out = {
      {"suite", suite}, {"hardware", hardware}, {"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    out["rows"].push_back({{"op", r.reference.label},
                           {"family", r.reference.family},
                           {"split", r.reference.held_out ? "held-out" : "calibration"},
                           {"measured_us", r.reference.measured_us},
                           {"simulated_us", r.simulated_us},
                           {"error_pct", r.error_pct},
                           {"measured", launches_json(r.reference.measured_launches)},
                           {"simulated", launches_json(r.simulated_launches)}});
  }
  return out;
}

}  // namespace gpusim::validation
