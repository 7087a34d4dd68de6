// Per-kernel metrics and the bound classification, on synthetic launches whose answers follow
// from the hardware parameters; and the timeline observer, which must not change any result.
#include "hw/kernel_metrics.h"

#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "hw/timeline_recorder.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

HardwareSpec h100() { return load_hardware("h100", PresetCatalog(gpusim::testing::config_dir() / "hw"), {}); }

// `ctas` CTAs of 256 threads, each doing `tensor_flops` bf16 tensor FLOPs and reading
// `dram_bytes` from DRAM.
Launch launch(std::int64_t ctas, double tensor_flops, double dram_bytes) {
  Launch l;
  l.name = "k";
  l.family = "test";
  l.grid = {ctas, 1, 1};
  l.block = {256, 1, 1};
  l.regs_per_thread = 64;
  CtaWork w;
  w.tensor_flops = tensor_flops;
  w.l2_bytes = dram_bytes;
  w.dram_read_bytes = dram_bytes;
  l.ctas = {CtaClass{ctas, w}};
  return l;
}

KernelMetrics run_one(const HardwareSpec& hw, const Launch& l) {
  const auto r = run_engine(hw, LaunchMode::kGraph, {KernelNode{l, "op", 0, {}, std::nullopt}});
  return kernel_metrics(hw, l, r.kernels[0]);
}

TEST(KernelMetrics, StreamingKernelIsMemoryBound) {
  const HardwareSpec hw = h100();
  const auto m = run_one(hw, launch(8 * hw.sm_count, 1e3, 1 << 20));  // 1 KFLOP per MiB
  EXPECT_EQ(m.bound, BoundClass::kMemory);
  EXPECT_GT(m.dram_throughput_pct, 60);
  EXPECT_NEAR(m.arithmetic_intensity, 1e3 / (1 << 20), 1e-9);
  // The ridge point: the bf16 tensor roof at the kernel's clock over achievable bandwidth.
  EXPECT_NEAR(m.ridge_point,
              hw.throughput.tensor_bf16 * hw.sm_count * m.clock_mhz * 1e6 / hw.dram.achievable_bandwidth(), 1e-6);
  EXPECT_NEAR(m.dram_bytes_per_s, m.dram_bytes / (m.duration_us * 1e-6), 1.0);
  EXPECT_NEAR(m.dram_throughput_pct, 100 * m.dram_bytes_per_s / hw.dram.bandwidth, 1e-9);
}

TEST(KernelMetrics, MathHeavyKernelIsComputeBound) {
  const HardwareSpec hw = h100();
  const auto m = run_one(hw, launch(8 * hw.sm_count, 1e9, 1 << 16));
  EXPECT_EQ(m.bound, BoundClass::kCompute);
  EXPECT_GT(m.sm_throughput_pct, 80);
  EXPECT_LE(m.sm_throughput_pct, 100.0 + 1e-9);
  EXPECT_GE(m.arithmetic_intensity, m.ridge_point);
  EXPECT_NEAR(m.achieved_warps_per_sm, m.achieved_occupancy * hw.sm.max_warps, 1e-12);
}

TEST(KernelMetrics, TinyKernelIsLatencyBound) {
  const HardwareSpec hw = h100();
  const auto m = run_one(hw, launch(4, 1e3, 4096));
  EXPECT_EQ(m.bound, BoundClass::kLatency);
  EXPECT_EQ(m.ctas, 4);
  EXPECT_LT(m.achieved_occupancy, 0.01);
}

TEST(KernelMetrics, ClassificationRule) {
  KernelMetrics m;
  m.ridge_point = 100;
  m.duration_us = 50;
  m.ctas = 1000;
  auto with = [&](double ai, double sm, double dram) {
    KernelMetrics x = m;
    x.arithmetic_intensity = ai;
    x.sm_throughput_pct = sm;
    x.dram_throughput_pct = dram;
    return classify(x, 1.35, 132);
  };
  EXPECT_EQ(with(10, 10, 60), BoundClass::kMemory);
  EXPECT_EQ(with(500, 70, 10), BoundClass::kCompute);
  EXPECT_EQ(with(10, 45, 50), BoundClass::kBalanced);   // not meaningfully higher
  EXPECT_EQ(with(500, 10, 60), BoundClass::kBalanced);  // intensity and utilization disagree
  EXPECT_EQ(with(10, 5, 10), BoundClass::kBalanced);    // low on both, long and wide
  m.duration_us = 2;
  EXPECT_EQ(with(10, 5, 10), BoundClass::kLatency);     // low on both and short
  m.duration_us = 50;
  m.ctas = 8;
  EXPECT_EQ(with(10, 5, 10), BoundClass::kLatency);     // low on both, fewer CTAs than SMs
  EXPECT_EQ(with(10, 10, 60), BoundClass::kMemory);     // narrow but streaming: still memory
}

TEST(TimelineRecorder, RecordsEveryCtaAndChangesNothing) {
  const HardwareSpec hw = h100();
  std::vector<KernelNode> nodes{{launch(3 * hw.sm_count + 5, 1e6, 1 << 18), "a", 0, {}, std::nullopt},
                                {launch(40, 1e3, 1 << 12), "b", 1, {}, std::nullopt},
                                {launch(2 * hw.sm_count, 1e7, 1 << 16), "c", 0, {}, std::nullopt}};
  const auto plain = run_engine(hw, LaunchMode::kGraph, nodes);
  TimelineRecorder recorder(true);
  const auto observed = run_engine(hw, LaunchMode::kGraph, nodes, &recorder);
  const Timeline t = recorder.take();
  ASSERT_EQ(plain.kernels.size(), observed.kernels.size());
  for (std::size_t i = 0; i < plain.kernels.size(); ++i) {
    EXPECT_EQ(plain.kernels[i].start, observed.kernels[i].start);
    EXPECT_EQ(plain.kernels[i].end, observed.kernels[i].end);
  }
  std::vector<std::int64_t> ctas(nodes.size(), 0);
  for (const auto& s : t.ctas) {
    ctas.at(static_cast<std::size_t>(s.kernel)) += s.count;
    const auto& k = observed.kernels[static_cast<std::size_t>(s.kernel)];
    EXPECT_GE(s.start, k.start);
    EXPECT_LE(s.end, k.end);
    EXPECT_LT(s.start, s.end);
    EXPECT_GE(s.sm, 0);
    EXPECT_LT(s.sm, hw.sm_count);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) EXPECT_EQ(ctas[i], nodes[i].launch.cta_count()) << i;
  ASSERT_GT(t.samples.size(), 3u);
  for (std::size_t i = 0; i < t.samples.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(t.samples[i].at, t.samples[i - 1].at);
    }
    EXPECT_LE(t.samples[i].dram_bytes_per_s, hw.dram.achievable_bandwidth() * (1 + 1e-9));
    EXPECT_LE(t.samples[i].resident_warps, static_cast<std::int64_t>(hw.sm_count) * hw.sm.max_warps);
  }
  EXPECT_EQ(t.samples.back().resident_warps, 0);  // the chip ends idle
  // The warp integral over the samples is the kernels' resident warp time.
  double warp_us = 0;
  for (std::size_t i = 0; i + 1 < t.samples.size(); ++i) {
    warp_us += static_cast<double>(t.samples[i].resident_warps) * (t.samples[i + 1].at - t.samples[i].at).us();
  }
  double expected = 0;
  for (const auto& k : observed.kernels) {
    expected += k.achieved_occupancy * hw.sm.max_warps * hw.sm_count * k.duration().us();
  }
  EXPECT_NEAR(warp_us, expected, 1e-6 * expected);
}

TEST(TimelineRecorder, CountersOnlyWhenCtasAreNotAsked) {
  const HardwareSpec hw = h100();
  TimelineRecorder recorder(false);
  run_engine(hw, LaunchMode::kGraph, {{launch(hw.sm_count, 1e6, 1 << 16), "a", 0, {}, std::nullopt}}, &recorder);
  const Timeline t = recorder.take();
  EXPECT_TRUE(t.ctas.empty());
  EXPECT_FALSE(t.samples.empty());
}

}  // namespace
}  // namespace gpusim::hw
