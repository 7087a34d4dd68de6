// What a model-level workload keeps in device memory (per GPU when it runs on several): weights, the KV cache at its largest, and
// the activation peak of its steps (from the kernel programs: tensors alive between their first
// writer and last reader), against the device's capacity.
#pragma once

#include <cstdint>

#include "hw/hardware_spec.h"
#include "workloads/workload.h"

namespace gpusim::workloads {

struct MemoryFootprint {
  std::int64_t weights_bytes = 0;     // parameters x bytes per parameter of the dtype
  std::int64_t kv_cache_bytes = 0;    // K and V of every layer at the longest cache of the run
  std::int64_t kv_cache_tokens = 0;   // per sequence, at that point
  std::int64_t activation_peak_bytes = 0;
  // Training steps: the parameters' gradients (alive from the backward to the optimizer, so
  // within the activation peak) and the optimizer's state (AdamW: two moments; SGD: momentum).
  std::int64_t gradients_bytes = 0;
  std::int64_t optimizer_state_bytes = 0;
  std::int64_t total_bytes = 0;  // the run's peak: weights, cache, optimizer state, activations
  std::int64_t capacity_bytes = 0;
  bool fits = true;
  // GPUs the workload occupies: every figure above is one GPU's (workloads/parallelism.h).
  int gpus = 1;
};

// `activation_peak_bytes` comes from the step programs (the largest over steps).
MemoryFootprint memory_footprint(const ModelWorkload& w, double activation_peak_bytes,
                                 const hw::HardwareSpec& hw);

}  // namespace gpusim::workloads
