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

TEST(GroupedGemmWhatIf, PrefillTilesDoNotTakeTheDecodeStream) {
  // 100 rows an expert (two 64-row tiles each): the second tile re-reads the expert's weights
  // from L2, so the kernel's pace is not the decode stream's and the activation rate is moot.
  const hw::HardwareSpec base = h200();
  const auto no_cap = h200({{"dram.activation_rate", "0Hz"}});
  const double prefill = grouped_us(base, routed(64, 100));
  EXPECT_DOUBLE_EQ(grouped_us(no_cap, routed(64, 100)), prefill);
  EXPECT_LT(grouped_us(no_cap, routed(64, 1)), 0.9 * grouped_us(base, routed(64, 1)));
}

}  // namespace
}  // namespace gpusim::models
