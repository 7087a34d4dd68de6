// Profiler-style metrics of one simulated kernel, named as Nsight Compute reports them, and the
// bound class gpusim's roofline rule gives it (seed 003's own rule: classify_seed003). Computed
// from the launch (what the kernel asks for) and the engine's result (how it ran), so reports
// and validation share one definition.
#pragma once

#include <cstdint>
#include <string_view>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "hw/launch.h"

namespace gpusim::hw {

// What limits a kernel (gpusim's rule, after seed 003's "Classification rule", plus a latency
// class for kernels too short to load either roof).
enum class BoundClass {
  kMemory,    // intensity below the ridge point and DRAM meaningfully busier than the SM
  kCompute,   // intensity at or above the ridge point and the SM meaningfully busier than DRAM
  kBalanced,  // neither: low on both, or both comparable
  kLatency,   // low on both, and too short or too narrow to hide latency: launch and first-load
              // latency dominate, or fewer CTAs than SMs leave dependent chains exposed
};
std::string_view name(BoundClass b);

struct KernelMetrics {
  double duration_us = 0;
  double flops = 0;         // tensor + FP32 FLOPs (an FMA counts 2)
  double tensor_flops = 0;  // of which on tensor cores
  double dram_bytes = 0;    // read + written, after L2 hits
  double l2_bytes = 0;      // requests between the SMs and L2
  // FLOPs per DRAM byte; with no DRAM traffic, FLOPs per byte (as if one byte moved).
  double arithmetic_intensity = 0;
  // FLOPs per byte where the roof of the pipe doing the kernel's math (tensor cores at its dtype,
  // else FP32) meets achievable DRAM bandwidth, both at the kernel's clock.
  double ridge_point = 0;
  double flops_per_s = 0;            // achieved over the kernel's duration
  double dram_bytes_per_s = 0;       // achieved over the kernel's duration
  double theoretical_occupancy = 0;  // resident warps / warp slots when alone on an SM
  double achieved_occupancy = 0;     // time-averaged resident warps / warp slots, all SMs
  double achieved_warps_per_sm = 0;  // achieved_occupancy x max warps per SM
  // Nsight Compute's "Achieved Occupancy": resident warps over the active cycles of the SMs that
  // held the kernel's CTAs (sm__warps_active.avg.pct_of_peak_sustained_active), as a share.
  double achieved_occupancy_active = 0;
  std::int64_t ctas = 0;             // grid size
  int ctas_per_sm = 0;               // resident CTAs an SM holds when alone (occupancy limit)
  double waves = 0;                  // CTAs / (CTAs per SM x SMs)
  // Busiest SM unit against its peak: the pipes (tensor, FP32, SFU) and instruction issue.
  double sm_throughput_pct = 0;
  double dram_throughput_pct = 0;    // DRAM bytes per second against the datasheet peak
  // Nsight's mem__throughput analogue: the busier of DRAM (as above) and L2 (l2_bytes per second
  // against the L2 bandwidth).
  double memory_throughput_pct = 0;
  double l2_hit_rate = 0;            // 1 - DRAM bytes / L2 bytes: all requests, as Nsight counts
  double l2_input_hit_rate = 0;      // share of the kernel's input bytes resident at its start
  double clock_mhz = 0;              // SM clock at the kernel's start
  BoundClass bound = BoundClass::kBalanced;
};

KernelMetrics kernel_metrics(const HardwareSpec& hw, const Launch& launch, const KernelResult& result);

// The classification rule, on metrics computed above; `floor_us` is the shortest a kernel
// that touches DRAM can be on the chip (kernel overhead plus one DRAM round trip).
BoundClass classify(const KernelMetrics& m, double floor_us, int sm_count);

// Seed 003's rule as its appendix writes it (lines 458-460), for comparing with the seed's
// counts: memory when intensity < ridge point and DRAM throughput is meaningfully higher than SM
// throughput, compute when intensity >= ridge point and SM throughput is meaningfully higher
// than DRAM throughput, balanced otherwise. Never kLatency. ModelError on a negative or
// non-finite metric, or a ridge point that is not positive.
BoundClass classify_seed003(const KernelMetrics& m);

// "Meaningfully higher" in classify_seed003: the busier side at least this multiple of the other.
// The seed states no threshold; its class means (SM / DRAM throughput: compute 36.21 / 9.89,
// memory 9.38 / 34.23, balanced 12.25 / 12.62) put it between 1.03 (balanced's ratio) and 3.65
// (the smaller of memory's and compute's); 2 is about their geometric mean. Nsight's
// mem__throughput in place of DRAM fits no ratio: compute's SM is only 1.1x it (36.21 / 32.23)
// while balanced's memory is 2.2x its SM (27.52 / 12.25).
inline constexpr double kSeed003Ratio = 2.0;

}  // namespace gpusim::hw
