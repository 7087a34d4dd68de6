// The tensor-parallel suites (validation/tp_steps_suite.h, validation/tp_published_suite.h): the
// op workload of tp_steps.py's layer, and both suites' rows on the shipped data.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "hw/preset_catalog.h"
#include "models/kernel_model.h"
#include "tests/support/cli_runner.h"
#include "validation/tp_published_suite.h"
#include "validation/tp_steps_suite.h"

namespace gpusim::validation {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::repo_dir;

hw::HardwareSpec system_preset(const std::string& name) {
  return hw::load_hardware(name, hw::PresetCatalog(std::vector{config_dir() / "hw", config_dir() / "systems"}));
}

std::vector<std::string> op_names(const workloads::OpWorkload& w) {
  std::vector<std::string> names;
  for (const auto& o : w.ops) names.emplace_back(models::op_name(o.op.kind()));
  return names;
}

// tp_steps.py's layer_forward, op by op: two all-reduces a layer only when split.
TEST(TpStepsSuite, LayerIsTheScriptsOpSequence) {
  const std::vector<std::string> prefill{"rms_norm", "linear", "rope", "rope", "sdpa", "linear", "allreduce", "add",
                                         "rms_norm", "linear", "silu", "mul", "linear", "allreduce", "add"};
  EXPECT_EQ(op_names(tp_layer_workload("llama3-8b", "prefill", 1, 1024, 2, 1)), prefill);
  const std::vector<std::string> decode{"rms_norm", "linear", "rope", "rope", "copy", "copy", "sdpa_decode", "linear",
                                        "add", "rms_norm", "linear", "silu", "mul", "linear", "add"};
  EXPECT_EQ(op_names(tp_layer_workload("llama3-70b", "decode", 32, 2048, 1, 1)), decode);
  const auto w = tp_layer_workload("llama3-70b", "decode", 1, 2048, 4, 4);
  EXPECT_EQ(w.ops.size(), 4u * 17u);
  // The fused QKV projection of one GPU's heads: (64/4 + 2 x 8/4) x 128 columns.
  EXPECT_EQ(w.ops[1].op.as<models::LinearShape>().N, (16 + 2 * 2) * 128);
  // The all-reduce carries the layer's output, bf16.
  EXPECT_EQ(w.ops[8].op.as<models::CollectiveShape>().bytes, 8192 * 2);
  EXPECT_EQ(w.ops[8].op.as<models::CollectiveShape>().gpus, 4);
}

TEST(TpStepsSuite, RowsOnTheMeasuredFiles) {
  const auto data = repo_dir() / "validation" / "data";
  const auto rows = compare_tp_steps({data / "tp_steps_h100_tp1.json", data / "tp_steps_h100_tp2.json",
                                      data / "tp_steps_h100_tp4.json"},
                                     system_preset("dgx-h100"), models::default_kernel_models());
  ASSERT_EQ(rows.size(), 48u);  // 8 cases x 3 TP degrees x (graph step, compute kernels)
  int held_out = 0;
  for (const auto& r : rows) {
    held_out += r.reference.held_out ? 1 : 0;
    EXPECT_EQ(r.reference.held_out, r.reference.label.find("TP 4") != std::string::npos) << r.reference.label;
    EXPECT_GT(r.simulated_us, 0) << r.reference.label;
    EXPECT_LT(std::abs(r.error_pct), 25) << r.reference.label;
  }
  EXPECT_EQ(held_out, 16);
}

TEST(TpPublishedSuite, EveryEntryIsComparedOrListedWithItsReason) {
  const auto result = compare_published_tp(repo_dir() / "validation" / "data" / "published_multi_gpu.json",
                                           config_dir() / "models", system_preset("dgx-h100"), system_preset("hgx-h200"),
                                           models::default_kernel_models());
  EXPECT_EQ(result.rows.size() + result.not_simulated.size(), 21u);
  ASSERT_EQ(result.not_simulated.size(), 2u);
  for (const auto& n : result.not_simulated) EXPECT_NE(n.find("A100"), std::string::npos) << n;
  for (const auto& r : result.rows) {
    EXPECT_TRUE(r.reference.held_out);
    EXPECT_GT(r.simulated_us, 0) << r.reference.label;
  }
  // The H200 entries run on hgx-h200.
  int h200 = 0;
  for (const auto& r : result.rows) h200 += r.reference.label.find("on hgx-h200") != std::string::npos ? 1 : 0;
  EXPECT_EQ(h200, 4);
}

}  // namespace
}  // namespace gpusim::validation
