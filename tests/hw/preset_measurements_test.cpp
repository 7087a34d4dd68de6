// The H100 and H200 presets cite validation/data/hw_<gpu>.json for their measured values;
// this keeps the two in agreement if either changes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hw/hardware_loader.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::repo_dir;

nlohmann::json summary(const std::string& gpu) {
  std::ifstream in(repo_dir() / "validation" / "data" / ("hw_" + gpu + ".json"));
  return nlohmann::json::parse(in)["summary"];
}

void expect_within(double preset, double measured, double tolerance, const std::string& what) {
  EXPECT_LE(std::fabs(preset - measured), tolerance * measured)
      << what << ": preset " << preset << " vs measured " << measured;
}

class MeasuredPreset : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(MeasuredPreset, AgreesWithItsMeasurementFile) {
  const auto& [preset, gpu] = GetParam();
  const HardwareSpec s = load_hardware(preset, PresetCatalog(config_dir() / "hw"));
  const nlohmann::json m = summary(gpu);
  // Device properties: exact.
  EXPECT_EQ(s.sm_count, m["sm_count"].get<int>());
  EXPECT_EQ(s.l2.size, m["l2_bytes"].get<std::int64_t>());
  EXPECT_EQ(s.sm.shared_memory, m["smem_per_sm_bytes"].get<std::int64_t>());
  EXPECT_EQ(s.sm.shared_memory_per_cta + s.sm.shared_memory_reserved_per_cta,
            m["smem_per_block_optin_bytes"].get<std::int64_t>() +
                m["reserved_smem_per_block_bytes"].get<std::int64_t>());
  EXPECT_EQ(s.sm.registers, m["regs_per_sm"].get<int>());
  EXPECT_EQ(s.sm.max_threads, m["max_threads_per_sm"].get<int>());
  EXPECT_EQ(s.sm.max_ctas, m["max_blocks_per_sm"].get<int>());
  EXPECT_EQ(s.dram.capacity, m["total_global_mem_bytes"].get<std::int64_t>());
  EXPECT_DOUBLE_EQ(s.clocks.boost_hz, m["nvml_max_sm_MHz"].get<double>() * 1e6);
  // Timed figures: within the rounding the preset writes them with.
  // The tensor clock is calibrated on profiled GEMMs; the 3 s power-capped loop bounds it below.
  EXPECT_GE(s.clocks.sustained_tensor_hz, m["clock_sustained_bf16_matmul_MHz"].get<double>() * 1e6);
  expect_within(s.clocks.sustained_other_hz, m["clock_sustained_elementwise_add_MHz"].get<double>() * 1e6, 0.01, "sustained other clock");
  expect_within(s.dram.achievable_bandwidth(), m["torch_copy_2GiB_read_plus_write_GBps"].get<double>() * 1e9, 0.01, "copy bandwidth");
  expect_within(s.dram.latency.ns(), m["lat_dram_1GiB_4KiB_stride_ns"].get<double>(), 0.02, "DRAM latency");
  expect_within(s.l2.hit_latency.ns(), m["lat_l2_hit_4MiB_ns"].get<double>(), 0.02, "L2 hit latency");
  expect_within(s.l2.bandwidth, m["l2_read_bw_32MiB_GBps"].get<double>() * 1e9, 0.02, "L2 bandwidth");
  expect_within(s.launch.eager_gap.us(), m["launch_eager_wall_us_per_op"].get<double>(), 0.02, "eager launch");
  expect_within(s.launch.graph_gap.us(), m["launch_graph_gap_us"].get<double>(), 0.1, "graph gap");
}

INSTANTIATE_TEST_SUITE_P(Gpus, MeasuredPreset,
                         ::testing::Values(std::pair{"h100", "h100"}, std::pair{"h200", "h200"}),
                         [](const auto& info) { return info.param.second; });

}  // namespace
}  // namespace gpusim::hw
