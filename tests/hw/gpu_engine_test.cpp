// The engine's mechanisms, on synthetic launches whose expected times follow from the
// hardware parameters by hand.
#include "hw/gpu_engine.h"

#include <cmath>
#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "sim/error.h"
#include "sim/time_checks.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

HardwareSpec h100(std::vector<HardwareOverride> overrides = {}) {
  return load_hardware("h100", PresetCatalog(gpusim::testing::config_dir() / "hw"), overrides);
}

// `ctas` CTAs of 128 threads; each does `fp32_flops` on the FP32 pipe and moves `dram_bytes`.
Launch kernel(const std::string& name, std::int64_t ctas, double fp32_flops, double dram_bytes = 0,
              int regs = 32) {
  Launch l;
  l.name = name;
  l.family = "test";
  l.grid = {ctas, 1, 1};
  l.block = {128, 1, 1};
  l.regs_per_thread = regs;
  CtaWork w;
  w.fp32_flops = fp32_flops;
  w.l2_bytes = dram_bytes;
  w.dram_read_bytes = dram_bytes;
  l.ctas = {CtaClass{ctas, w}};
  return l;
}

KernelNode node(Launch l, int stream = 0) { return KernelNode{std::move(l), "op", stream, {}, std::nullopt}; }

double us(sim::Time t) { return t.us(); }

TEST(GpuEngine, OneFullWaveVersusOneCtaMore) {
  const HardwareSpec hw = h100();
  // 128 threads x 32 registers: 16 CTAs per SM (warp-limited); a full wave is 16 x 132.
  const std::int64_t wave = 16 * hw.sm_count;
  const double flops = 1e6;  // per CTA
  const auto full = run_engine(hw, LaunchMode::kGraph, {node(kernel("k", wave, flops))});
  const auto plus1 = run_engine(hw, LaunchMode::kGraph, {node(kernel("k", wave + 1, flops))});
  const double cta_us = flops * 16 / (hw.throughput.fp32 * hw.clocks.sustained_other_hz) * 1e6;
  const double overhead = hw.launch.kernel_overhead.us();
  EXPECT_NEAR(us(full.kernels[0].duration()), overhead + cta_us, 1e-3);
  // The extra CTA runs alone on its SM in a second wave, 16 times faster than a shared one.
  EXPECT_NEAR(us(plus1.kernels[0].duration()), overhead + cta_us + cta_us / 16, 1e-3);
  EXPECT_DOUBLE_EQ(full.kernels[0].waves, 1.0);
  EXPECT_GT(plus1.kernels[0].waves, 1.0);
}

TEST(GpuEngine, OccupancyLimitsResidency) {
  const HardwareSpec hw = h100();
  const std::int64_t ctas = 16 * hw.sm_count;
  // Memory-latency bound CTAs (a fixed time each): with 16 resident per SM one wave is enough;
  // with 168 registers per thread only 3 fit, so it takes ceil(16 / 3) = 6 waves.
  auto latency_kernel = [&](int regs) {
    Launch l = kernel("k", ctas, 0, 0, regs);
    l.ctas[0].work.fixed = sim::Time::from_seconds(10e-6);
    return l;
  };
  const auto light = run_engine(hw, LaunchMode::kGraph, {node(latency_kernel(32))});
  const auto heavy = run_engine(hw, LaunchMode::kGraph, {node(latency_kernel(168))});
  EXPECT_EQ(light.kernels[0].ctas_per_sm, 16);
  EXPECT_EQ(heavy.kernels[0].ctas_per_sm, 3);
  const double overhead = hw.launch.kernel_overhead.us();
  EXPECT_NEAR(us(light.kernels[0].duration()), overhead + 10, 1e-3);
  EXPECT_NEAR(us(heavy.kernels[0].duration()), overhead + 6 * 10, 1e-3);
  EXPECT_NEAR(heavy.kernels[0].theoretical_occupancy, 12.0 / 64, 1e-12);
  EXPECT_LE(heavy.kernels[0].achieved_occupancy, heavy.kernels[0].theoretical_occupancy + 1e-9);
}

TEST(GpuEngine, ConcurrentMemoryBoundKernelsShareDram) {
  const HardwareSpec hw = h100();
  // A clean L2: no dirty lines for the streams to write back (those are the next test's).
  const auto clean = L2DirtyLines::Start::kClean;
  const double bytes_per_cta = 1 << 20;
  const std::int64_t ctas = 4 * hw.sm_count;
  const double alone_us = ctas * bytes_per_cta / hw.dram.achievable_bandwidth() * 1e6;
  const auto one = run_engine(hw, LaunchMode::kGraph, {node(kernel("a", ctas, 0, bytes_per_cta))}, nullptr, nullptr, clean);
  // A kernel that keeps DRAM busy a share u of its time drains for 3 DRAM latencies x u.
  const double drain_us = 3 * hw.dram.latency.us();
  EXPECT_NEAR(us(one.kernels[0].duration()), hw.launch.kernel_overhead.us() + alone_us + drain_us, 1e-2);
  // Two such kernels on two streams: each gets half of DRAM while both run.
  const auto two = run_engine(hw, LaunchMode::kGraph,
                              {node(kernel("a", ctas, 0, bytes_per_cta), 0),
                               node(kernel("b", ctas, 0, bytes_per_cta), 1)},
                              nullptr, nullptr, clean);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(us(two.kernels[i].duration()),
                hw.launch.kernel_overhead.us() + 2 * alone_us + drain_us / 2, 1e-2);
  }
  // Less bandwidth, longer kernel: the what-if goes through the shared resource.
  const auto slow = run_engine(h100({{"dram.bandwidth", "1.5TB/s"}}), LaunchMode::kGraph,
                               {node(kernel("a", ctas, 0, bytes_per_cta))}, nullptr, nullptr, clean);
  EXPECT_GT(slow.kernels[0].duration(), one.kernels[0].duration());
}

// The L2 is a write-back cache (hw/l2_dirty_lines.h): after a flush that wrote a buffer, a
// read-only stream writes back the dirty lines its loads evict; on a clean L2 it writes nothing.
TEST(GpuEngine, StreamsWriteBackTheDirtyLinesTheyEvict) {
  const HardwareSpec hw = h100();
  // On every SM, so the stream is bound by DRAM bandwidth, not by its loads in flight.
  const double bytes_per_cta = 1 << 18;
  const std::int64_t ctas = 4 * hw.sm_count;
  const double read = ctas * bytes_per_cta;
  const Launch stream = kernel("read", ctas, 0, bytes_per_cta);
  const auto dirty = run_engine(hw, LaunchMode::kGraph, {node(stream)});
  const auto clean =
      run_engine(hw, LaunchMode::kGraph, {node(stream)}, nullptr, nullptr, L2DirtyLines::Start::kClean);
  const double capacity = static_cast<double>(hw.l2.size);
  const double held = std::round(capacity * hw.l2.max_dirty_share / L2DirtyLines::kGranule) * L2DirtyLines::kGranule;
  EXPECT_NEAR(dirty.kernels[0].dram_write_bytes, held * (1 - std::exp(-read / capacity)), 1.0);
  EXPECT_EQ(clean.kernels[0].dram_write_bytes, 0.0);
  EXPECT_EQ(dirty.kernels[0].dram_read_bytes, clean.kernels[0].dram_read_bytes);
  // The write-backs take DRAM time: about their bytes at the achievable bandwidth.
  const double extra_us = us(dirty.kernels[0].duration()) - us(clean.kernels[0].duration());
  EXPECT_NEAR(extra_us, dirty.kernels[0].dram_write_bytes / hw.dram.achievable_bandwidth() * 1e6, 0.25 * extra_us);
  // Stores: on a clean L2 they stay there (below the limit); at the limit each costs a write. A
  // limit of 0 is a write-through cache: every store costs a write, loads evict nothing dirty.
  Launch store = kernel("store", ctas, 0, 0);
  store.ctas[0].work.dram_write_bytes = 1 << 14;  // 8 MiB in all: below the limit
  store.ctas[0].work.l2_bytes = 1 << 14;
  const double stored = ctas * (1 << 14);
  EXPECT_EQ(run_engine(hw, LaunchMode::kGraph, {node(store)}, nullptr, nullptr, L2DirtyLines::Start::kClean)
                .kernels[0].dram_write_bytes, 0.0);
  EXPECT_NEAR(run_engine(hw, LaunchMode::kGraph, {node(store)}).kernels[0].dram_write_bytes, stored, 1e-6);
  const HardwareSpec through = h100({{"l2.max_dirty_share", "0"}});
  EXPECT_NEAR(run_engine(through, LaunchMode::kGraph, {node(store)}, nullptr, nullptr, L2DirtyLines::Start::kClean)
                  .kernels[0].dram_write_bytes, stored, 1e-6);
  EXPECT_EQ(run_engine(through, LaunchMode::kGraph, {node(stream)}).kernels[0].dram_write_bytes, 0.0);
}

TEST(GpuEngine, BulkCopiesAreNotBoundByTheSmMissSlots) {
  const HardwareSpec hw = h100();
  // One CTA streaming 1 MiB with 256 KiB of its own loads in flight: ordinary loads are capped
  // by the SM's miss slots (sm.max_inflight_bytes per DRAM latency), TMA bulk copies only by the
  // CTA's stages.
  const double bytes = 1 << 20;
  Launch l = kernel("k", 1, 0, bytes);
  l.ctas[0].work.max_inflight_bytes = 256 * 1024;
  Launch tma = l;
  tma.ctas[0].work.bulk_copies = true;
  const auto ldg = run_engine(hw, LaunchMode::kGraph, {node(l)});
  const auto bulk = run_engine(hw, LaunchMode::kGraph, {node(tma)});
  const double latency = hw.dram.latency.seconds();
  const double capped_us = bytes / (static_cast<double>(hw.sm.max_inflight_bytes) / latency) * 1e6;
  const double staged_us = bytes / (256.0 * 1024 / latency) * 1e6;
  EXPECT_GT(us(ldg.kernels[0].duration()), capped_us);
  EXPECT_LT(us(bulk.kernels[0].duration()), hw.launch.kernel_overhead.us() + 2 * staged_us);
  EXPECT_LT(bulk.kernels[0].duration(), ldg.kernels[0].duration());
}

TEST(GpuEngine, BulkCopyStagesWaitTheLoadedLatency) {
  // 66 CTAs, each streaming 8 MiB through 16 KiB of copies in flight: at the idle latency they
  // would draw 66 x 16 KiB per latency, about 3.2 TB/s; each stage waits the latency as DRAM
  // load stretches it (up to twice idle), so they settle well below that, as cuDNN's decode CTAs
  // stream 28-31 GB/s each on the H100 and the H200 alike.
  const HardwareSpec hw = h100();
  const std::int64_t ctas = 66;
  const double bytes = 8.0 * (1 << 20);
  Launch l = kernel("k", ctas, 0, bytes);
  l.ctas[0].work.max_inflight_bytes = 16 * 1024;
  l.ctas[0].work.bulk_copies = true;
  const auto run = run_engine(hw, LaunchMode::kGraph, {node(l)});
  const double idle_us = bytes / (16.0 * 1024 / hw.dram.latency.seconds()) * 1e6;
  const double t = us(run.kernels[0].duration()) - hw.launch.kernel_overhead.us();
  EXPECT_GT(t, 1.25 * idle_us);
  EXPECT_LT(t, 2.0 * idle_us);
}

TEST(GpuEngine, ShortRunsAreCappedByTheRowActivationRate) {
  // 132 CTAs streaming 8 MiB each through 64 KiB of copies in flight: in long runs they reach
  // DRAM's bandwidth; in 64-byte runs each run costs a row activation, and the chip's
  // activation rate caps them at 64 B x dram.activation_rate, whatever the bandwidth.
  const std::int64_t ctas = 132;
  const double bytes = 8.0 * (1 << 20);
  Launch l = kernel("k", ctas, 0, bytes);
  l.ctas[0].work.max_inflight_bytes = 64 * 1024;
  l.ctas[0].work.bulk_copies = true;
  Launch short_runs = l;
  short_runs.ctas[0].work.dram_run_bytes = 64;
  const auto seconds = [](const HardwareSpec& hw, const Launch& k) {
    return (run_engine(hw, LaunchMode::kGraph, {node(k)}).kernels[0].duration() -
            hw.launch.kernel_overhead)
        .seconds();
  };
  const HardwareSpec hw = h100();
  ASSERT_GT(hw.dram.activation_rate, 0);
  const double total = bytes * static_cast<double>(ctas);
  const double capped = total / (64.0 * hw.dram.activation_rate);
  EXPECT_LT(seconds(hw, l), 1.15 * total / hw.dram.achievable_bandwidth());
  EXPECT_GT(seconds(hw, short_runs), capped);
  EXPECT_LT(seconds(hw, short_runs), 1.05 * capped);
  // What-ifs: more bandwidth does not lift the cap; with 128-byte runs the stream moves twice
  // as fast, up to DRAM's bandwidth.
  EXPECT_NEAR(seconds(h100({{"dram.bandwidth", "6.7TB/s"}}), short_runs), seconds(hw, short_runs),
              0.01 * capped);
  Launch longer = short_runs;
  longer.ctas[0].work.dram_run_bytes = 128;
  EXPECT_NEAR(seconds(hw, longer), std::max(capped / 2, seconds(hw, l)), 0.05 * capped);
  // No cap where the chip's file sets none (0).
  EXPECT_NEAR(seconds(h100({{"dram.activation_rate", "0Hz"}}), short_runs), seconds(hw, l),
              0.01 * capped);
}

TEST(GpuEngine, TheBlockSchedulerPacesManyShortCtas) {
  // 100 CTAs per SM that do almost nothing: the first 16 fill the SM's slots at launch, the
  // block scheduler starts the other 84 one per launch.cta_interval, so the kernel lasts at
  // least 84 intervals; without the pace it ends as soon as its few waves of tiny CTAs are done.
  const HardwareSpec hw = h100();
  const auto many = run_engine(hw, LaunchMode::kGraph, {node(kernel("k", 100 * hw.sm_count, 1.0))});
  const double paced_us = hw.launch.kernel_overhead.us() + 84 * hw.launch.cta_interval.us();
  EXPECT_GE(us(many.kernels[0].duration()), paced_us - 1e-6);
  const auto free = run_engine(h100({{"launch.cta_interval", "0ns"}}), LaunchMode::kGraph,
                               {node(kernel("k", 100 * hw.sm_count, 1.0))});
  EXPECT_LT(us(free.kernels[0].duration()), paced_us - 1.0);
  // A kernel of long CTAs is not affected.
  const auto heavy = run_engine(hw, LaunchMode::kGraph, {node(kernel("k", 4 * hw.sm_count, 1e7))});
  const auto heavy_free = run_engine(h100({{"launch.cta_interval", "0ns"}}), LaunchMode::kGraph,
                                     {node(kernel("k", 4 * hw.sm_count, 1e7))});
  EXPECT_EQ(heavy.kernels[0].duration(), heavy_free.kernels[0].duration());
}

TEST(GpuEngine, ClusterLaunchesStartTheirClustersOneAtATime) {
  // cta_dispatch_h100.json: CTAs launched with cluster dimensions start 2.4 ns apart chip-wide,
  // plain launches together. 132 CTAs doing the same work: a cluster launch of single-CTA
  // clusters ends 131 intervals after the plain one, of two-CTA clusters 65.
  const HardwareSpec hw = h100();
  const auto ends = [&](std::int64_t cluster) {
    Launch l = kernel("k", hw.sm_count, 1e7);
    l.cluster_ctas = cluster;
    return run_engine(hw, LaunchMode::kGraph, {node(l)}).kernels[0].duration();
  };
  const sim::Time step = hw.launch.cluster_dispatch_interval;
  EXPECT_GT(step.ps(), 0);
  EXPECT_EQ(ends(1) - ends(0), sim::checked_product(step, hw.sm_count - 1));
  EXPECT_EQ(ends(2) - ends(0), sim::checked_product(step, hw.sm_count / 2 - 1));
  // One CTA: nothing to wait for.
  Launch one = kernel("k", 1, 1e7);
  const sim::Time plain = run_engine(hw, LaunchMode::kGraph, {node(one)}).kernels[0].duration();
  one.cluster_ctas = 1;
  EXPECT_EQ(run_engine(hw, LaunchMode::kGraph, {node(one)}).kernels[0].duration(), plain);
}

TEST(GpuEngine, AWavesPrologueMissesQueueOneSmAfterAnother) {
  // shared_line_h100.json: one line of its own for each of 1-132 CTAs (one an SM) right after a
  // flush arrives 2.4 ns an SM later for the last. A launch whose first loads sit in its fixed
  // prologue (GEMM tiles) ends (SMs - 1) intervals later than without; a second CTA on an SM adds
  // nothing, nor does a kernel that reads no DRAM.
  const HardwareSpec hw = h100();
  const auto ends = [&](std::int64_t ctas, bool prologue_loads, double dram_bytes) {
    Launch l = kernel("k", ctas, 1e7, dram_bytes);
    l.prologue_loads = prologue_loads;
    return run_engine(hw, LaunchMode::kGraph, {node(l)}).kernels[0].duration();
  };
  const sim::Time step = hw.dram.first_miss_interval;
  EXPECT_GT(step.ps(), 0);
  EXPECT_EQ(ends(64, true, 4096) - ends(64, false, 4096), sim::checked_product(step, 63));
  EXPECT_EQ(ends(2 * hw.sm_count, true, 4096) - ends(2 * hw.sm_count, false, 4096),
            sim::checked_product(step, hw.sm_count - 1));
  EXPECT_EQ(ends(64, true, 0), ends(64, false, 0));
  EXPECT_EQ(ends(1, true, 4096), ends(1, false, 4096));
}

TEST(GpuEngine, IssueBoundPathsStretchWithTheCtasSharingAnSm) {
  // CTAs whose 2 us chain includes 0.5 us of instruction issue: alone on an SM each takes the
  // chain; four to an SM take turns at the schedulers, 2 + 3 x 0.5 us each. A chain without
  // issue-bound part is not slowed by its neighbours.
  const HardwareSpec hw = h100();
  const auto run = [&](std::int64_t ctas, double issue_us) {
    Launch l = kernel("k", ctas, 0);
    l.ctas[0].work.critical_path = sim::Time::from_seconds(2e-6);
    l.ctas[0].work.issue_path = sim::Time::from_seconds(issue_us * 1e-6);
    return us(run_engine(hw, LaunchMode::kGraph, {node(l)}).kernels[0].duration()) -
           hw.launch.kernel_overhead.us();
  };
  EXPECT_NEAR(run(hw.sm_count, 0.5), 2.0, 0.05);
  EXPECT_NEAR(run(4 * hw.sm_count, 0.5), 3.5, 0.05);
  EXPECT_NEAR(run(4 * hw.sm_count, 0.0), 2.0, 0.05);
}

TEST(GpuEngine, NsightAchievedOccupancyCountsActiveSmCyclesOnly) {
  // One CTA of 4 warps busy for 10 us: over the whole chip and the kernel's span it fills a
  // tiny share of the warp slots; over the cycles of the one SM that ran it (Nsight Compute's
  // definition) 4 of its 64 slots.
  const HardwareSpec hw = h100();
  Launch one = kernel("k", 1, 0);
  one.ctas[0].work.fixed = sim::Time::from_seconds(10e-6);
  const auto r = run_engine(hw, LaunchMode::kGraph, {node(one)});
  EXPECT_NEAR(r.kernels[0].achieved_occupancy_active, 4.0 / hw.sm.max_warps, 1e-9);
  EXPECT_LT(r.kernels[0].achieved_occupancy, 4.0 / hw.sm.max_warps / hw.sm_count);
  // A full wave of identical CTAs holds every SM the whole time: both definitions agree but for
  // the launch overhead, during which no SM is active.
  Launch wave = kernel("w", 16 * hw.sm_count, 0);
  wave.ctas[0].work.fixed = sim::Time::from_seconds(10e-6);
  const auto w = run_engine(hw, LaunchMode::kGraph, {node(wave)});
  EXPECT_NEAR(w.kernels[0].achieved_occupancy_active, 1.0, 1e-9);
  EXPECT_GT(w.kernels[0].achieved_occupancy, 0.85);
}

TEST(GpuEngine, SecondKernelReadsWhatTheFirstLeftInL2) {
  auto producer_consumer = [](const HardwareSpec& hw) {
    const std::int64_t bytes = 16 << 20;  // 16 MiB: fits a 50 MiB L2
    const std::int64_t ctas = hw.sm_count;
    Launch producer = kernel("producer", ctas, 0, 0);
    producer.ctas[0].work.dram_write_bytes = static_cast<double>(bytes) / ctas;
    producer.writes = {{"x", bytes}};
    Launch consumer = kernel("consumer", ctas, 0, static_cast<double>(bytes) / ctas);
    consumer.reads = {{"x", bytes}};
    return run_engine(hw, LaunchMode::kGraph, {node(producer), node(consumer)});
  };
  const auto warm = producer_consumer(h100());
  EXPECT_GT(warm.kernels[1].l2_read_hit_rate, 0.995);
  EXPECT_LT(warm.kernels[1].dram_read_bytes, 0.005 * (16 << 20));
  // With an L2 too small to hold it, the consumer reads DRAM and takes longer.
  const auto cold = producer_consumer(h100({{"l2.size", "4MiB"}}));
  EXPECT_LT(cold.kernels[1].l2_read_hit_rate, 0.3);
  EXPECT_GT(cold.kernels[1].dram_read_bytes, 10e6);
  EXPECT_GT(cold.kernels[1].duration(), warm.kernels[1].duration());
}

// validation/data/l2_reuse_h100.json and _h200.json: a consumer (z = y + 1) right after the
// producer of y (y = x * 2) finds all of y in L2 up to 16 MiB, then about 14 MiB of 24, 10 of 28,
// 5 of 32 and 2-3 from 40 on (the H100); 14 of 20, 10 of 24, 9 of 32 and 3-4 from 40 on (the
// H200, whose larger L2 keeps no more). A strict LRU over the whole L2 kept 24 of 24 and 18 of 32.
TEST(GpuEngine, ConsumersFindWhatTheL2ReuseProbeFound) {
  auto found_mib = [](const HardwareSpec& hw, double mib) {
    const double bytes = mib * (1 << 20);
    const std::int64_t ctas = 4 * hw.sm_count;
    Launch producer = kernel("producer", ctas, 0, bytes / ctas);
    producer.ctas[0].work.dram_write_bytes = bytes / ctas;
    producer.reads = {{"x", static_cast<std::int64_t>(bytes)}};
    producer.writes = {{"y", static_cast<std::int64_t>(bytes)}};
    Launch consumer = producer;
    consumer.name = "consumer";
    consumer.reads = {{"y", static_cast<std::int64_t>(bytes)}};
    consumer.writes = {{"z", static_cast<std::int64_t>(bytes)}};
    const auto r = run_engine(hw, LaunchMode::kGraph, {node(producer), node(consumer)});
    return r.kernels[1].l2_read_hit_rate * mib;
  };
  const HardwareSpec hw = h100();
  const std::vector<std::pair<double, double>> h100_found = {{8, 8}, {16, 16}, {24, 14}, {28, 10.5}, {32, 5}, {40, 2.5}};
  for (const auto& [mib, found] : h100_found) EXPECT_NEAR(found_mib(hw, mib), found, 2.5) << mib << " MiB";
  const HardwareSpec h200 = load_hardware("h200", PresetCatalog(gpusim::testing::config_dir() / "hw"));
  const std::vector<std::pair<double, double>> h200_found = {{8, 8}, {20, 14}, {24, 10}, {32, 9}, {40, 3.5}};
  for (const auto& [mib, found] : h200_found) EXPECT_NEAR(found_mib(h200, mib), found, 3.0) << mib << " MiB (H200)";
  // Far beyond the curve's half distance, nothing: the residency forgets what lies past it.
  EXPECT_LT(found_mib(hw, 96), 0.1);
  // A what-if that doubles the L2 doubles the distance at which half is found.
  const HardwareSpec larger = h100({{"l2.size", "100MiB"}});
  EXPECT_NEAR(found_mib(larger, 50), 25, 0.5);
  EXPECT_GT(found_mib(larger, 40), 30);
}

TEST(GpuEngine, GraphAndEagerGaps) {
  const HardwareSpec hw = h100();
  std::vector<KernelNode> chain;
  for (int i = 0; i < 10; ++i) chain.push_back(node(kernel("tiny", 1, 100)));
  const auto graph = run_engine(hw, LaunchMode::kGraph, chain);
  const auto eager = run_engine(hw, LaunchMode::kEager, chain);
  // Graph: each kernel starts graph_gap after the previous one ends.
  for (int i = 1; i < 10; ++i) {
    EXPECT_EQ(graph.kernels[i].start, graph.kernels[i - 1].end + hw.launch.graph_gap);
  }
  // Eager: tiny kernels are host-bound, one every eager_gap.
  EXPECT_EQ(eager.kernels[9].start.ps(), 9 * hw.launch.eager_gap.ps());
  EXPECT_GT(eager.end, graph.end);
  EXPECT_EQ(graph.kernels[3].duration(), eager.kernels[3].duration());
}

// A node's own host gap replaces eager_gap: the host issues launch i after the gaps of launches
// 0..i, and a kernel longer than the gaps lets the host run ahead (the GPU is the bottleneck).
TEST(GpuEngine, EagerHostGapsAccumulateAndTheGpuRunsBehindTheHost) {
  const HardwareSpec hw = h100();
  const sim::Time first = sim::Time::from_seconds(500e-6), gap = sim::Time::from_seconds(40e-6);
  std::vector<KernelNode> tiny;
  for (int i = 0; i < 10; ++i) {
    tiny.push_back(node(kernel("tiny", 1, 100)));
    tiny.back().host_gap = i == 0 ? first + gap : gap;
  }
  const auto host_bound = run_engine(hw, LaunchMode::kEager, tiny);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(host_bound.kernels[i].start.ps(), first.ps() + (i + 1) * gap.ps()) << i;
  }
  EXPECT_EQ(host_bound.end, host_bound.kernels[9].end);
  // Graph mode ignores the host.
  EXPECT_EQ(run_engine(hw, LaunchMode::kGraph, tiny).kernels[0].start, sim::Time());
  // Long kernels: each starts when the previous one ends, not when the host issued it.
  std::vector<KernelNode> long_ones;
  for (int i = 0; i < 4; ++i) {
    long_ones.push_back(node(kernel("long", 16 * hw.sm_count, 1e8)));
    long_ones.back().host_gap = gap;
  }
  const auto gpu_bound = run_engine(hw, LaunchMode::kEager, long_ones);
  ASSERT_GT(gpu_bound.kernels[0].duration(), gap + gap);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(gpu_bound.kernels[i].start, gpu_bound.kernels[i - 1].end + hw.launch.graph_gap) << i;
  }
}

// A host sync (.item()): the host issues nothing more until that kernel has ended, then spends
// the next launch's gap. Without it the host runs ahead of a long kernel and the next launch
// starts right behind it.
TEST(GpuEngine, AHostSyncHoldsTheHostUntilItsKernelEnds) {
  const HardwareSpec hw = h100();
  const sim::Time gap = sim::Time::from_seconds(30e-6);
  auto chain = [&](bool sync, LaunchMode mode = LaunchMode::kEager) {
    std::vector<KernelNode> nodes;
    nodes.push_back(node(kernel("long", 16 * hw.sm_count, 1e8)));
    nodes.push_back(node(kernel("item", 1, 10)));
    nodes.back().host_sync = sync;
    nodes.push_back(node(kernel("after", 1, 10)));
    for (auto& n : nodes) n.host_gap = gap;
    return run_engine(hw, mode, nodes);
  };
  const auto free_running = chain(false);
  const auto synced = chain(true);
  ASSERT_GT(free_running.kernels[0].duration(), gap + gap + gap);
  EXPECT_EQ(free_running.kernels[2].start, free_running.kernels[1].end + hw.launch.graph_gap);
  EXPECT_EQ(synced.kernels[2].start, synced.kernels[1].end + gap);
  EXPECT_EQ(synced.kernels[1].end, free_running.kernels[1].end);
  // Graph mode has no host to hold.
  const auto graph = chain(true, LaunchMode::kGraph);
  EXPECT_EQ(graph.kernels[2].start, graph.kernels[1].end + hw.launch.graph_gap);
}

TEST(GpuEngine, WhatIfSmCountChangesComputeBoundTime) {
  const std::int64_t ctas = 16 * 132 * 4;
  const auto base = run_engine(h100(), LaunchMode::kGraph, {node(kernel("k", ctas, 1e6))});
  const auto fewer = run_engine(h100({{"sm_count", "66"}}), LaunchMode::kGraph,
                                {node(kernel("k", ctas, 1e6))});
  const double overhead = h100().launch.kernel_overhead.us();
  EXPECT_NEAR((us(fewer.kernels[0].duration()) - overhead) /
                  (us(base.kernels[0].duration()) - overhead),
              2.0, 1e-6);
}

TEST(GpuEngine, TensorHeavyKernelsRunAtTheSustainedTensorClock) {
  const HardwareSpec hw = h100();
  Launch gemm = kernel("gemm", hw.sm_count, 0);
  gemm.ctas[0].work.tensor_flops = 1e9;
  const auto r = run_engine(hw, LaunchMode::kGraph, {node(gemm), node(kernel("ew", 1, 100))});
  EXPECT_TRUE(r.kernels[0].tensor_heavy);
  EXPECT_DOUBLE_EQ(r.kernels[0].clock_hz, hw.clocks.sustained_tensor_hz);
  EXPECT_DOUBLE_EQ(r.kernels[1].clock_hz, hw.clocks.sustained_other_hz);
  const double expected_us = 1e9 / (hw.throughput.tensor_bf16 * hw.clocks.sustained_tensor_hz) * 1e6;
  EXPECT_NEAR(us(r.kernels[0].duration()), hw.launch.kernel_overhead.us() + expected_us, 1e-3);
}

TEST(GpuEngine, IsDeterministic) {
  const HardwareSpec hw = h100();
  std::vector<KernelNode> nodes;
  for (int i = 0; i < 20; ++i) {
    nodes.push_back(node(kernel("k" + std::to_string(i), 100 + 37 * i, 1e5 * (i % 3), 1e5 * (i % 4)), i % 3));
  }
  const auto a = run_engine(hw, LaunchMode::kGraph, nodes);
  const auto b = run_engine(hw, LaunchMode::kGraph, nodes);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].start, b.kernels[i].start);
    EXPECT_EQ(a.kernels[i].end, b.kernels[i].end);
  }
}

TEST(GpuEngine, RejectsLaunchesTheChipCannotRun) {
  const HardwareSpec hw = h100();
  Launch big = kernel("big", 1, 1);
  big.smem_per_cta = 300 * 1024;
  EXPECT_THROW(run_engine(hw, LaunchMode::kGraph, {node(big)}), ModelError);
  Launch fp8 = kernel("fp8", 1, 0);
  fp8.ctas[0].work.tensor_flops = 1;
  fp8.ctas[0].work.tensor_dtype = DType::kFp8;
  EXPECT_THROW(run_engine(load_hardware("a100", PresetCatalog(gpusim::testing::config_dir() / "hw")),
                          LaunchMode::kGraph, {node(fp8)}),
               ModelError);
}

}  // namespace
}  // namespace gpusim::hw
