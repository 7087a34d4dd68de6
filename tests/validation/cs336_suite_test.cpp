// The cs336 suite on the shipped H100 measurement: every case compared, the held-out half within
// the threshold the suite records, and the comparison follows the chip (half the DRAM bandwidth
// is slower by far).
#include "validation/cs336_suite.h"

#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "tests/support/temp_files.h"

namespace gpusim::validation {
namespace {

TEST(Cs336Suite, ForwardKernelTimeOfTheShippedMeasurement) {
  const auto models = models::default_kernel_models();
  const auto file = gpusim::testing::repo_dir() / "validation" / "data" / "cs336_forward_h100.json";
  const hw::PresetCatalog catalog(gpusim::testing::config_dir() / "hw");
  const auto rows = compare_cs336_forwards(file, gpusim::testing::config_dir() / "models",
                                           hw::load_hardware("h100", catalog, {}), models);
  ASSERT_EQ(rows.size(), 9u);
  int held_out = 0;
  for (const auto& r : rows) {
    held_out += r.reference.held_out;
    EXPECT_GT(r.reference.measured_kernels.size(), 700u) << r.reference.label;
  }
  EXPECT_EQ(held_out, 5);
  const auto held = [](const Comparison& c) { return c.reference.held_out; };
  EXPECT_LT(mape(rows, held), 4.0);
  const std::vector<hw::HardwareOverride> slower{{"dram.bandwidth", "1.675TB/s"}};
  const auto slow = compare_cs336_forwards(file, gpusim::testing::config_dir() / "models",
                                           hw::load_hardware("h100", catalog, slower), models);
  EXPECT_GT(mape(slow, held), 3 * mape(rows, held));
}

}  // namespace
}  // namespace gpusim::validation
