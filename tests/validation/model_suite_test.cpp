// The model suite's recorded routing: a MoE case's `routing` (tokens per expert per MoE layer,
// hf_models.py set 8 on) is what the simulation routes by; a malformed one is a ConfigError
// naming the case.
#include "validation/model_suite.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "tests/support/temp_files.h"

namespace gpusim::validation {
namespace {

// One Mixtral-4L decode case of 8 tokens (the shipped config), with `routing` as given.
std::filesystem::path write_case(const gpusim::testing::TempDir& dir, const std::string& routing) {
  const auto config = gpusim::testing::repo_dir() / "validation" / "data" / "hf_configs" /
                      "mixtral-4l_decode_b8_l1024.json";
  std::stringstream text;
  text << std::ifstream(config).rdbuf();
  dir.write("hf_configs/mixtral.json", text.str());
  return dir.write(
      "cases.json",
      R"({"cases": [{"id": "mixtral-4l_decode_b8_l1024", "split": "holdout", "model_type": "mixtral",
          "phase": "decode", "batch": 8, "seq_len": 1024, "output_len": null,
          "kernel_time_us_median": 4000.0, "n_kernels": 0, "kernels": [], "names": [],
          "hf_config": "hf_configs/mixtral.json")" +
          (routing.empty() ? std::string() : ", \"routing\": " + routing) + "}]}");
}

// 16 token-expert pairs a layer, on the experts `counts` lists.
std::string layers(const std::string& counts) {
  return R"({"experts": 8, "top_k": 2, "layers": {"0": )" + counts + R"(, "1": )" + counts +
         R"(, "2": )" + counts + R"(, "3": )" + counts + "}}";
}

TEST(ModelSuite, RecordedRoutingIsWhatTheCaseRoutesBy) {
  gpusim::testing::TempDir dir;
  const auto models = models::default_kernel_models();
  const hw::PresetCatalog catalog(gpusim::testing::config_dir() / "hw");
  const auto h200 = hw::load_hardware("h200", catalog, {});
  const auto simulated = [&](const std::string& routing) {
    const auto rows = compare_measured_models(write_case(dir, routing), h200, models);
    EXPECT_EQ(rows.size(), 1u);
    return rows.at(0).simulated_us;
  };
  // Balanced routing spreads 8 tokens' 16 pairs over 7 of the 8 experts (8 (1 - (3/4)^8) = 7.2),
  // 3, 3, 2, 2, 2, 2 and 2 rows: the same routing recorded runs the same kernels; two experts'
  // worth streams far less, all eight more.
  const double balanced = simulated("");
  const double seven = simulated(layers("[0, 2, 2, 3, 2, 3, 2, 2]"));
  const double two = simulated(layers("[8, 8, 0, 0, 0, 0, 0, 0]"));
  const double eight = simulated(layers("[2, 2, 2, 2, 2, 2, 2, 2]"));
  EXPECT_DOUBLE_EQ(seven, balanced);
  EXPECT_LT(two, 0.8 * balanced);
  EXPECT_GT(eight, balanced);
}

TEST(ModelSuite, MalformedRoutingNamesTheCase) {
  gpusim::testing::TempDir dir;
  const auto models = models::default_kernel_models();
  const hw::PresetCatalog catalog(gpusim::testing::config_dir() / "hw");
  const auto h200 = hw::load_hardware("h200", catalog, {});
  for (const std::string& routing :
       {std::string(R"({"layers": {"4": [2, 2, 2, 2, 2, 2, 2, 2]}})"),
        std::string(R"({"layers": {"x": [2, 2, 2, 2, 2, 2, 2, 2]}})"),
        std::string(R"({"layers": {"1": [2, 2]}})"),
        std::string(R"({"layers": {"1": [0, 0, 0, 0, 0, 0, 0, 0]}})")}) {
    try {
      compare_measured_models(write_case(dir, routing), h200, models);
      ADD_FAILURE() << routing;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("mixtral-4l_decode_b8_l1024"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("routing"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gpusim::validation
