// Shared helper for the occupancy reference tables.
//
// Uses NVIDIA's header-only occupancy calculator <cuda_occupancy.h> (shipped
// with the CUDA toolkit; NOT copied into this repository). Included by
// device_probe.cu (properties read from the real device) and by
// occupancy_reference_datasheet.cpp (properties typed in from datasheets).
#pragma once

#include <cuda_occupancy.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

namespace occgrid {

static const int kThreads[] = {32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
static const int kRegs[] = {16, 24, 32, 34, 40, 48, 56, 64, 72, 80, 96, 128, 168, 183, 200, 232, 255};
static const long kSmem[] = {0, 1024, 4096, 8192, 16384, 32768, 49152, 65536, 100000, 131072, 200000, 232448};

inline std::string limiter_string(unsigned bits) {
  std::string s;
  auto add = [&](const char* n) {
    if (!s.empty()) s += "+";
    s += n;
  };
  if (bits & OCC_LIMIT_WARPS) add("warps");
  if (bits & OCC_LIMIT_REGISTERS) add("registers");
  if (bits & OCC_LIMIT_SHARED_MEMORY) add("shared_memory");
  if (bits & OCC_LIMIT_BLOCKS) add("blocks");
  if (bits & OCC_LIMIT_BARRIERS) add("barriers");
  if (bits & 0x20) add("virtual_resources");
  if (s.empty()) s = "none";
  return s;
}

// Function attributes for a synthetic kernel: numRegs registers/thread, no static
// shared memory, dynamic shared memory opted in up to sharedMemPerBlockOptin,
// one block barrier (what the cudaFuncAttributes conversion constructor uses).
inline cudaOccFuncAttributes synthetic_attrs(const cudaOccDeviceProp& prop, int regs) {
  cudaOccFuncAttributes fa;
  fa.maxThreadsPerBlock = prop.maxThreadsPerBlock;
  fa.numRegs = regs;
  fa.sharedSizeBytes = 0;
  fa.partitionedGCConfig = PARTITIONED_GC_OFF;
  fa.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  fa.maxDynamicSharedSizeBytes = prop.sharedMemPerBlockOptin;
  fa.numBlockBarriers = 1;
  fa.virtualResourceCount = 0;
  return fa;
}

// Writes the full grid as CSV. header_comment lines are written first, each
// prefixed with "# ". Returns the number of data rows written, -1 on I/O error.
inline int write_grid_csv(const char* path, const cudaOccDeviceProp& prop,
                          const std::vector<std::string>& header_comment) {
  FILE* f = std::fopen(path, "w");
  if (!f) return -1;
  for (const auto& l : header_comment) std::fprintf(f, "# %s\n", l.c_str());
  std::fprintf(f, "threads,regs,smem_bytes,ctas_per_sm,warps_per_sm,occupancy,limiter\n");
  const int max_warps = prop.maxThreadsPerMultiprocessor / prop.warpSize;
  cudaOccDeviceState state;  // defaults: CACHE_PREFER_NONE, SHAREDMEM_CARVEOUT_DEFAULT
  int rows = 0;
  for (int t : kThreads)
    for (int r : kRegs)
      for (long s : kSmem) {
        cudaOccFuncAttributes fa = synthetic_attrs(prop, r);
        cudaOccResult res;
        cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&res, &prop, &fa, &state, t, (size_t)s);
        if (e != CUDA_OCC_SUCCESS) {
          std::fprintf(f, "%d,%d,%ld,-1,-1,-1,error_%d\n", t, r, s, (int)e);
        } else {
          int ctas = res.activeBlocksPerMultiprocessor;
          int warps_per_cta = (t + prop.warpSize - 1) / prop.warpSize;
          int warps = ctas * warps_per_cta;
          double occ = max_warps > 0 ? (double)warps / max_warps : 0.0;
          std::fprintf(f, "%d,%d,%ld,%d,%d,%.4f,%s\n", t, r, s, ctas, warps, occ,
                       limiter_string(res.limitingFactors).c_str());
        }
        ++rows;
      }
  std::fclose(f);
  return rows;
}

// Header calculator result for a real kernel's attributes (already converted).
inline int header_ctas(const cudaOccDeviceProp& prop, const cudaOccFuncAttributes& fa, int threads,
                       size_t smem, unsigned* limiter = nullptr) {
  cudaOccDeviceState state;
  cudaOccResult res;
  cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&res, &prop, &fa, &state, threads, smem);
  if (e != CUDA_OCC_SUCCESS) return -1000 - (int)e;
  if (limiter) *limiter = res.limitingFactors;
  return res.activeBlocksPerMultiprocessor;
}

}  // namespace occgrid
