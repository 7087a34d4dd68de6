// How fast the engine simulates: kernels and CTAs per second of host time, for a decode-like
// mix of ops (norms, skinny GEMMs, decode attention, elementwise) lowered by the real cost
// models, and for 1,000 mixed kernels.
#include <benchmark/benchmark.h>

#include "src/allocator_tuning.h"

#include <fmt/format.h>

#include "hw/gpu_engine.h"
#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "models/op.h"

namespace {

using gpusim::hw::DType;
using gpusim::models::Op;
using gpusim::models::OpKind;

gpusim::hw::HardwareSpec h100() {
  return gpusim::hw::load_hardware(
      "h100", gpusim::hw::PresetCatalog(std::filesystem::path(GPUSIM_REPO_DIR) / "configs" / "hw"));
}

// One Llama-3-8B-like decode layer at batch 16, KV length 1024, as framework-level ops.
std::vector<Op> decode_layer_ops() {
  const std::int64_t B = 16, d = 4096, ff = 14336;
  using namespace gpusim::models;
  return {
      Op(OpKind::kRmsNorm, DType::kBf16, RowShape{B, d}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{B, 6144, d, false}),
      Op(OpKind::kMul, DType::kBf16, ElementwiseShape{B * 6144}),
      Op(OpKind::kSdpaDecode, DType::kBf16, SdpaDecodeShape{B, 32, 8, 1024, 128}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{B, d, d, false}),
      Op(OpKind::kAdd, DType::kBf16, ElementwiseShape{B * d}),
      Op(OpKind::kRmsNorm, DType::kBf16, RowShape{B, d}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{B, 2 * ff, d, false}),
      Op(OpKind::kSilu, DType::kBf16, ElementwiseShape{B * ff}),
      Op(OpKind::kMul, DType::kBf16, ElementwiseShape{B * ff}),
      Op(OpKind::kLinear, DType::kBf16, LinearShape{B, d, ff, false}),
      Op(OpKind::kAdd, DType::kBf16, ElementwiseShape{B * d}),
  };
}

std::vector<gpusim::hw::KernelNode> lower(const std::vector<Op>& ops, const gpusim::hw::HardwareSpec& hw,
                                          std::size_t max_kernels) {
  const auto models = gpusim::models::default_kernel_models();
  std::vector<gpusim::hw::KernelNode> nodes;
  for (std::size_t i = 0; nodes.size() < max_kernels; ++i) {
    const Op& op = ops[i % ops.size()];
    for (auto& l : models.lower(op, hw, fmt::format("op{}", i))) {
      if (nodes.size() < max_kernels) nodes.push_back({std::move(l), "op", 0, {}, std::nullopt});
    }
  }
  return nodes;
}

void run_bench(benchmark::State& state, std::size_t kernels) {
  const auto hw = h100();
  const auto nodes = lower(decode_layer_ops(), hw, kernels);
  double ctas = 0;
  for (const auto& n : nodes) ctas += static_cast<double>(n.launch.cta_count());
  for (auto _ : state) {
    auto result = gpusim::hw::run_engine(hw, gpusim::hw::LaunchMode::kGraph, nodes);
    benchmark::DoNotOptimize(result);
  }
  state.counters["kernels/s"] = benchmark::Counter(static_cast<double>(nodes.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
  state.counters["CTAs/s"] = benchmark::Counter(ctas * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["kernels"] = static_cast<double>(nodes.size());
}

// About the kernel count of one 32-layer decode step (issue 3 asks for well under 10 ms).
void BM_DecodeStep1500Kernels(benchmark::State& state) { run_bench(state, 1500); }
void BM_Mixed1000Kernels(benchmark::State& state) { run_bench(state, 1000); }

BENCHMARK(BM_DecodeStep1500Kernels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Mixed1000Kernels)->Unit(benchmark::kMillisecond);

}  // namespace

// As gpusim's main does (src/allocator_tuning.h).
int main(int argc, char** argv) {
  gpusim::cli::tune_allocator();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
