// The typed description of one GPU (or GPU-like accelerator). Every field comes from a
// hardware file (configs/hw/*.yaml or the user's), validated by hw/hardware_schema.cpp.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "hw/dtype.h"
#include "hw/system_spec.h"
#include "sim/time.h"

namespace gpusim::hw {

struct ClockSpec {
  double boost_hz = 0;             // maximum SM clock
  double sustained_tensor_hz = 0;  // SM clock held under tensor-heavy (power-limited) load
  double sustained_other_hz = 0;   // SM clock held under other load (memory-bound, SIMT)

  bool operator==(const ClockSpec&) const = default;
};

// Per-SM resources and the rules by which CTAs are made resident (see hw/occupancy.h).
struct SmSpec {
  int warp_size = 32;
  int max_threads = 0;          // resident threads per SM
  int max_warps = 0;            // resident warps per SM (= max_threads / warp_size)
  int max_ctas = 0;             // resident CTAs per SM (CTA slots)
  int max_threads_per_cta = 0;  // largest block a kernel may launch
  int sub_partitions = 0;       // warp schedulers; registers are split evenly among them
  int registers = 0;            // 32-bit registers per SM
  int max_registers_per_cta = 0;
  int max_registers_per_thread = 0;
  int register_alloc_unit = 0;  // registers per warp are rounded up to this
  std::int64_t shared_memory = 0;          // per SM, at the largest carveout
  std::int64_t shared_memory_per_cta = 0;  // largest opt-in allocation of one CTA
  std::int64_t shared_memory_reserved_per_cta = 0;  // the driver's reservation per CTA
  std::int64_t shared_memory_alloc_unit = 0;        // allocation granularity
  std::int64_t l1_size = 0;                         // unified L1 / shared memory per SM
  // Bytes of DRAM misses one SM keeps outstanding: by Little's law it caps the SM's DRAM
  // bandwidth at max_inflight_bytes / dram latency, so full DRAM bandwidth needs most SMs busy.
  std::int64_t max_inflight_bytes = 0;

  bool operator==(const SmSpec&) const = default;
};

// Dense per-SM throughput per clock (an FMA counts as 2 FLOPs). Tensor rates are with fp32
// accumulation, as PyTorch's GEMMs use; 0 means the format has no tensor-core path.
struct ThroughputSpec {
  double tensor_fp16 = 0;
  double tensor_fp16_f16acc = 0;  // fp16 with fp16 accumulation (twice the rate on GeForce)
  double tensor_bf16 = 0;
  double tensor_tf32 = 0;
  double tensor_fp8 = 0;
  double fp32 = 0;  // SIMT FP32 (CUDA cores)
  double sfu = 0;   // special-function ops (exp2, rsqrt, sin) per clock
  // Share of the tensor rate that warp-level mma.sync kernels (cuBLAS's sm_75/sm_80-style GEMMs)
  // reach: 1 where mma.sync is the native path (sm_80, sm_120); below 1 on sm_90, whose full rate
  // needs warpgroup MMA (wgmma).
  double mma_sync_share = 1.0;
  // The same for the multistage (cp.async) 16-bit kernels (cuBLAS's align2 and wider ones).
  double mma_sync_cp_async_share = 1.0;
  // Share of the tensor rate that pipelined mma.sync kernels reach (FlashAttention-2: operands
  // staged in shared memory by cp.async, fed by ldmatrix, no register staging of global loads):
  // 1 where mma.sync is native; below 1 on sm_90.
  double mma_sync_pipelined_share = 1.0;

  bool operator==(const ThroughputSpec&) const = default;
};

struct L2Spec {
  std::int64_t size = 0;
  int partitions = 0;
  double bandwidth = 0;  // bytes/s, all partitions, for hits
  sim::Time hit_latency;
  // Share of the L2's lines it keeps dirty at most (a write-back cache; hw/l2_dirty_lines.h).
  double max_dirty_share = 0;
  // What later kernels find of a kernel's lines (hw::L2ReuseCurve, hw/l2_residency.h): half of
  // them once reuse_share x size bytes of other lines went through the L2 since, the share
  // falling around there as sharply as reuse_steepness says.
  double reuse_share = 1;
  double reuse_steepness = 6;

  bool operator==(const L2Spec&) const = default;
};

struct DramSpec {
  std::string kind;  // HBM3, GDDR7, ...
  int bus_width_bits = 0;
  double bandwidth = 0;   // bytes/s, datasheet peak
  double efficiency = 0;  // fraction of the peak a large copy reaches (read + write)
  sim::Time latency;                // load-to-use latency of a miss
  // A wave of CTAs whose first loads all miss: each SM's first miss queues behind the others',
  // the last SM's arriving (SMs - 1) x this after the first's (Launch::prologue_loads).
  sim::Time first_miss_interval;
  // Row activations a second the DRAM makes over all its channels (0: unlimited): traffic in
  // short runs (CtaWork::dram_run_bytes, one activation a run) moves at most run x this bytes/s.
  double activation_rate = 0;
  std::int64_t capacity = 0;        // device memory, bytes

  bool operator==(const DramSpec&) const = default;

  double achievable_bandwidth() const { return bandwidth * efficiency; }
  // activation_rate as a capacity: infinite where it is not given.
  double activation_capacity() const {
    return activation_rate > 0 ? activation_rate : std::numeric_limits<double>::infinity();
  }
};

struct LaunchSpec {
  sim::Time graph_gap;  // between dependent kernels replayed from a CUDA graph
  sim::Time eager_gap;  // per kernel launched eagerly from PyTorch (host-bound)
  sim::Time kernel_overhead;  // device time of a kernel beyond its CTAs' work (launch, drain)
  // The block scheduler starts at most one CTA on an SM per cta_interval: a kernel of many very
  // short CTAs cannot end before its busiest SM has had them all started.
  sim::Time cta_interval;
  // A kernel launched with cluster dimensions (cuBLAS's sm_90 kernels) has its clusters started
  // one at a time, this far apart, across the whole chip: its first wave's last cluster starts
  // (clusters - 1) intervals after its first (validation/measure/cta_dispatch_probe.cu). Plain
  // launches start their first wave together.
  sim::Time cluster_dispatch_interval;

  bool operator==(const LaunchSpec&) const = default;
};

// The host CPU as eager model code uses it: what Python, the dispatcher and the allocator cost
// between launches of a model's forward. Part of the system a user describes (a host preset,
// configs/hosts/), calibrated per host: the same PyTorch code costs 1.5-2.5x more on one lent
// Xeon than on another (validation/data/README-host.md).
struct HostSpec {
  sim::Time model_kernel_issue;  // host time per kernel a model's eager forward launches
  sim::Time forward_fixed;       // host time of a forward before its first launch
  // A training step's other phases: autograd's engine (C++, no model code) per backward kernel,
  // and torch.optim's step per optimizer launch (foreach ops launch a kernel per tensor chunk).
  sim::Time backward_kernel_issue;
  sim::Time optimizer_kernel_issue;

  bool operator==(const HostSpec&) const = default;
};

// Where one field's value came from, for `gpusim hw show` and for error messages.
struct ValueOrigin {
  std::string file;    // file path, or "command line"
  int line = 0;        // 1-based; 0 for the command line
  std::string source;  // the value's trailing comment: its citation
};

struct HardwareSpec {
  std::string name;         // preset or file name, as results report it
  std::string description;  // a line for humans
  std::string arch;         // compute capability, e.g. sm_90
  int sm_count = 0;
  ClockSpec clocks;
  SmSpec sm;
  ThroughputSpec throughput;
  L2Spec l2;
  DramSpec dram;
  LaunchSpec launch;
  HostSpec host;
  SystemSpec system;  // a chip alone: one GPU, no interconnect (hw/system_spec.h)

  std::map<std::string, ValueOrigin> origins;  // by key path, e.g. "l2.size"

  // Tensor-core FLOPs per SM per clock for a dtype's math (fp32 has none: it runs on FP32 pipes).
  double tensor_flops_per_cycle(DType d) const;
  // Chip-wide dense peaks at the sustained clocks, FLOP/s.
  double peak_tensor_flops(DType d) const;
  double peak_fp32_flops() const;
};

}  // namespace gpusim::hw
