// The host model against the shipped session data: `hw fit-host`'s fit reproduces the presets'
// host sections, the suite's rows split into the fitted sweep and the held-out full-size cases,
// and the walls follow the host section (a host twice as slow misses by far more).
#include "validation/host_suite.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "tests/support/temp_files.h"
#include "validation/host_fit.h"

namespace gpusim::validation {
namespace {

std::filesystem::path data() { return gpusim::testing::repo_dir() / "validation" / "data"; }

hw::HardwareSpec chip(const std::string& name, const std::vector<hw::HardwareOverride>& overrides = {}) {
  return hw::load_hardware(name, hw::PresetCatalog(gpusim::testing::config_dir() / "hw"), overrides);
}

TEST(HostFit, ThePresetsHostSectionsAreTheFitsOfTheirSessions) {
  const auto models = models::default_kernel_models();
  for (const std::string gpu : {"h100", "h200"}) {
    const hw::HardwareSpec spec = chip(gpu);
    const auto samples = read_host_sweep(data() / ("host_walls_" + gpu + ".json"));
    ASSERT_EQ(samples.size(), 72u) << gpu;
    const HostFit fit = fit_host(samples, spec, models);
    EXPECT_NEAR(fit.model_kernel_issue_us, spec.host.model_kernel_issue.us(), 0.05) << gpu;
    EXPECT_NEAR(fit.forward_fixed_us, spec.host.forward_fixed.us(), 0.5) << gpu;
    EXPECT_LT(fit.host_mape_pct, 20.0) << gpu;
  }
}

TEST(HostSuite, EagerWallTimesFollowTheHostSection) {
  const auto models = models::default_kernel_models();
  const auto file = data() / "host_walls_h200.json";
  const auto rows = compare_host_walls(file, chip("h200"), models);
  int held_out = 0, generate = 0;
  for (const auto& r : rows) {
    held_out += r.reference.held_out;
    generate += r.reference.family.ends_with(" generate");
    EXPECT_TRUE(std::isfinite(r.error_pct)) << r.reference.label;
  }
  EXPECT_EQ(rows.size(), 72u + 35u);
  EXPECT_EQ(held_out, 35);
  EXPECT_EQ(generate, 3);
  const auto held = [](const Comparison& c) { return c.reference.held_out; };
  const double fitted = mape(rows, held);
  EXPECT_LT(fitted, 20.0);
  const auto slow = compare_host_walls(file, chip("h200", {{"host.model_kernel_issue", "42.6us"}}), models);
  EXPECT_GT(mape(slow, held), 3 * fitted);
}

}  // namespace
}  // namespace gpusim::validation
