// l1_sector_probe.cu: how many 32-byte L1 sectors an SM serves per clock to loads whose threads
// read different sectors.
//
// cuBLAS's register-staged align1 GEMM kernels load their operands one 2-byte element per thread
// access. Their time per K step grows with the elements an SM's CTAs load (issue 16's random
// sets: about 0.2 ns per element per SM), not with their FLOPs. This probe reads an L1-resident
// 16 KiB buffer with 2-byte loads, each warp instruction touching 1, 2, 4, 8, 16 or 32 distinct
// sectors, and reports elements and sectors per clock per SM (one CTA of 1024 threads per SM, all
// SMs). A warp instruction costs about max(1, sectors / rate) clocks in the L1.
//
// Build and run (GPU machine, repository root):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/l1_sector_probe validation/measure/l1_sector_probe.cu
//   /tmp/l1_sector_probe > $OUT/l1_sectors_<gpu>.json
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "probe_timing.h"

constexpr int kElems = 8192;  // 16 KiB of 2-byte elements: stays in L1

// Lane l of a warp reads element (l / group) * 16 + l % group + shift: `32 / group` distinct
// 32-byte sectors per instruction (16 elements per sector). `shift` walks the elements of each
// sector over iterations, so every load after the first pass hits L1.
__global__ void __launch_bounds__(1024) sector_loads(const unsigned short* __restrict__ buf, int group, int iters,
                                                     unsigned* __restrict__ out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int base = (warp * 32 / group) * 16 * 8 % kElems;  // warps read different sectors too
  unsigned acc = 0;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int shift = (it * 8 + u) & 15;
      const int idx = (base + (lane / group) * 16 + (lane % group + shift) % 16) % kElems;
      acc += __ldca(buf + idx);
    }
  }
  if (acc == 0xdeadbeef) out[blockIdx.x] = acc;
}

int main() {
  int clock_khz = 0;
  const cudaDeviceProp prop = open_report("validation/measure/l1_sector_probe.cu", &clock_khz);
  unsigned short* buf = nullptr;
  unsigned* out = nullptr;
  PROBE_CHECK(cudaMalloc(&buf, kElems * sizeof(unsigned short)));
  PROBE_CHECK(cudaMemset(buf, 1, kElems * sizeof(unsigned short)));
  PROBE_CHECK(cudaMalloc(&out, 4096 * sizeof(unsigned)));
  const int groups[] = {32, 16, 8, 4, 2, 1};  // lanes sharing a sector: 1 .. 32 sectors per instruction
  const int threads[] = {256, 1024};
  const int iters = 4096;
  bool first = true;
  for (const int thr : threads) {
    for (const int g : groups) {
      const int sms = prop.multiProcessorCount;
      const float median = median_ms([&] { sector_loads<<<sms, thr>>>(buf, g, iters, out); });
      const double sec = median * 1e-3;
      const double elems = double(thr) * iters * 8;  // per SM
      const double clocks = sec * clock_khz * 1e3;
      const double sectors = elems / g;  // each instruction: 32 / g sectors for 32 elements
      std::printf("%s    {\"threads\": %d, \"sectors_per_instruction\": %d, \"median_ms\": %.4f, "
                  "\"elements_per_clk_per_sm\": %.3f, \"sectors_per_clk_per_sm\": %.3f}",
                  first ? "" : ",\n", thr, 32 / g, median, elems / clocks, sectors / clocks);
      first = false;
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
