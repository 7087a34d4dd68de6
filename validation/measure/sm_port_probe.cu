// sm_port_probe.cu: how fast one SM can pull bytes from L2 (and from DRAM) when few SMs run.
//
// A GEMM of one or two CTAs streams its K slabs at about 0.09 us per 10 KiB step on the H100
// (issue 16's random sets), about 110 GB/s: far below a CTA's pipeline depth over latency and
// far below the L2's 8.2 TB/s. This probe checks whether that is the SM's own L2 port: CTAs of
// 256 or 1024 threads (one per SM) read an L2-resident 4 MiB buffer (or a 4 GiB one, from
// DRAM) with 16-byte ld.global.cg loads, 8 in flight per thread, for 1 to 132 SMs. The port
// bandwidth is the per-SM rate that stays flat as threads grow.
//
// Build and run (GPU machine, repository root):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/sm_port_probe validation/measure/sm_port_probe.cu
//   /tmp/sm_port_probe > $OUT/sm_port_<gpu>.json
#include <cuda_runtime.h>

#include <cstdio>

#include "probe_timing.h"

// Each CTA reads its own `per_cta` int4 words of the buffer's cyclic index space, 8 loads in
// flight per thread; consecutive threads read consecutive 16-byte words.
__global__ void __launch_bounds__(1024) port_read(const int4* __restrict__ buf, size_t mask, size_t per_cta,
                                                  int4* __restrict__ out) {
  const size_t base = blockIdx.x * per_cta * 7919;  // CTAs start apart in the buffer
  int4 acc = make_int4(0, 0, 0, 0);
  for (size_t k = threadIdx.x; k < per_cta; k += blockDim.x * 8) {
    int4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const size_t kk = k + j * blockDim.x;
      v[j] = kk < per_cta ? __ldcg(buf + ((base + kk) & mask)) : make_int4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      acc.x += v[j].x;
      acc.y ^= v[j].y;
      acc.z += v[j].z;
      acc.w ^= v[j].w;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

int main() {
  int clock_khz = 0;
  const cudaDeviceProp prop = open_report("validation/measure/sm_port_probe.cu", &clock_khz);
  const size_t big_bytes = size_t(4) << 30, small_bytes = size_t(4) << 20;
  int4* buf = nullptr;
  int4* out = nullptr;
  PROBE_CHECK(cudaMalloc(&buf, big_bytes));
  PROBE_CHECK(cudaMemset(buf, 1, big_bytes));
  PROBE_CHECK(cudaMalloc(&out, size_t(132) * 1024 * sizeof(int4) * 4));
  const int sms[] = {1, 2, 4, 8, 16, 33, 66, 132};
  const int threads[] = {256, 1024};
  bool first = true;
  for (int source = 0; source < 2; ++source) {  // 0: L2-resident buffer, 1: DRAM (4 GiB)
    const size_t bytes = source == 0 ? small_bytes : big_bytes;
    const size_t mask = bytes / sizeof(int4) - 1;
    for (const int thr : threads) {
      for (const int n : sms) {
        // Each CTA reads 32 MiB from L2 or 16 MiB from DRAM (distinct lines: the 4 GiB buffer
        // holds 128 such slices apart), so a run lasts tens of microseconds or more.
        const size_t per_cta = (source == 0 ? size_t(32) << 20 : size_t(16) << 20) / sizeof(int4);
        // The untimed first launch also loads the small buffer into L2.
        const float median = median_ms([&] { port_read<<<n, thr>>>(buf, mask, per_cta, out); });
        const double sec = median * 1e-3;
        const double per_sm = double(per_cta) * sizeof(int4) / sec;
        std::printf("%s    {\"source\": \"%s\", \"threads\": %d, \"sms\": %d, \"median_ms\": %.4f, "
                    "\"GBps_per_sm\": %.2f, \"GBps_total\": %.1f, \"bytes_per_clk_per_sm\": %.2f}",
                    first ? "" : ",\n", source == 0 ? "l2" : "dram", thr, n, median,
                    per_sm / 1e9, per_sm * n / 1e9, per_sm / (clock_khz * 1e3));
        first = false;
      }
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
