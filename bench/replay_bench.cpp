// How fast `gpusim replay` re-simulates a recorded trace, from the file to the engine's result
// (reading, parsing, mapping, simulating), against the trace's recorded kernel time: the issue's
// target is less wall time than the GPU time recorded. Counter `x_gpu`: recorded kernel time over
// wall time (above 1: faster than the GPU ran it).
#include <benchmark/benchmark.h>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "replay/profiler_trace.h"
#include "replay/replay_run.h"

namespace {

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;

void replay_trace(benchmark::State& state, const std::string& program) {
  const auto hw = gpusim::hw::load_hardware("h100", gpusim::hw::PresetCatalog(kRepo / "configs" / "hw"));
  const auto models = gpusim::models::default_kernel_models();
  const auto file = kRepo / "validation" / "data" / "traces" / ("replay_h100_" + program + ".json.gz");
  const double recorded_us = gpusim::replay::recorded_kernel_time_us(gpusim::replay::read_profiler_trace(file));
  std::size_t kernels = 0;
  for (auto _ : state) {
    const auto trace = gpusim::replay::read_profiler_trace(file);
    const auto run = gpusim::replay::run_replay(trace, hw, nullptr, models);
    kernels = run.nodes.size();
    benchmark::DoNotOptimize(run.kernel_time_us);
  }
  state.counters["kernels"] = static_cast<double>(kernels);
  state.counters["recorded_ms"] = recorded_us / 1000;
  // Recorded GPU seconds per wall second (kIsRate divides by the wall time).
  state.counters["x_gpu"] = benchmark::Counter(recorded_us * 1e-6 * static_cast<double>(state.iterations()),
                                               benchmark::Counter::kIsRate);
}

// 1,206 GPU activities, 6.5 ms of kernel time: MoE decode (routing, grouped experts).
void BM_ReplayQwen3MoeDecode(benchmark::State& state) { replay_trace(state, "qwen3-moe-4l_decode_b8_l1024"); }
// 1,434 activities, 41 ms: a GPT-2 training step (forward, backward, AdamW).
void BM_ReplayGpt2Train(benchmark::State& state) { replay_trace(state, "gpt2-medium-6l_train_b4_s512"); }
// 3,246 activities of 2.5 us on average, 8.2 ms: the hardest case (batch-1 decode, 24 layers).
void BM_ReplayQwen2Decode24Layers(benchmark::State& state) { replay_trace(state, "qwen2-0.5b-24l_decode_b1_l4096"); }

}  // namespace

BENCHMARK(BM_ReplayQwen3MoeDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayGpt2Train)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayQwen2Decode24Layers)->Unit(benchmark::kMillisecond);
