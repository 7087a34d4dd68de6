// The grouped GEMM probe suite on the shipped H200 probes: every launch compared, groups of
// several row tiles as close as single tiles (the L2 re-read of the weights), and a malformed file
// is a ConfigError naming it.
#include "validation/grouped_probe_suite.h"

#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "sim/error.h"
#include "tests/support/temp_files.h"

namespace gpusim::validation {
namespace {

TEST(GroupedProbeSuite, ShippedProbesWithinTheirThreshold) {
  const auto data = gpusim::testing::repo_dir() / "validation" / "data";
  const auto hw =
      hw::load_hardware("h200", hw::PresetCatalog(gpusim::testing::config_dir() / "hw"), {});
  const auto rows =
      compare_grouped_probes({data / "grouped_mm_h200.json.gz", data / "grouped_mm2_h200.json.gz",
                              data / "grouped_mm3_h200.json.gz", data / "grouped_mm4_h200.json.gz"},
                             hw);
  ASSERT_EQ(rows.size(), 205u);
  const auto family = [](const std::string& f) {
    return [f](const Comparison& c) { return c.reference.family == f; };
  };
  const auto all = [](const Comparison&) { return true; };
  EXPECT_LT(mape(rows, all), 13.0);
  // The streams of one tile an expert and of several: both within 15% (several had run 61% slow
  // as an unstreamed kernel).
  EXPECT_LT(mape(rows, family("grouped_mm pingpong one tile")), 15.0);
  EXPECT_LT(mape(rows, family("grouped_mm pingpong several tiles")), 15.0);
  for (const auto& r : rows) EXPECT_FALSE(r.reference.held_out) << r.reference.label;
}

TEST(GroupedProbeSuite, MalformedFileNamesIt) {
  gpusim::testing::TempDir dir;
  const auto hw =
      hw::load_hardware("h200", hw::PresetCatalog(gpusim::testing::config_dir() / "hw"), {});
  const auto bad =
      dir.write("probe.json", R"({"rows": [{"shape": "x", "N": 128, "K": 64, "experts": 2,
      "hit": 1, "rows_per_expert": 1, "counts": [1], "kernels": [{"name": "k", "median_us": 1.0}]}]})");
  try {
    compare_grouped_probes({bad}, hw);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("probe.json"), std::string::npos) << e.what();
  }
  const auto none = dir.write("none.json", R"({"rows": [{"shape": "x"}]})");
  EXPECT_THROW(compare_grouped_probes({none}, hw), ConfigError);
}

}  // namespace
}  // namespace gpusim::validation
