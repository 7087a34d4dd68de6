// probe_timing.h: what the small CUDA probes (sm_port_probe.cu, l1_sector_probe.cu) share: a
// check that names the failing call, the report's opening, and the median time of a launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

// Exits with the file, line and CUDA's message when a CUDA call fails.
#define PROBE_CHECK(x)                                                                 \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// The device's properties and SM clock (kHz), having printed the start of the probe's JSON report
// (tool, device, date, SMs, clock) up to its "rows" array.
inline cudaDeviceProp open_report(const char* tool, int* clock_khz) {
  cudaDeviceProp prop;
  PROBE_CHECK(cudaGetDeviceProperties(&prop, 0));
  PROBE_CHECK(cudaDeviceGetAttribute(clock_khz, cudaDevAttrClockRate, 0));
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::printf("{\n  \"tool\": \"%s\",\n  \"device\": \"%s\",\n", tool, prop.name);
  std::printf("  \"date_utc\": \"%s\",\n  \"sm_count\": %d,\n  \"clock_khz\": %d,\n  \"rows\": [\n", date,
              prop.multiProcessorCount, *clock_khz);
  return prop;
}

// The median over `reps` launches of `launch` (CUDA events around each), after one untimed
// launch that warms caches up, in milliseconds.
template <class Launch>
float median_ms(Launch launch, int reps = 7) {
  cudaEvent_t a, b;
  PROBE_CHECK(cudaEventCreate(&a));
  PROBE_CHECK(cudaEventCreate(&b));
  launch();
  PROBE_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int rep = 0; rep < reps; ++rep) {
    PROBE_CHECK(cudaEventRecord(a));
    launch();
    PROBE_CHECK(cudaEventRecord(b));
    PROBE_CHECK(cudaEventSynchronize(b));
    float t = 0;
    PROBE_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  PROBE_CHECK(cudaEventDestroy(a));
  PROBE_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}
