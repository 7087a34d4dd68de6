// Prediction bands (validation/error_bands.h, src/run_bands.h): the method on made-up residuals,
// the shipped configs/error_bands.yaml against the data it is computed from, and the bands a
// run reports.
#include "validation/error_bands.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "hw/preset_catalog.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "src/run_bands.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::validation {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::read_file;
using gpusim::testing::repo_dir;

Comparison row(double measured, double simulated, const std::string& family, const std::string& kernel,
               bool held_out = false) {
  Comparison c;
  c.reference.measured_us = measured;
  c.reference.held_out = held_out;
  c.simulated_us = simulated;
  c.main_family = family;
  c.main_kernel = kernel;
  c.main_kernel_us = simulated;
  return c;
}

TEST(ErrorBands, PercentilesOfMeasuredOverSimulatedPerFamily) {
  std::vector<Comparison> rows;
  // Ratios 0.8, 0.9, ..., 1.6 for "softmax" (9 rows); two "cat" rows; a held-out row ignored.
  for (int i = 0; i < 9; ++i) rows.push_back(row(0.8 + 0.1 * i, 1.0, "softmax", "softmax_warp_forward"));
  rows.push_back(row(2.0, 1.0, "cat", "CatArrayBatchedCopy"));
  rows.push_back(row(1.0, 4.0, "cat", "CatArrayBatchedCopy"));
  rows.push_back(row(100.0, 1.0, "softmax", "softmax_warp_forward", true));
  const ChipBands b = compute_chip_bands("h100-sxm5", rows);
  ASSERT_EQ(b.families.count("softmax"), 1u);
  EXPECT_EQ(b.families.at("softmax").rows, 9);
  EXPECT_NEAR(b.families.at("softmax").low, 0.88, 1e-12);   // 10th percentile of 0.8..1.6
  EXPECT_NEAR(b.families.at("softmax").high, 1.52, 1e-12);  // 90th
  EXPECT_EQ(b.families.count("cat"), 0u);  // fewer than kMinBandRows rows
  EXPECT_EQ(b.pooled.rows, 11);
  EXPECT_DOUBLE_EQ(b.pooled.smallest_us, 1.0);
  EXPECT_DOUBLE_EQ(b.pooled.largest_us, 4.0);
}

TEST(ErrorBands, GemmVariantsFromKernelNames) {
  EXPECT_EQ(band_variant("gemm", "nvjet_sm90_tst_128x8_64x12_4x1_v_bz_TNT"), "gemm/nvjet_sm90");
  EXPECT_EQ(band_variant("gemm", "cutlass_75_tensorop_s1688gemm_bf16_64x64_nn_align1"), "gemm/cutlass_75_tensorop");
  EXPECT_EQ(band_variant("gemm", "void gemmSN_NN_kernel<float, 256, ...>"), "gemm/gemmSN_NN");
  EXPECT_EQ(band_variant("softmax", "softmax_warp_forward"), "");
}

TEST(ErrorBands, ShippedFileIsWhatTheDataGives) {
  const auto computed = compute_error_bands(repo_dir() / "validation" / "data",
                                            hw::PresetCatalog(config_dir() / "hw"),
                                            models::default_kernel_models());
  std::ostringstream text;
  write_error_bands(computed, text);
  EXPECT_EQ(read_file(config_dir() / "error_bands.yaml"), text.str())
      << "configs/error_bands.yaml is stale: run `gpusim validate --write-bands configs/error_bands.yaml`";
  // And it reads back.
  const ErrorBands read = read_error_bands(config_dir() / "error_bands.yaml");
  ASSERT_NE(read.find("h100-sxm5"), nullptr);
  ASSERT_NE(read.find("h200-sxm"), nullptr);
  EXPECT_GT(read.find("h100-sxm5")->families.at("gemm/nvjet_sm90").rows, 20);
}

TEST(ErrorBands, MalformedFileNamesTheKey) {
  gpusim::testing::TempDir dir;
  const auto f = dir.write("bands.yaml", "h100-sxm5:\n  pooled: {rows: 3, low: 0.9, high: 1.1, smallest_us: 1}\n  families: {}\n");
  try {
    read_error_bands(f);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("largest_us"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bands.yaml:2"), std::string::npos) << e.what();
  }
}

TEST(RunBands, KernelsTakeTheirVariantFamilyOrPooledBand) {
  ErrorBands bands;
  ChipBands c;
  c.chip = "h100-sxm5";
  c.pooled = {100, 0.5, 2.0, 1.0, 1000.0};
  c.families["gemm"] = {50, 0.8, 1.5, 1.0, 1000.0};
  c.families["gemm/nvjet_sm90"] = {30, 0.9, 1.2, 1.0, 100.0};
  bands.chips.push_back(c);
  cli::RunReport r;
  r.total_us = 400;
  r.kernel_time_us = 300;
  auto kernel = [](std::string name, std::string family, double us) {
    cli::KernelReport k;
    k.name = std::move(name);
    k.family = std::move(family);
    k.metrics.duration_us = us;
    return k;
  };
  r.kernels = {kernel("nvjet_sm90_tst_64x8", "gemm", 100), kernel("gemmSN_NN", "gemm", 100),
               kernel("CatArrayBatchedCopy", "cat", 100)};
  cli::attach_bands(r, "h100-sxm5", bands);
  EXPECT_EQ(r.band_source, "h100-sxm5");
  EXPECT_DOUBLE_EQ(r.kernels[0].band_low_us, 90);   // its variant
  EXPECT_DOUBLE_EQ(r.kernels[1].band_high_us, 150);  // the gemm family
  EXPECT_DOUBLE_EQ(r.kernels[2].band_low_us, 50);   // no band: pooled
  EXPECT_FALSE(r.kernels[2].band_calibrated);
  EXPECT_EQ(r.kernels_outside_bands, 1);
  EXPECT_DOUBLE_EQ(r.kernel_time_low_us, 90 + 80 + 50);
  EXPECT_DOUBLE_EQ(r.kernel_time_high_us, 120 + 150 + 200);
  EXPECT_DOUBLE_EQ(r.total_high_us, 100 + 470);
  // A kernel far beyond the durations its variant covered takes the pooled band.
  r.kernels = {kernel("nvjet_sm90_tst_64x8", "gemm", 300)};
  r.kernel_time_us = 300;
  cli::attach_bands(r, "h100-sxm5", bands);
  EXPECT_DOUBLE_EQ(r.kernels[0].band_low_us, 150);
  // A chip without measurements borrows the H100's residuals, and says so.
  cli::attach_bands(r, "npu-64sm-128mb", bands);
  EXPECT_NE(r.band_source.find("transferred"), std::string::npos);
}

TEST(RunBands, RunsReportThemInTheTableAndJson) {
  const auto j = gpusim::testing::run_json((config_dir() / "workloads" / "ops.yaml").string(), "h100");
  ASSERT_TRUE(j.contains("bands"));
  EXPECT_EQ(j["bands"]["source"], "h100-sxm5");
  EXPECT_LT(j["bands"]["kernel_time_us"][0].get<double>(), j["kernel_time_us"].get<double>());
  EXPECT_GT(j["bands"]["kernel_time_us"][1].get<double>(), j["kernel_time_us"].get<double>());
  for (const auto& k : j["kernels"]) {
    EXPECT_LE(k["band_us"][0].get<double>(), k["duration_us"].get<double>());
    EXPECT_GE(k["band_us"][1].get<double>(), k["duration_us"].get<double>());
  }
  const auto t = gpusim::testing::run_gpusim({"run", (config_dir() / "workloads" / "ops.yaml").string(), "--hw", "h100"});
  EXPECT_NE(t.out.find("80% band: total"), std::string::npos) << t.out;
  gpusim::testing::TempDir dir;
  const auto r = gpusim::testing::run_gpusim({"report", (config_dir() / "workloads" / "ops.yaml").string(), "--hw",
                                              "h100", "--out", (dir.path() / "r").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(read_file(dir.path() / "r" / "report.md").find("with 80% confidence"), std::string::npos);
}

}  // namespace
}  // namespace gpusim::validation
