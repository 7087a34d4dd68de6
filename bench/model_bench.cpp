// How fast gpusim simulates whole model steps: the default job (Llama 3 8B decode, batch 16,
// KV 1024, hf-eager: ~1,460 kernels) from workload to engine result, its lowering alone, and
// a prefill. The H100 runs that decode step in about 11 ms.
#include <benchmark/benchmark.h>

#include <optional>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "workloads/layer_repeat.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace {

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;

gpusim::hw::HardwareSpec h100() {
  return gpusim::hw::load_hardware("h100", gpusim::hw::PresetCatalog(kRepo / "configs" / "hw"));
}

gpusim::workloads::ModelWorkload job(const std::string& name) {
  return std::get<gpusim::workloads::ModelWorkload>(gpusim::workloads::load_workload(
      kRepo / "configs" / "workloads" / (name + ".yaml"), {}, kRepo / "configs" / "models"));
}

// Simulates the shipped job `name` once per iteration with `options` (whose cache, when set, stays
// warm across iterations).
void simulate_job(benchmark::State& state, const std::string& name,
                  const gpusim::workloads::SimulateOptions& options = {}) {
  const auto hw = h100();
  const auto models = gpusim::models::default_kernel_models();
  const auto w = job(name);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpusim::workloads::simulate_model(w, hw, gpusim::hw::LaunchMode::kGraph, models, options));
  }
}

void BM_Llama8bDecodeStep(benchmark::State& state) { simulate_job(state, "decode"); }

// The same step with kernel outcomes already known (as for every step of a generate run after
// the first, and for a study's points on one chip): lowering, L2 tracking, cache look-ups.
void BM_Llama8bDecodeStepWarm(benchmark::State& state) {
  gpusim::hw::KernelOutcomeCache cache(h100());
  gpusim::workloads::SimulateOptions options;
  options.cache = &cache;
  simulate_job(state, "decode", options);
}

void BM_Llama8bDecodeStepFromScratch(benchmark::State& state) {
  gpusim::workloads::SimulateOptions options;
  options.reuse = false;
  simulate_job(state, "decode", options);
}

// The engine alone on the step's kernels (lowered once), outcomes known.
void BM_Llama8bDecodeEngineWarm(benchmark::State& state) {
  const auto hw = h100();
  auto steps = gpusim::workloads::build_steps(job("decode"), hw, gpusim::models::default_kernel_models());
  const auto nodes = std::move(steps.front().dag).to_nodes();
  gpusim::hw::KernelOutcomeCache cache(hw);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpusim::hw::run_engine(hw, gpusim::hw::LaunchMode::kGraph, nodes, nullptr, &cache));
  }
}

void BM_Llama8bDecodeLoweringOnly(benchmark::State& state) {
  const auto hw = h100();
  const auto models = gpusim::models::default_kernel_models();
  const auto w = job("decode");
  for (auto _ : state) benchmark::DoNotOptimize(gpusim::workloads::build_steps(w, hw, models));
}

void BM_Llama8bPrefill2048(benchmark::State& state) { simulate_job(state, "prefill"); }

// A training step (configs/workloads/train.yaml: Qwen3-1.7B, batch 8 x 1024, AdamW; about 6,000
// kernels, 310 ms of H100 kernel time), simulated whole: its backward does not repeat the
// forward's layers, so no layer extension.
void BM_Qwen3TrainStep(benchmark::State& state) { simulate_job(state, "train"); }

// One step's totals, as a generate run simulates its middle steps and serving every step: three
// layers lowered and the rest renamed (workloads/layer_repeat.h). Cold: lowering and kernel
// outcomes from scratch in every iteration; warm: both kept, as from one step to the next.
void step_totals(benchmark::State& state, const std::string& name, bool warm) {
  const auto hw = h100();
  const auto models = gpusim::models::default_kernel_models();
  const auto w = job(name);
  const auto [phase, shape] = gpusim::workloads::step_shapes(w).front();
  std::optional<gpusim::workloads::OpLoweringCache> lowering;
  std::optional<gpusim::hw::KernelOutcomeCache> cache;
  for (auto _ : state) {
    if (!warm || !cache) {
      lowering.emplace(hw, models);
      cache.emplace(hw);
    }
    const auto step = gpusim::workloads::simulate_repeating_layers(w, phase, shape, *lowering,
                                                                   gpusim::hw::LaunchMode::kGraph, *cache);
    if (!step || !step->run.extended) state.SkipWithError("the step was not extended");
    benchmark::DoNotOptimize(step);
  }
}
void BM_Llama8bDecodeStepTotals(benchmark::State& state) { step_totals(state, "decode", false); }
void BM_Llama8bDecodeStepTotalsWarm(benchmark::State& state) { step_totals(state, "decode", true); }
void BM_Llama8bPrefill2048Totals(benchmark::State& state) { step_totals(state, "prefill", false); }

}  // namespace

BENCHMARK(BM_Llama8bDecodeStep)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bDecodeStepWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bDecodeEngineWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bDecodeStepFromScratch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bDecodeLoweringOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bPrefill2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Qwen3TrainStep)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bDecodeStepTotals)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bDecodeStepTotalsWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama8bPrefill2048Totals)->Unit(benchmark::kMillisecond);
