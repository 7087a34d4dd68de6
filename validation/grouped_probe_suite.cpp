#include "validation/grouped_probe_suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hw/gpu_engine.h"
#include "models/families.h"
#include "sim/error.h"
#include "validation/case_json.h"

namespace gpusim::validation {
namespace {

// The rows each expert got: `counts` as recorded (set 4 on), else `hit` experts of
// `rows_per_expert` rows spread evenly over the E experts, as the probe placed them.
std::vector<std::int64_t> expert_rows(const nlohmann::json& r) {
  if (r.contains("counts")) return r.at("counts").get<std::vector<std::int64_t>>();
  const auto experts = r.at("experts").get<std::int64_t>(), hit = r.at("hit").get<std::int64_t>();
  std::vector<std::int64_t> rows(static_cast<std::size_t>(experts), 0);
  for (std::int64_t j = 0; j < hit; ++j) {
    rows[static_cast<std::size_t>(j * experts / hit)] = r.at("rows_per_expert").get<std::int64_t>();
  }
  return rows;
}

}  // namespace

std::vector<Comparison> compare_grouped_probes(const std::vector<std::filesystem::path>& files,
                                               const hw::HardwareSpec& hw) {
  std::vector<Comparison> out;
  for (const auto& file : files) {
    const nlohmann::json doc = read_json_file(file);
    try {
      for (const auto& r : doc.at("rows")) {
        const auto rows = expert_rows(r);
        const std::int64_t N = r.at("N"), K = r.at("K");
        if (static_cast<std::int64_t>(rows.size()) != r.at("experts").get<std::int64_t>()) {
          throw ConfigError(file.string(), 0, "rows", "counts do not list every expert");
        }
        // The grouped kernel: the longest of the row's kernels (the prepare kernel is short).
        const auto& kernels = r.at("kernels");
        const auto main =
            std::max_element(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
              return a.at("median_us").template get<double>() <
                     b.at("median_us").template get<double>();
            });
        if (main == kernels.end())
          throw ConfigError(file.string(), 0, "rows", "a row lists no kernels");
        const std::int64_t most = *std::max_element(rows.begin(), rows.end());
        const std::string name = main->at("name").get<std::string>();
        MeasuredOp ref;
        const std::string per =
            r.at("rows_per_expert").is_string()
                ? r.at("rows_per_expert").get<std::string>()
                : fmt::format("{} rows", r.at("rows_per_expert").get<std::int64_t>());
        ref.label = fmt::format("grouped_mm {} hit={} {}", r.at("shape").get<std::string>(),
                                r.at("hit").get<std::int64_t>(), per);
        // GroupMM.cu's tiles: 64 rows for the Pingpong kernel, 128 for the Cooperative one.
        const bool cooperative = name.find("Cooperative") != std::string::npos;
        ref.family = fmt::format("grouped_mm {} {}", cooperative ? "cooperative" : "pingpong",
                                 most <= (cooperative ? 128 : 64) ? "one tile" : "several tiles");
        ref.measured_us = main->at("median_us").get<double>();
        ref.measured_kernels = {name};
        const auto launches = models::lower_grouped_gemm(rows, N, K, hw::DType::kBf16, {"x", 1},
                                                         {"w", 1}, {"y", 1}, hw);
        const auto run = hw::run_engine(hw, hw::LaunchMode::kGraph,
                                        {hw::KernelNode{launches.at(1), "grouped_mm", 0, {}, {}}});
        Comparison c;
        c.reference = std::move(ref);
        c.simulated_us = run.kernels.at(0).duration().us();
        c.simulated_kernels = {launches.at(1).name};
        c.main_family = launches.at(1).family;
        c.main_kernel = launches.at(1).name;
        c.main_kernel_us = c.simulated_us;
        c.error_pct = (c.simulated_us - c.reference.measured_us) / c.reference.measured_us * 100.0;
        out.push_back(std::move(c));
      }
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(file.string(), 0, "rows", std::string("malformed probe row: ") + e.what());
    }
  }
  return out;
}

}  // namespace gpusim::validation
