// Per-kernel metrics and the bound classification, on synthetic launches whose answers follow
// from the hardware parameters; and the timeline observer, which must not change any result.
#include "hw/kernel_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "hw/hardware_loader.h"
#include "hw/timeline_recorder.h"
#include "sim/error.h"
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

// On a clean L2 (no dirty lines to write back), so a kernel's DRAM bytes are its own.
KernelMetrics run_one(const HardwareSpec& hw, const Launch& l) {
  const auto r = run_engine(hw, LaunchMode::kGraph, {KernelNode{l, "op", 0, {}, std::nullopt}}, nullptr, nullptr,
                            L2DirtyLines::Start::kClean);
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

// Seed 003's own rule: no latency class, DRAM against SM throughput at a 2x ratio.
TEST(KernelMetrics, Seed003RuleAsWritten) {
  KernelMetrics m;
  m.ridge_point = 100;
  auto with = [&](double ai, double sm, double dram) {
    KernelMetrics x = m;
    x.arithmetic_intensity = ai;
    x.sm_throughput_pct = sm;
    x.dram_throughput_pct = dram;
    return classify_seed003(x);
  };
  // The seed's class means (SM / DRAM %) land in their own classes.
  EXPECT_EQ(with(10, 9.38, 34.23), BoundClass::kMemory);
  EXPECT_EQ(with(500, 36.21, 9.89), BoundClass::kCompute);
  EXPECT_EQ(with(10, 12.25, 12.62), BoundClass::kBalanced);
  EXPECT_EQ(with(500, 12.25, 12.62), BoundClass::kBalanced);
  // No latency class: gpusim's rule calls a short, narrow, low kernel latency-bound; this one
  // classifies by the ratio alone.
  KernelMetrics narrow = m;
  narrow.duration_us = 1;
  narrow.ctas = 2;
  narrow.arithmetic_intensity = 10;
  narrow.sm_throughput_pct = 1;
  narrow.dram_throughput_pct = 3;
  EXPECT_EQ(classify_seed003(narrow), BoundClass::kMemory);
  EXPECT_EQ(classify(narrow, 1.35, 132), BoundClass::kLatency);
  // Intensity and utilization must agree.
  EXPECT_EQ(with(500, 5, 60), BoundClass::kBalanced);
  EXPECT_EQ(with(10, 60, 5), BoundClass::kBalanced);
  // The ridge point itself belongs to the compute side.
  EXPECT_EQ(with(100, 60, 5), BoundClass::kCompute);
  EXPECT_EQ(with(99.999, 5, 60), BoundClass::kMemory);
  // Idle on both: neither side is meaningfully higher.
  EXPECT_EQ(with(10, 0, 0), BoundClass::kBalanced);
  EXPECT_EQ(with(10, 0, 0.5), BoundClass::kMemory);
}

TEST(KernelMetrics, Seed003RatioBoundary) {
  EXPECT_DOUBLE_EQ(kSeed003Ratio, 2.0);
  KernelMetrics m;
  m.ridge_point = 100;
  m.sm_throughput_pct = 15;
  m.arithmetic_intensity = 10;
  m.dram_throughput_pct = 30;  // exactly 2x: meaningfully higher
  EXPECT_EQ(classify_seed003(m), BoundClass::kMemory);
  m.dram_throughput_pct = 29.9;
  EXPECT_EQ(classify_seed003(m), BoundClass::kBalanced);
  // gpusim's own 1.25x ratio calls 29.9 vs 15 memory-bound.
  EXPECT_EQ(classify(m, 1.35, 1), BoundClass::kMemory);
  m.arithmetic_intensity = 1000;
  m.dram_throughput_pct = 15;
  m.sm_throughput_pct = 30;
  EXPECT_EQ(classify_seed003(m), BoundClass::kCompute);
  m.sm_throughput_pct = 29.9;
  EXPECT_EQ(classify_seed003(m), BoundClass::kBalanced);
}

TEST(KernelMetrics, Seed003RuleRejectsBadMetrics) {
  KernelMetrics m;
  m.ridge_point = 100;
  m.arithmetic_intensity = 10;
  m.sm_throughput_pct = 1;
  m.dram_throughput_pct = 30;
  EXPECT_NO_THROW(classify_seed003(m));
  KernelMetrics bad = m;
  bad.ridge_point = 0;
  EXPECT_THROW(classify_seed003(bad), ModelError);
  bad = m;
  bad.dram_throughput_pct = -1;
  EXPECT_THROW(classify_seed003(bad), ModelError);
  bad = m;
  bad.sm_throughput_pct = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(classify_seed003(bad), ModelError);
  bad = m;
  bad.arithmetic_intensity = std::numeric_limits<double>::infinity();
  try {
    classify_seed003(bad);
    ADD_FAILURE() << "no error for an infinite intensity";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("arithmetic_intensity"), std::string::npos) << e.what();
  }
}

// Memory throughput: the busier of DRAM and L2, each against its own peak.
TEST(KernelMetrics, MemoryThroughputIsTheBusierOfDramAndL2) {
  const HardwareSpec hw = h100();
  // Streaming from DRAM: every L2 byte is a DRAM byte, and DRAM's peak is the lower one.
  const auto stream = run_one(hw, launch(8 * hw.sm_count, 1e3, 1 << 20));
  EXPECT_NEAR(stream.memory_throughput_pct, stream.dram_throughput_pct, 1e-9);
  EXPECT_GT(stream.memory_throughput_pct, 60);
  // The same bytes re-read from L2 (each CTA reads the kernel's 1 MiB input again): DRAM moves
  // the input once, L2 serves the rest against its own bandwidth.
  Launch reuse = launch(8 * hw.sm_count, 1e3, 1 << 20);
  reuse.ctas[0].work.dram_read_bytes = static_cast<double>(1 << 20) / reuse.cta_count();
  const auto hits = run_one(hw, reuse);
  const double l2_pct = 100 * hits.l2_bytes / (hits.duration_us * 1e-6) / hw.l2.bandwidth;
  EXPECT_LT(hits.dram_throughput_pct, 5);
  EXPECT_GT(l2_pct, 20);
  EXPECT_NEAR(hits.memory_throughput_pct, l2_pct, 1e-9 * l2_pct);
}

// SM throughput counts instruction issue: a copy with no math still issues its loads and
// stores, at sub_partitions warp instructions per SM per cycle; TMA bulk copies issue none.
TEST(KernelMetrics, SmThroughputCountsInstructionIssue) {
  const HardwareSpec hw = h100();
  Launch copy = launch(8 * hw.sm_count, 0, 1 << 20);
  const auto m = run_one(hw, copy);
  const double slots_per_s =
      hw.sm.sub_partitions * hw.sm.warp_size * hw.sm_count * m.clock_mhz * 1e6;
  const double per_byte =
      m.sm_throughput_pct / 100 * slots_per_s * (m.duration_us * 1e-6) / m.l2_bytes;
  EXPECT_GT(m.sm_throughput_pct, 1);
  EXPECT_NEAR(per_byte, 2.5, 1e-6);  // kIssuePerL2Byte
  copy.ctas[0].work.bulk_copies = true;
  const auto tma = run_one(hw, copy);
  EXPECT_EQ(tma.sm_throughput_pct, 0);
  // FP32 FMAs issue one instruction per 2 FLOPs: at the FP32 pipe's own rate, issue adds nothing.
  Launch math = launch(8 * hw.sm_count, 0, 1 << 10);
  math.ctas[0].work.fp32_flops = 1e8;
  math.ctas[0].work.bulk_copies = true;
  const auto fp32 = run_one(hw, math);
  const double fp32_pct = 100 * 8 * hw.sm_count * 1e8 /
                          (hw.throughput.fp32 * hw.sm_count * fp32.clock_mhz * 1e6 *
                           fp32.duration_us * 1e-6);
  EXPECT_NEAR(fp32.sm_throughput_pct, fp32_pct, 1e-9 * fp32_pct);
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
