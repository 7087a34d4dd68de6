#include "hw/occupancy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "hw/hardware_loader.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::repo_dir;

SmSpec sm_of(const std::string& preset) {
  return load_hardware(preset, PresetCatalog(config_dir() / "hw")).sm;
}

bool binds(const Occupancy& o, OccupancyLimiter l) {
  return std::find(o.binding.begin(), o.binding.end(), l) != o.binding.end();
}

// The examples the CUDA occupancy rules give for H100 (issue 2).
TEST(Occupancy, H100_384Threads168Registers) {
  const Occupancy o = compute_occupancy(sm_of("h100"), {384, 168, 0});
  EXPECT_EQ(o.ctas_per_sm, 1);
  EXPECT_EQ(o.warps_per_sm, 12);
  EXPECT_DOUBLE_EQ(o.theoretical, 0.1875);
  EXPECT_TRUE(binds(o, OccupancyLimiter::kRegisters));
}

TEST(Occupancy, H100_128Threads34RegistersIsRegisterBound) {
  const Occupancy o = compute_occupancy(sm_of("h100"), {128, 34, 0});
  EXPECT_EQ(o.registers_per_warp, 1280);  // 34 x 32 = 1088, rounded up to 256s
  EXPECT_EQ(o.ctas_per_sm, 12);
  EXPECT_EQ(o.warps_per_sm, 48);
  EXPECT_DOUBLE_EQ(o.theoretical, 0.75);
  EXPECT_EQ(o.binding, std::vector{OccupancyLimiter::kRegisters});
  EXPECT_EQ(o.limit_warps, 16);
}

TEST(Occupancy, H100_128Threads183Registers) {
  const Occupancy o = compute_occupancy(sm_of("h100"), {128, 183, 0});
  EXPECT_EQ(o.ctas_per_sm, 2);
  EXPECT_DOUBLE_EQ(o.theoretical, 0.125);
}

TEST(Occupancy, SharedMemoryCountsReservationAndGranularity) {
  // 100 KB + 1 KB reserved, rounded to 128 B: two fit in 228 KB, three do not.
  const Occupancy o = compute_occupancy(sm_of("h100"), {128, 32, 100 * 1024});
  EXPECT_EQ(o.shared_memory_per_cta, 101 * 1024);
  EXPECT_EQ(o.ctas_per_sm, 2);
  EXPECT_EQ(o.binding, std::vector{OccupancyLimiter::kSharedMemory});
  // 1 byte still takes a whole allocation unit on top of the reservation.
  EXPECT_EQ(compute_occupancy(sm_of("h100"), {128, 32, 1}).shared_memory_per_cta, 1024 + 128);
}

TEST(Occupancy, SmallBlocksRunOutOfCtaSlots) {
  const Occupancy o = compute_occupancy(sm_of("h100"), {32, 16, 0});
  EXPECT_EQ(o.ctas_per_sm, 32);
  EXPECT_EQ(o.binding, std::vector{OccupancyLimiter::kCtaSlots});
  EXPECT_DOUBLE_EQ(o.theoretical, 0.5);
  // The RTX 5090 has 24 CTA slots and 48 warps.
  const Occupancy g = compute_occupancy(sm_of("rtx5090"), {32, 16, 0});
  EXPECT_EQ(g.ctas_per_sm, 24);
  EXPECT_DOUBLE_EQ(g.theoretical, 0.5);
}

TEST(Occupancy, WarpBoundFullOccupancy) {
  const Occupancy o = compute_occupancy(sm_of("h100"), {256, 32, 0});
  EXPECT_EQ(o.ctas_per_sm, 8);
  EXPECT_DOUBLE_EQ(o.theoretical, 1.0);
  EXPECT_TRUE(binds(o, OccupancyLimiter::kWarps));
  EXPECT_TRUE(binds(o, OccupancyLimiter::kRegisters));  // 32 regs also allow exactly 8
}

TEST(Occupancy, BlocksThatCannotRunSayWhy) {
  const SmSpec sm = sm_of("h100");
  EXPECT_NE(compute_occupancy(sm, {2048, 32, 0}).does_not_fit, "");       // too many threads
  EXPECT_NE(compute_occupancy(sm, {1024, 255, 0}).does_not_fit, "");      // too many registers
  EXPECT_NE(compute_occupancy(sm, {128, 256, 0}).does_not_fit, "");       // over 255 per thread
  EXPECT_NE(compute_occupancy(sm, {128, 32, 228 * 1024}).does_not_fit, "");  // over 227 KB
  EXPECT_EQ(compute_occupancy(sm, {128, 32, 227 * 1024}).ctas_per_sm, 1);
  EXPECT_EQ(compute_occupancy(sm, {1024, 255, 0}).ctas_per_sm, 0);
}

// Every row of NVIDIA's own calculator (cuda_occupancy.h) that validation/measure/ ran over
// a grid of block shapes, with the device's real properties (H100, H200) or datasheet ones
// (RTX 5090, A100): see validation/data/README.md.
struct ReferenceRow {
  int threads, regs;
  std::int64_t smem;
  int ctas, warps;
};

std::vector<ReferenceRow> read_reference(const std::filesystem::path& file) {
  std::vector<ReferenceRow> rows;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("threads", 0) == 0) continue;
    std::istringstream fields(line);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(fields, cell, ',')) cells.push_back(cell);
    if (cells.size() < 5) continue;
    rows.push_back({std::stoi(cells[0]), std::stoi(cells[1]), std::stoll(cells[2]),
                    std::stoi(cells[3]), std::stoi(cells[4])});
  }
  return rows;
}

class OccupancyReference : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(OccupancyReference, MatchesNvidiaCalculatorOnEveryRow) {
  const auto& [preset, csv] = GetParam();
  const auto file = repo_dir() / "validation" / "data" / csv;
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  const auto rows = read_reference(file);
  ASSERT_GT(rows.size(), 100u);
  const SmSpec sm = sm_of(preset);
  int mismatches = 0;
  for (const auto& r : rows) {
    const Occupancy o = compute_occupancy(sm, {r.threads, r.regs, r.smem});
    if (o.ctas_per_sm != r.ctas || (r.ctas > 0 && o.warps_per_sm != r.warps)) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << preset << " threads=" << r.threads << " regs=" << r.regs
                      << " smem=" << r.smem << ": gpusim " << o.ctas_per_sm << " CTAs, NVIDIA "
                      << r.ctas;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << rows.size() << " rows";
}

INSTANTIATE_TEST_SUITE_P(Presets, OccupancyReference,
                         ::testing::Values(std::pair{"h100", "occupancy_reference_h100.csv"},
                                           std::pair{"h200", "occupancy_reference_h200.csv"},
                                           std::pair{"rtx5090", "occupancy_reference_rtx5090.csv"},
                                           std::pair{"a100", "occupancy_reference_a100.csv"}),
                         [](const auto& info) { return info.param.first; });

}  // namespace
}  // namespace gpusim::hw
