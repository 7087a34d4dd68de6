// How fast `gpusim serve` runs: 1,000 requests through Llama-3-8B on an H100 with vLLM V1's
// defaults (the target: at most 10 s of wall time on one core). BM_Serve1000Requests:
// prompts 16-1024 tokens, outputs 16-512 (uniform), Poisson at 20 a second, batches of tens to
// hundreds of sequences. BM_Serve1000ShareGptRequests: ShareGPT conversations' lengths
// (configs/distributions/sharegpt-8k.csv), Poisson at 4 a second. Counters: steps simulated, and
// simulated seconds served per wall second.
#include <benchmark/benchmark.h>

#include <fstream>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "serve/serve_run.h"
#include "serve/serve_spec.h"

namespace {

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;

void serve_1000(benchmark::State& state, const std::string& name, const std::string& requests) {
  const auto file = std::filesystem::temp_directory_path() / ("gpusim_bench_" + name + ".yaml");
  std::ofstream(file) << "model: llama3-8b\ndtype: bf16\nrequests:\n" << requests;
  const auto spec = gpusim::serve::load_serve_spec(file, {}, kRepo / "configs" / "engines", kRepo / "configs" / "models");
  const auto hw = gpusim::hw::load_hardware("h100", gpusim::hw::PresetCatalog(kRepo / "configs" / "hw"));
  const auto models = gpusim::models::default_kernel_models();
  double served_s = 0, steps = 0;
  for (auto _ : state) {
    const auto r = gpusim::serve::run_serve(spec, hw, models);
    served_s = r.end_s;
    steps = static_cast<double>(r.steps.size());
  }
  state.counters["steps"] = steps;
  state.counters["served_s"] = served_s;
  state.counters["x_realtime"] =
      benchmark::Counter(served_s * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Serve1000RequestsLlama8bH100(benchmark::State& state) {
  serve_1000(state, "uniform",
             "  count: 1000\n  arrival: poisson\n  rate: 20\n  prompt_tokens: {uniform: [16, 1024]}\n"
             "  output_tokens: {uniform: [16, 512]}\n  seed: 1\n");
}

void BM_Serve1000ShareGptRequestsLlama8bH100(benchmark::State& state) {
  serve_1000(state, "sharegpt", "  count: 1000\n  arrival: poisson\n  rate: 4\n  lengths: sharegpt-8k\n  seed: 1\n");
}

}  // namespace

BENCHMARK(BM_Serve1000RequestsLlama8bH100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Serve1000ShareGptRequestsLlama8bH100)->Unit(benchmark::kMillisecond)->Iterations(1);
