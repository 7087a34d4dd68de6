#include "validation/replay_suite.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "hw/hardware_loader.h"
#include "replay/profiler_trace.h"
#include "replay/replay_run.h"
#include "sim/error.h"
#include "validation/case_json.h"

namespace gpusim::validation {

std::vector<Comparison> compare_replays(const std::filesystem::path& index, const std::string& chip,
                                        const hw::PresetCatalog& catalog, const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(index);
  std::vector<Comparison> out;
  try {
    const auto& chips = doc.at("chips");
    if (!chips.contains(chip)) throw ConfigError(index.string(), 0, "chips", fmt::format("no chip '{}'", chip));
    const hw::HardwareSpec target = hw::load_hardware(chips.at(chip).get<std::string>(), catalog);
    const auto dir = index.parent_path();
    for (const auto& p : doc.at("programs")) {
      const std::string id = p.at("id").get<std::string>();
      const bool held_out = p.at("split").get<std::string>() == "holdout";
      const auto own = replay::read_profiler_trace(dir / fmt::format("replay_{}_{}.json.gz", chip, id));
      const double measured = replay::recorded_kernel_time_us(own);
      const auto same = replay::run_replay(own, target, &target, models);
      out.push_back(figure_row(fmt::format("{} same-chip kernel time", id), "replay-same-chip", held_out, measured,
                               same.kernel_time_us));
      for (const auto& [other, preset] : chips.items()) {
        if (other == chip) continue;
        const hw::HardwareSpec from = hw::load_hardware(preset.get<std::string>(), catalog);
        const auto trace = replay::read_profiler_trace(dir / fmt::format("replay_{}_{}.json.gz", other, id));
        const auto cross = replay::run_replay(trace, target, &from, models);
        out.push_back(figure_row(fmt::format("{} from {} kernel time", id, other), "replay-cross-chip", held_out, measured,
                                 cross.kernel_time_us));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(index.string(), 0, "programs", std::string("malformed index: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
