// What a kernel asks of the hardware: the seam between cost models (models/) and the engine
// (hw/). A cost model says what one launch is (grid, block, registers, shared memory) and what
// each of its CTAs does (FLOPs per pipe, bytes per memory level, fixed latencies); the engine
// decides how long that takes on a given chip, with other kernels around. It lives in hw/
// because it is a GPU-level notion (a grid of CTAs), not a transformer one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/dtype.h"
#include "sim/time.h"

namespace gpusim::hw {

struct Dim3 {
  std::int64_t x = 1, y = 1, z = 1;
  std::int64_t count() const { return x * y * z; }
};

// One CTA's demand. Work is split by the unit that executes it; the engine turns it into time
// with the hardware's per-SM rates, clocks and shared bandwidths.
struct CtaWork {
  double tensor_flops = 0;  // dense tensor-core FLOPs (an FMA counts 2) at tensor_dtype's rate
  DType tensor_dtype = DType::kBf16;
  double fp32_flops = 0;  // CUDA-core FP32 FLOPs (FMA = 2), including SIMT GEMM math
  // Share of the FP32 pipe's issue slots that do those FLOPs (1 when nothing else competes;
  // lower when the code also issues shared-memory loads and address math, as SIMT GEMMs do).
  double fp32_efficiency = 1.0;
  // Share of the tensor pipe's rate the CTA's MMA instructions reach (1 for the arch's native
  // MMA; hw.throughput.mma_sync_share for warp-level mma.sync on sm_90).
  double tensor_efficiency = 1.0;
  double sfu_ops = 0;     // special-function ops: exp2, rsqrt, tanh, ...

  // Bytes between this CTA's SM and L2, loads plus stores, after L1/shared-memory reuse.
  double l2_bytes = 0;
  // Of those, the bytes that would come from DRAM if none of the kernel's inputs were in L2:
  // this CTA's share of the kernel's unique input footprint (re-reads by other CTAs hit L2).
  double dram_read_bytes = 0;
  // This CTA's share of the kernel's output bytes (written back to DRAM unless L2 absorbs them).
  double dram_write_bytes = 0;
  // Bytes this CTA sends into its GPU's links to other GPUs (a collective's channel, with its
  // protocol's overhead), and of those the bytes that leave the node through the GPU's NIC: the
  // engine shares the system's link and network bandwidth among the CTAs sending at once.
  double link_bytes = 0;
  double network_bytes = 0;
  // Bytes of loads one CTA keeps in flight (threads x vector width x unroll, or TMA stages):
  // by Little's law it caps the CTA's bandwidth at max_inflight_bytes / latency. 0: no cap.
  double max_inflight_bytes = 0;
  // The loads are copies into shared memory (TMA bulk copies; cuDNN decode's cp.async stages):
  // they do not hold the SM's L1 miss slots (sm.max_inflight_bytes), so only the CTA's own
  // pipeline (max_inflight_bytes) bounds them.
  bool bulk_copies = false;
  // Contiguous bytes of one DRAM page this CTA's DRAM traffic takes per visit, where it comes in
  // short runs (a tile's rows one pipeline stage at a time); 0: long runs (streams, deep
  // pipelines), whose row activations never bind. Each run costs a row activation, and the chip
  // makes at most dram.activation_rate of them a second (hw/hardware_spec.h).
  double dram_run_bytes = 0;

  // How much of its tensor-core time and its SIMT time (FP32 and SFU, which overlap each other)
  // the CTA overlaps: 1 when warps keep both busy at once (the time is the longer of the two), 0
  // when they run in dependent phases (the sum), as attention's matmul -> softmax -> matmul.
  double pipe_overlap = 1.0;

  // The dependent chain inside the CTA's work (a load that waits for the previous iteration's
  // arithmetic, block-wide reductions): the work cannot finish faster than this however much
  // bandwidth it gets, but other CTAs' transfers overlap it.
  sim::Time critical_path;
  // Of that chain, the part spent issuing instructions (block-wide reductions' shuffles and
  // barriers, division sequences): the CTAs sharing an SM take turns at its schedulers, so this
  // part stretches by their number (n CTAs on the SM: critical_path + (n - 1) x issue_path).
  sim::Time issue_path;

  // Time that does not shrink with bandwidth or pipe rate: prologue, first-load latency,
  // pipeline fill, epilogue, grid-wide synchronization.
  sim::Time fixed;
};

// CTAs of one launch that do the same work (full tiles vs edge tiles, split-K slices, the
// tile counts of a persistent kernel's CTAs). Listed in dispatch (blockIdx) order.
struct CtaClass {
  std::int64_t count = 0;
  CtaWork work;
};

// A tensor a kernel reads or writes, for L2 residency across kernels. Names are unique within
// a workload (cost models prefix them with the op's tag), sizes are the bytes touched.
struct TensorUse {
  std::string tensor;
  std::int64_t bytes = 0;
  // Streamed once with an evict-first L2 hint (TMA cache hints, as cuBLAS streams an operand no
  // other tile re-reads): it hits what is resident but allocates nothing and evicts nothing.
  bool evict_first = false;
};

struct Launch {
  std::string name;    // as a profiler shows it, e.g. "vectorized_elementwise_kernel"
  std::string family;  // cost-model family: "gemm", "elementwise", "flash_fwd", ...
  Dim3 grid, block;
  int regs_per_thread = 0;
  std::int64_t smem_per_cta = 0;  // static + dynamic bytes
  // CTAs per thread-block cluster when launched with cluster dimensions (cuBLAS's sm_90 kernels,
  // whose clusters the block scheduler starts one at a time: launch.cluster_dispatch_interval);
  // 0 for a plain launch.
  std::int64_t cluster_ctas = 0;
  // The CTAs' first operand loads are part of their fixed prologue (GEMM tiles), which the DRAM
  // load model does not see: a first wave's misses queue instead (dram.first_miss_interval).
  bool prologue_loads = false;
  std::vector<CtaClass> ctas;     // counts add up to grid.count()
  std::vector<TensorUse> reads, writes;

  std::int64_t cta_count() const { return grid.count(); }
};

// What all of a launch's CTAs ask for together: per-CTA work times the class counts.
struct LaunchTotals {
  double tensor_flops = 0, fp32_flops = 0, sfu_ops = 0;
  double l2_bytes = 0, dram_read_bytes = 0, dram_write_bytes = 0;
  double link_bytes = 0, network_bytes = 0;
  LaunchTotals& operator+=(const LaunchTotals& o);
};
LaunchTotals totals(const Launch& l);
LaunchTotals totals(const std::vector<Launch>& ls);

}  // namespace gpusim::hw
