// The host suite on the shipped data: both halves present, the wall times follow the preset's
// host section (a host twice as slow fails the comparison), and the full-size cases are held out.
#include "validation/host_suite.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "tests/support/temp_files.h"

namespace gpusim::validation {
namespace {

std::filesystem::path data() { return gpusim::testing::repo_dir() / "validation" / "data"; }

hw::HardwareSpec h200(const std::vector<hw::HardwareOverride>& overrides = {}) {
  return hw::load_hardware("h200", hw::PresetCatalog(gpusim::testing::config_dir() / "hw"), overrides);
}

TEST(HostSuite, EagerWallTimesOfTheShippedSessionFollowTheHostSection) {
  const auto models = models::default_kernel_models();
  const auto rows = compare_host_walls(data() / "host_costs_h200.json", data() / "hf_wall_recheck_h200.json",
                                       h200(), models);
  ASSERT_EQ(rows.size(), 12u * 3 * 2 + 3);
  int held_out = 0, full_size = 0;
  for (const auto& r : rows) {
    held_out += r.reference.held_out;
    if (r.reference.label.find("(full size)") != std::string::npos) {
      ++full_size;
      EXPECT_TRUE(r.reference.held_out) << r.reference.label;
    }
    EXPECT_TRUE(std::isfinite(r.error_pct)) << r.reference.label;
    EXPECT_GT(r.simulated_us, 0) << r.reference.label;
  }
  EXPECT_EQ(full_size, 3);
  EXPECT_EQ(held_out, 6 * 3 * 2 + 3);  // half the families, and the full-size cases
  const double fitted = mape(rows, [](const Comparison& c) { return c.reference.held_out; });
  EXPECT_LT(fitted, 15.0);
  // The same session against a host twice as slow per launch: the walls follow the host.
  const auto slow = compare_host_walls(data() / "host_costs_h200.json", data() / "hf_wall_recheck_h200.json",
                                       h200({{"host.model_kernel_issue", "40.2us"}}), models);
  EXPECT_GT(mape(slow, [](const Comparison& c) { return c.reference.held_out; }), 3 * fitted);
}

}  // namespace
}  // namespace gpusim::validation
