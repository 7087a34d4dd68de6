// How fast a design study runs: configs/studies/decode-1000.yaml (1,000 Llama-3-8B decode
// points) through `gpusim sweep`'s runner, with 1 and 2 threads, into a fresh folder each time
// (nothing resumed). The target: under a minute on two cores.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "src/study.h"
#include "src/sweep_runner.h"

namespace {

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;

void BM_Decode1000PointStudy(benchmark::State& state) {
  const auto study = gpusim::cli::load_study(kRepo / "configs" / "studies" / "decode-1000.yaml");
  const gpusim::cli::Environment env{kRepo / "configs", false};
  const auto out = std::filesystem::temp_directory_path() / "gpusim_sweep_bench";
  for (auto _ : state) {
    std::filesystem::remove_all(out);
    gpusim::cli::SweepOptions o;
    o.out_dir = out;
    o.threads = static_cast<int>(state.range(0));
    benchmark::DoNotOptimize(gpusim::cli::run_sweep(study, env, o));
  }
  std::filesystem::remove_all(out);
  state.counters["points"] = static_cast<double>(study.points.size());
}
BENCHMARK(BM_Decode1000PointStudy)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
