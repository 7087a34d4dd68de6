// The kernel outcome cache: its key holds every timing input (a launch differing in any one is a
// miss), it serves one chip's timing parameters only, and the engine uses it for kernels that
// run alone and for no others.
#include "hw/kernel_outcome_cache.h"

#include <gtest/gtest.h>

#include <functional>

#include "hw/gpu_engine.h"
#include "hw/hardware_loader.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

HardwareSpec h100(std::vector<HardwareOverride> overrides = {}) {
  return load_hardware("h100", PresetCatalog(gpusim::testing::config_dir() / "hw"), overrides);
}

Launch launch() {
  Launch l;
  l.name = "k";
  l.family = "test";
  l.grid = {300, 2, 1};
  l.block = {128, 1, 1};
  l.regs_per_thread = 40;
  l.smem_per_cta = 4096;
  CtaWork w;
  w.tensor_flops = 1e6;
  w.fp32_flops = 2e5;
  w.fp32_efficiency = 0.8;
  w.sfu_ops = 1e3;
  w.l2_bytes = 3e5;
  w.dram_read_bytes = 2e5;
  w.dram_write_bytes = 5e4;
  w.max_inflight_bytes = 8192;
  w.pipe_overlap = 0.5;
  w.critical_path = sim::Time::from_ps(700000);
  w.fixed = sim::Time::from_ps(900000);
  l.ctas = {CtaClass{500, w}, CtaClass{100, w}};
  l.reads = {{"a", 1 << 20}};
  l.writes = {{"b", 1 << 19}};
  return l;
}

TEST(KernelOutcomeCache, EveryTimingFieldIsInTheKey) {
  KernelOutcomeCache cache(h100());
  const SoloOutcome outcome{sim::Time::from_ps(123456), 7.5, 1e6, 2e5, 42};
  const L2Charge charge{0.25, 0.125, 0.5};
  cache.insert(launch(), charge, outcome);
  ASSERT_NE(cache.find(launch(), charge), nullptr);
  EXPECT_EQ(cache.find(launch(), charge)->duration, outcome.duration);
  EXPECT_EQ(cache.find(launch(), charge)->events, 42u);
  EXPECT_EQ(cache.find(launch(), L2Charge{0.25 + 1e-16, 0.125, 0.5}), nullptr) << "the L2 miss share, bit for bit";
  EXPECT_EQ(cache.find(launch(), L2Charge{0.25, 0.125 + 1e-16, 0.5}), nullptr) << "the evictions, bit for bit";
  EXPECT_EQ(cache.find(launch(), L2Charge{0.25, 0.125, 0.5 + 1e-16}), nullptr) << "the stores' cost, bit for bit";

  const std::vector<std::pair<std::string, std::function<void(Launch&)>>> changes = {
      {"grid.x", [](Launch& l) { l.grid.x = 301; l.ctas[0].count = 502; }},
      {"grid.y", [](Launch& l) { l.grid = {200, 3, 1}; }},
      {"grid.z", [](Launch& l) { l.grid = {300, 1, 2}; }},
      {"block.x", [](Launch& l) { l.block.x = 256; }},
      {"block.y", [](Launch& l) { l.block = {64, 2, 1}; }},
      {"block.z", [](Launch& l) { l.block = {64, 1, 2}; }},
      {"regs", [](Launch& l) { l.regs_per_thread = 41; }},
      {"smem", [](Launch& l) { l.smem_per_cta = 4097; }},
      {"class split", [](Launch& l) { l.ctas[0].count = 499; l.ctas[1].count = 101; }},
      {"tensor_flops", [](Launch& l) { l.ctas[1].work.tensor_flops *= 1.0000001; }},
      {"tensor_dtype", [](Launch& l) { l.ctas[0].work.tensor_dtype = DType::kFp16; }},
      {"fp32_flops", [](Launch& l) { l.ctas[0].work.fp32_flops += 1; }},
      {"fp32_efficiency", [](Launch& l) { l.ctas[0].work.fp32_efficiency = 0.81; }},
      {"sfu_ops", [](Launch& l) { l.ctas[1].work.sfu_ops += 1; }},
      {"l2_bytes", [](Launch& l) { l.ctas[0].work.l2_bytes += 1; }},
      {"dram_read_bytes", [](Launch& l) { l.ctas[0].work.dram_read_bytes += 1; }},
      {"dram_write_bytes", [](Launch& l) { l.ctas[1].work.dram_write_bytes += 1; }},
      {"max_inflight_bytes", [](Launch& l) { l.ctas[0].work.max_inflight_bytes = 8193; }},
      {"bulk_copies", [](Launch& l) { l.ctas[1].work.bulk_copies = true; }},
      {"dram_run_bytes", [](Launch& l) { l.ctas[0].work.dram_run_bytes = 128; }},
      {"pipe_overlap", [](Launch& l) { l.ctas[0].work.pipe_overlap = 0.6; }},
      {"critical_path", [](Launch& l) { l.ctas[1].work.critical_path = sim::Time::from_ps(700001); }},
      {"issue_path", [](Launch& l) { l.ctas[0].work.issue_path = sim::Time::from_ps(1); }},
      {"fixed", [](Launch& l) { l.ctas[0].work.fixed = sim::Time::from_ps(900001); }},
      {"another class", [](Launch& l) { l.ctas[1].count = 99; l.ctas.push_back(CtaClass{1, l.ctas[0].work}); }},
  };
  for (const auto& [what, change] : changes) {
    Launch l = launch();
    change(l);
    EXPECT_EQ(cache.find(l, charge), nullptr) << what;
  }
  // What the engine does not read while the kernel runs (names; tensors, which reach it only
  // through the L2 charge) is not in the key.
  Launch renamed = launch();
  renamed.name = "other";
  renamed.family = "other";
  renamed.reads = {{"c", 7}};
  renamed.writes.clear();
  EXPECT_NE(cache.find(renamed, charge), nullptr);
}

TEST(KernelOutcomeCache, ServesOneChipsTimingParameters) {
  const HardwareSpec base = h100();
  const KernelOutcomeCache cache(base);
  EXPECT_TRUE(cache.serves(base));
  HardwareSpec renamed = base;
  renamed.name = "my-h100";
  renamed.description = "same chip";
  renamed.origins.clear();
  EXPECT_TRUE(cache.serves(renamed));
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"sm_count", "131"}, {"l2.size", "49MiB"}, {"dram.bandwidth", "3.3TB/s"},
           {"clocks.sustained_tensor", "1.4GHz"}, {"sm.max_inflight_bytes", "9KiB"},
           {"launch.graph_gap", "1.5us"}, {"throughput.tensor_bf16", "1000flop/clk"}, {"l2.hit_latency", "300ns"},
           {"dram.activation_rate", "20GHz"}}) {
    EXPECT_FALSE(cache.serves(h100({{key, value}}))) << key;
  }
  KernelOutcomeCache mine(base);
  EXPECT_THROW(run_engine(h100({{"sm_count", "100"}}), LaunchMode::kGraph, {}, nullptr, &mine), std::logic_error);
}

KernelNode node(Launch l, int stream, std::vector<int> deps = {}) {
  return KernelNode{std::move(l), "op", stream, std::move(deps), std::nullopt};
}

void expect_same(const EngineResult& a, const EngineResult& b) {
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.events, b.events);
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].start, b.kernels[i].start) << i;
    EXPECT_EQ(a.kernels[i].end, b.kernels[i].end) << i;
    EXPECT_EQ(a.kernels[i].achieved_occupancy, b.kernels[i].achieved_occupancy) << i;
    EXPECT_EQ(a.kernels[i].achieved_occupancy_active, b.kernels[i].achieved_occupancy_active) << i;
    EXPECT_EQ(a.kernels[i].dram_read_bytes, b.kernels[i].dram_read_bytes) << i;
  }
}

// Kernels on two streams overlap: those are not alone and must be simulated together; the
// chain after the join runs alone and is replayed the second time.
TEST(KernelOutcomeCache, OnlyKernelsThatRunAloneAreRecordedAndReplayed) {
  // A write-through L2 (no dirty lines to carry from kernel to kernel), so the tails' charge repeats.
  const HardwareSpec hw = h100({{"l2.max_dirty_share", "0"}});
  Launch a = launch(), b = launch();
  a.reads = {{"x", 1 << 20}};
  a.writes = {{"y", 1 << 20}};
  b.reads = {{"x", 1 << 20}};
  b.writes = {{"z", 1 << 20}};
  Launch tail = launch();
  tail.reads = {{"w", 1 << 20, true}};  // streamed evict-first: always a miss, so its key repeats
  tail.writes = {{"v", 1 << 10}};
  const std::vector<KernelNode> nodes = {node(a, 0), node(b, 1), node(tail, 0, {1}), node(tail, 0), node(tail, 0)};
  for (const LaunchMode mode : {LaunchMode::kGraph, LaunchMode::kEager}) {
    const EngineResult plain = run_engine(hw, mode, nodes);
    KernelOutcomeCache cache(hw);
    const EngineResult cached = run_engine(hw, mode, nodes, nullptr, &cache);
    expect_same(cached, plain);
    // The concurrent pair is not recorded; the three tails run alone: one outcome, replayed twice.
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.hits(), 2u);
    // Overlap is real: the two streams' first kernels share the chip.
    EXPECT_LT(plain.kernels[1].start, plain.kernels[0].end);
    expect_same(run_engine(hw, mode, nodes, nullptr, &cache), plain);
  }
}

}  // namespace
}  // namespace gpusim::hw
