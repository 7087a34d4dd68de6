// cta_dispatch_probe.cu: when the block scheduler starts each CTA of a launch, by the CTA's size.
//
// Issue 16's fourteenth round found one-wave GEMMs growing 2-6 ns a CTA at fixed work per CTA
// (nvjet, cuBLAS's wmma kernels), more for CTAs holding more shared memory, and no mechanism in
// the engine for it. This probe launches CTAs that each wait a fixed time and records, per CTA,
// %globaltimer at its first instruction: the start times, sorted, show whether the first wave's
// CTAs start together or one after another, and how that pace depends on the CTA's threads,
// dynamic shared memory and cluster size. Kernel times (CUDA events) come with them.
//
// Build and run (GPU machine, repository root):
//   nvcc -O2 -arch=sm_90 -std=c++17 -o /tmp/cta_dispatch_probe validation/measure/cta_dispatch_probe.cu
//   /tmp/cta_dispatch_probe > $OUT/cta_dispatch_<gpu>.json
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_timing.h"

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Each CTA: thread 0 stamps its start, every thread waits `spin_ns`, thread 0 stamps its end.
// The dynamic shared memory is touched once so that it is really allocated.
__global__ void stamp(std::uint64_t* starts, std::uint64_t* ends, std::uint64_t spin_ns) {
  extern __shared__ unsigned char smem[];
  const std::uint64_t t0 = global_ns();
  const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) {
    starts[cta] = t0;
    smem[0] = static_cast<unsigned char>(t0);
  }
  while (global_ns() - t0 < spin_ns) {
  }
  __syncthreads();
  if (threadIdx.x == 0) ends[cta] = global_ns();
}

struct Config {
  int threads, smem, cluster;
};

int main() {
  int clock_khz = 0;
  const cudaDeviceProp prop = open_report("cta_dispatch_probe", &clock_khz);
  const int sms = prop.multiProcessorCount;
  const int max_ctas = 256 * sms;
  std::uint64_t *starts = nullptr, *ends = nullptr;
  PROBE_CHECK(cudaMalloc(&starts, max_ctas * sizeof(std::uint64_t)));
  PROBE_CHECK(cudaMalloc(&ends, max_ctas * sizeof(std::uint64_t)));
  PROBE_CHECK(cudaFuncSetAttribute(stamp, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(prop.sharedMemPerBlockOptin)));
  PROBE_CHECK(cudaFuncSetAttribute(stamp, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));

  // cluster 0: a plain launch, no cluster attribute (as ATen's and CUTLASS's sm_80 kernels);
  // 1, 2, 4: launched with a cluster dimension (as cuBLAS's sm_90 kernels).
  const std::vector<Config> configs = {
      {128, 0, 0},      {32, 0, 0},      {128, 163840, 0}, {384, 163840, 0}, {1024, 0, 0},
      {128, 0, 1},      {128, 16384, 1}, {128, 65536, 1}, {128, 163840, 1}, {32, 0, 1},
      {384, 0, 1},      {384, 163840, 1}, {1024, 0, 1},   {128, 0, 2},       {128, 163840, 2},
      {384, 163840, 2}, {128, 0, 4},
  };
  const std::vector<int> counts = {1, 8, 32, 66, 132, 264, 528};
  // Many waves of short CTAs (the steady pace of refills), for the smallest CTAs only.
  const std::vector<int> many = {2112, 8448, 33792};
  const std::vector<std::uint64_t> spins = {0, 2000};
  bool first = true;
  for (const Config& c : configs) {
    for (const std::uint64_t spin : spins) {
      std::vector<int> ns = counts;
      if (c.smem == 0 && c.cluster <= 1 && spin == 0 && (c.threads == 128 || c.threads == 32)) {
        ns.insert(ns.end(), many.begin(), many.end());
      }
      for (int n : ns) {
        if (c.cluster > 1 && n % c.cluster != 0) continue;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(n, 1, 1);
        cfg.blockDim = dim3(c.threads, 1, 1);
        cfg.dynamicSmemBytes = static_cast<size_t>(std::max(c.smem, 16));  // the byte it touches
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = c.cluster;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = c.cluster > 0 ? 1 : 0;
        const auto launch = [&] { PROBE_CHECK(cudaLaunchKernelEx(&cfg, stamp, starts, ends, spin)); };
        const float ms = median_ms(launch, 9);
        // One more launch for the stamps.
        launch();
        PROBE_CHECK(cudaDeviceSynchronize());
        std::vector<std::uint64_t> s(n), e(n);
        PROBE_CHECK(cudaMemcpy(s.data(), starts, n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
        PROBE_CHECK(cudaMemcpy(e.data(), ends, n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
        const std::uint64_t t0 = *std::min_element(s.begin(), s.end());
        std::vector<long long> rel(n);
        for (int i = 0; i < n; ++i) rel[i] = static_cast<long long>(s[i] - t0);
        std::sort(rel.begin(), rel.end());
        const long long last_end = static_cast<long long>(*std::max_element(e.begin(), e.end()) - t0);
        std::printf("%s    {\"threads\": %d, \"smem\": %d, \"cluster\": %d, \"spin_ns\": %llu, \"ctas\": %d, "
                    "\"event_us\": %.3f, \"last_end_ns\": %lld, \"start_ns_sorted\": [",
                    first ? "" : ",\n", c.threads, c.smem, c.cluster, static_cast<unsigned long long>(spin), n,
                    ms * 1000.0f, last_end);
        // All start times up to 528 CTAs; beyond, every 64th.
        const int stride = n <= 528 ? 1 : 64;
        for (int i = 0; i < n; i += stride) std::printf("%s%lld", i ? ", " : "", rel[i]);
        std::printf("], \"start_stride\": %d}", stride);
        first = false;
      }
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
