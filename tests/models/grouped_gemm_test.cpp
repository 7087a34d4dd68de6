// torch._grouped_mm's Pingpong kernel at decode (one tile of rows a group): its weight streams
// follow the pace validation/data/grouped_mm_h200.json measured, through the mechanisms (DRAM
// latency alone, the row activation rate at full load), so what-ifs move them as the chip would.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/hardware_loader.h"
#include "models/families.h"
#include "tests/support/temp_files.h"

namespace gpusim::models {
namespace {

hw::HardwareSpec h200(std::vector<hw::HardwareOverride> overrides = {}) {
  return hw::load_hardware("h200", hw::PresetCatalog(gpusim::testing::config_dir() / "hw"),
                           overrides);
}

// Qwen3-MoE's gate_up experts (N 1536, K 2048, 128 of them): `hit` experts with `rows` rows each.
std::vector<std::int64_t> routed(std::int64_t hit, std::int64_t rows) {
  std::vector<std::int64_t> out(128, 0);
  for (std::int64_t j = 0; j < hit; ++j) out[static_cast<std::size_t>(j * 128 / hit)] = rows;
  return out;
}

// The grouped kernel's duration (the launch after the prepare kernel), alone on the chip.
double grouped_us(const hw::HardwareSpec& hw, const std::vector<std::int64_t>& rows) {
  const auto launches =
      lower_grouped_gemm(rows, 1536, 2048, hw::DType::kBf16, {"x", 1}, {"w", 1}, {"y", 1}, hw);
  const auto run =
      hw::run_engine(hw, hw::LaunchMode::kGraph, {hw::KernelNode{launches.at(1), "op", 0, {}, {}}});
  return run.kernels.at(0).duration().us();
}

TEST(GroupedGemm, DecodeStreamsRunAtTheMeasuredPace) {
  // One expert (12 tiles, one CTA each) streams at a CTA's own pace: 12.8 us measured on the
  // H200; 64 experts (768 tiles) at the chip's: 149 us (grouped_mm_h200.json.gz).
  EXPECT_NEAR(grouped_us(h200(), routed(1, 1)), 12.8, 0.15 * 12.8);
  EXPECT_NEAR(grouped_us(h200(), routed(64, 1)), 148.9, 0.15 * 148.9);
}

TEST(GroupedGemmWhatIf, FewExpertsFollowTheLatencyManyTheActivationRate) {
  const hw::HardwareSpec base = h200();
  const auto half_latency = h200({{"dram.latency", "168ns"}});
  const auto double_bandwidth = h200({{"dram.bandwidth", "9.6TB/s"}});
  const auto double_activations =
      h200({{"dram.activation_rate", std::to_string(2 * base.dram.activation_rate / 1e9) + "GHz"}});
  // One expert: a chain of stages each waiting DRAM's latency; bandwidth and activations idle.
  const double one = grouped_us(base, routed(1, 1));
  EXPECT_LT(grouped_us(half_latency, routed(1, 1)), 0.75 * one);
  EXPECT_GT(grouped_us(double_bandwidth, routed(1, 1)), 0.9 * one);  // only its queueing shrinks
  // 64 experts: every CTA streams 128-byte runs of its slab's rows; the activations bind.
  const double many = grouped_us(base, routed(64, 1));
  EXPECT_NEAR(grouped_us(double_bandwidth, routed(64, 1)), many, 0.05 * many);
  EXPECT_LT(grouped_us(double_activations, routed(64, 1)), 0.75 * many);
}

TEST(GroupedGemm, FurtherRowTilesReadTheWeightsFromL2) {
  // 65-128 rows an expert (two 64-row tiles each) take no longer than 64 on the H200: Qwen3-MoE's
  // gate_up over all 128 experts in 257-262 us against 262-267 (grouped_mm4_h200.json.gz). The
  // second tile reads its expert's weights from L2; only the first streams them from DRAM.
  const hw::HardwareSpec base = h200();
  const double one = grouped_us(base, routed(128, 64)), two = grouped_us(base, routed(128, 128));
  EXPECT_GT(two, one);
  EXPECT_LT(two, 1.2 * one);
  // Both streams' pace is the weights' row activations: without that cap both run faster.
  const auto no_cap = h200({{"dram.activation_rate", "0Hz"}});
  EXPECT_LT(grouped_us(no_cap, routed(128, 64)), 0.9 * one);
  EXPECT_LT(grouped_us(no_cap, routed(128, 128)), 0.9 * two);
}

}  // namespace
}  // namespace gpusim::models
