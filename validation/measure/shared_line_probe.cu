// shared_line_probe.cu: how long CTAs wait when many of them read the same L2 lines at once.
//
// Issue 16's fourteenth to sixteenth rounds found one-wave GEMM launches (nvjet, gemmSN, wmma,
// sm80_xmma) growing 3-8 ns a CTA at fixed work per CTA, where elementwise kernels grow only with
// their bytes, and the block scheduler starts a plain launch's first wave together
// (cta_dispatch_probe.cu). GEMM CTAs read shared operand lines (an x row every gemmSN CTA reads, an
// A slab every tile of a row reads) at the same moment; elementwise CTAs read lines of their own.
// This probe launches N CTAs (one an SM up to the SM count) whose threads each load one 4-byte word
// of `lines` 128-byte lines, either the same lines for every CTA (shared) or lines of their own
// (distinct), after an L2 flush (cold) or with the lines resident (warm), and records per CTA the
// %globaltimer span from before its loads to after all of them (a __syncthreads), and the launch's
// CUDA-event time.
//
// Build and run (GPU machine, repository root):
//   nvcc -O2 -arch=sm_90 -std=c++17 -o /tmp/shared_line_probe validation/measure/shared_line_probe.cu
//   /tmp/shared_line_probe > $OUT/shared_line_<gpu>.json
//   SHARED_LINE_COUNTS=1,2,4,8,16,32,64,128 /tmp/shared_line_probe > $OUT/shared_line2_<gpu>.json
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_timing.h"

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

constexpr int kWordsPerLine = 32;  // 128-byte lines of 4-byte words

// Thread t < lines of each CTA loads word 0 of line t of the CTA's range (L1 bypassed); the CTA's
// range starts at blockIdx.x * stride words (stride 0: every CTA the same lines).
__global__ void read_lines(const int* src, long long stride, int lines, int* sink, std::uint64_t* spans) {
  const std::uint64_t t0 = global_ns();
  int v = 0;
  if (static_cast<int>(threadIdx.x) < lines) {
    v = __ldcg(src + blockIdx.x * stride + static_cast<long long>(threadIdx.x) * kWordsPerLine);
  }
  v = __syncthreads_count(v != 0x7fffffff);  // every load has arrived
  const std::uint64_t t1 = global_ns();
  if (threadIdx.x == 0) {
    spans[2 * blockIdx.x] = t0;
    spans[2 * blockIdx.x + 1] = t1;
    if (v < 0) sink[blockIdx.x] = v;  // never true: keeps the loads
  }
}

int main() {
  int clock_khz = 0;
  const cudaDeviceProp prop = open_report("shared_line_probe", &clock_khz);
  const int sms = prop.multiProcessorCount;
  const int max_ctas = 2 * sms;
  const int max_lines = 128;  // threads a CTA has
  const long long words = static_cast<long long>(max_ctas) * max_lines * kWordsPerLine;
  int *src = nullptr, *sink = nullptr;
  unsigned char* flush = nullptr;
  std::uint64_t* spans = nullptr;
  const size_t flush_bytes = 256u << 20;
  PROBE_CHECK(cudaMalloc(&src, words * sizeof(int)));
  PROBE_CHECK(cudaMemset(src, 1, words * sizeof(int)));
  PROBE_CHECK(cudaMalloc(&sink, max_ctas * sizeof(int)));
  PROBE_CHECK(cudaMalloc(&flush, flush_bytes));
  PROBE_CHECK(cudaMalloc(&spans, 2 * max_ctas * sizeof(std::uint64_t)));

  const int counts[] = {1, 2, 4, 8, 16, 32, 64, 96, 132, 264};
  bool first = true;
  // SHARED_LINE_COUNTS (a comma-separated list) sets the lines a CTA loads; 1 and 64 by default.
  std::vector<int> line_counts = {1, 64};
  if (const char* env = std::getenv("SHARED_LINE_COUNTS")) {
    line_counts.clear();
    for (const char* c = env; *c != '\0';) {
      line_counts.push_back(std::atoi(c));
      while (*c != '\0' && *c != ',') ++c;
      if (*c == ',') ++c;
    }
  }
  for (const int lines : line_counts) {
    for (const bool shared : {true, false}) {
      for (const bool cold : {true, false}) {
        for (const int n : counts) {
          if (n > max_ctas) continue;
          const long long stride = shared ? 0 : static_cast<long long>(lines) * kWordsPerLine;
          const int reps = 7;
          std::vector<double> worst, median, event;
          for (int rep = 0; rep < reps; ++rep) {
            if (cold) {
              PROBE_CHECK(cudaMemset(flush, rep, flush_bytes));
            } else {
              read_lines<<<n, 128>>>(src, stride, lines, sink, spans);  // the lines resident
            }
            cudaEvent_t a, b;
            PROBE_CHECK(cudaEventCreate(&a));
            PROBE_CHECK(cudaEventCreate(&b));
            PROBE_CHECK(cudaEventRecord(a));
            read_lines<<<n, 128>>>(src, stride, lines, sink, spans);
            PROBE_CHECK(cudaEventRecord(b));
            PROBE_CHECK(cudaEventSynchronize(b));
            float ms = 0;
            PROBE_CHECK(cudaEventElapsedTime(&ms, a, b));
            PROBE_CHECK(cudaEventDestroy(a));
            PROBE_CHECK(cudaEventDestroy(b));
            std::vector<std::uint64_t> host(2 * n);
            PROBE_CHECK(cudaMemcpy(host.data(), spans, host.size() * sizeof(std::uint64_t),
                                   cudaMemcpyDeviceToHost));
            std::vector<double> s(n);
            for (int i = 0; i < n; ++i) s[i] = static_cast<double>(host[2 * i + 1] - host[2 * i]);
            std::sort(s.begin(), s.end());
            worst.push_back(s.back());
            median.push_back(s[n / 2]);
            event.push_back(ms * 1000.0);
          }
          const auto med = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
          };
          std::printf("%s    {\"lines\": %d, \"shared\": %s, \"cold\": %s, \"ctas\": %d, "
                      "\"span_max_ns\": %.0f, \"span_median_ns\": %.0f, \"event_us\": %.3f}",
                      first ? "" : ",\n", lines, shared ? "true" : "false", cold ? "true" : "false", n,
                      med(worst), med(median), med(event));
          first = false;
        }
      }
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
