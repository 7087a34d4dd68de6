// The caches (and running steps side by side) must not change a single result: every workload kind
// (dense and MoE, prefill, decode and generate, hf-eager and fused, sdpa and naive attention,
// graph and eager launches, what-if chips) is simulated with reuse and from scratch, and every
// step and every kernel of the detailed steps must agree bit for bit.
#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "hw/kernel_outcome_cache.h"
#include "models/kernel_model.h"
#include "tests/support/temp_files.h"
#include "workloads/model_run.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;

hw::HardwareSpec chip(const std::string& name, std::vector<hw::HardwareOverride> overrides = {}) {
  return hw::load_hardware(name, hw::PresetCatalog(std::vector{config_dir() / "hw", config_dir() / "systems"}), overrides);
}

ModelWorkload model_workload(const std::string& yaml) {
  return std::get<ModelWorkload>(parse_workload(yaml, "test.yaml", {}, config_dir() / "models"));
}

void expect_same_kernels(const hw::EngineResult& a, const hw::EngineResult& b) {
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.events, b.events);
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    const hw::KernelResult& x = a.kernels[i];
    const hw::KernelResult& y = b.kernels[i];
    SCOPED_TRACE(x.name + " (kernel " + std::to_string(i) + ")");
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.start, y.start);
    EXPECT_EQ(x.end, y.end);
    EXPECT_EQ(x.dram_read_bytes, y.dram_read_bytes);
    EXPECT_EQ(x.dram_write_bytes, y.dram_write_bytes);
    EXPECT_EQ(x.l2_read_hit_rate, y.l2_read_hit_rate);
    EXPECT_EQ(x.achieved_occupancy, y.achieved_occupancy);
    EXPECT_EQ(x.clock_hz, y.clock_hz);
    EXPECT_EQ(x.tensor_heavy, y.tensor_heavy);
  }
}

void expect_same_runs(const ModelRun& a, const ModelRun& b) {
  ASSERT_EQ(a.steps.size(), b.steps.size());
  EXPECT_EQ(a.memory.activation_peak_bytes, b.memory.activation_peak_bytes);
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_EQ(a.steps[i].total_us, b.steps[i].total_us);
    EXPECT_EQ(a.steps[i].kernel_time_us, b.steps[i].kernel_time_us);
    EXPECT_EQ(a.steps[i].kernels, b.steps[i].kernels);
    EXPECT_EQ(a.steps[i].events, b.steps[i].events);
    ASSERT_EQ(a.steps[i].detail.has_value(), b.steps[i].detail.has_value());
    if (a.steps[i].detail) expect_same_kernels(a.steps[i].detail->result, b.steps[i].detail->result);
    ASSERT_EQ(a.steps[i].pipeline.size(), b.steps[i].pipeline.size());
    for (std::size_t s = 0; s < a.steps[i].pipeline.size(); ++s) {
      const auto &x = a.steps[i].pipeline[s], &y = b.steps[i].pipeline[s];
      EXPECT_EQ(x.busy_us, y.busy_us);
      EXPECT_EQ(x.idle_us, y.idle_us);
      EXPECT_EQ(x.kernel_time_us, y.kernel_time_us);
      ASSERT_EQ(x.detail.has_value(), y.detail.has_value());
      if (x.detail) expect_same_kernels(x.detail->result, y.detail->result);
    }
  }
}

struct Case {
  std::string name, yaml, hw;
  std::vector<hw::HardwareOverride> overrides;
  hw::LaunchMode mode = hw::LaunchMode::kGraph;
};

std::vector<Case> cases() {
  const std::string tiny = "model: {layers: 3, d_model: 256, heads: 8, kv_heads: 2, d_ff: 512, vocab: 1000, "
                           "norm: rmsnorm, activation: swiglu, positions: rope}\n";
  const std::string tiny_moe =
      "model: {layers: 2, d_model: 256, heads: 8, kv_heads: 4, vocab: 1000, norm: rmsnorm, "
      "activation: swiglu, positions: rope, moe: {experts: 8, top_k: 2, expert_d_ff: 256}}\n";
  const auto e = hw::LaunchMode::kEager;
  return {
      {"llama-decode", "model: llama3-8b\nphase: decode\nbatch: 4\nseq_len: 700\ndtype: bf16\n", "h100", {}},
      {"llama-decode-eager", "model: llama3-8b\nphase: decode\nbatch: 4\nseq_len: 700\ndtype: bf16\n", "h100", {}, e},
      {"llama-prefill", "model: llama3-8b\nphase: prefill\nbatch: 1\nseq_len: 300\ndtype: bf16\n", "h200", {}},
      {"llama-generate", "model: llama3-8b\nphase: generate\nbatch: 2\nseq_len: 100\noutput_len: 6\ndtype: bf16\n", "h100", {}},
      {"llama-generate-fused", "model: llama3-8b\nphase: generate\nbatch: 8\nseq_len: 100\noutput_len: 5\n"
                               "dtype: bf16\nlowering: fused\n", "h100", {}},
      {"tiny-generate-whatif", tiny + "phase: generate\nbatch: 3\nseq_len: 64\noutput_len: 9\ndtype: bf16\n", "h100",
       {{"l2.size", "2MiB"}, {"sm_count", "40"}}},
      {"tiny-generate-eager-rtx", tiny + "phase: generate\nbatch: 1\nseq_len: 33\noutput_len: 7\ndtype: fp32\n",
       "rtx5090", {}, e},
      {"tiny-naive-prefill", tiny + "phase: prefill\nbatch: 2\nseq_len: 128\ndtype: fp16\nattention: naive\n", "a100", {}},
      {"moe-generate", tiny_moe + "phase: generate\nbatch: 4\nseq_len: 50\noutput_len: 5\ndtype: bf16\n", "h100", {}},
      {"moe-decode-fused-fp8", tiny_moe + "phase: decode\nbatch: 16\nseq_len: 300\ndtype: fp8\nlowering: fused\n",
       "h200", {}},
      {"mixtral-decode", "model: mixtral-8x7b\nphase: decode\nbatch: 2\nseq_len: 256\ndtype: bf16\n", "h200", {}},
      // Several GPUs: pipeline stages (each simulated per micro-batch), TP collectives, DDP's side stream.
      {"pipeline-generate-tp", tiny + "phase: generate\nbatch: 4\nseq_len: 64\noutput_len: 5\ndtype: bf16\n"
                               "tensor_parallel: 2\npipeline_parallel: 3\nmicro_batches: 2\n", "dgx-h100", {}},
      {"pipeline-train-dp", tiny + "phase: train\nbatch: 4\nseq_len: 64\ndtype: bf16\npipeline_parallel: 2\n"
                            "micro_batches: 2\ndata_parallel: 2\n", "dgx-h100", {}, e},
  };
}

TEST(Reuse, CachedRunsEqualRunsFromScratch) {
  const auto models = models::default_kernel_models();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const hw::HardwareSpec hw = chip(c.hw, c.overrides);
    const ModelWorkload w = model_workload(c.yaml);
    SimulateOptions scratch;  // one step after the other, every kernel simulated
    scratch.reuse = false;
    scratch.parallel_steps = false;
    const ModelRun reference = simulate_model(w, hw, c.mode, models, scratch);
    expect_same_runs(simulate_model(w, hw, c.mode, models), reference);  // cached, steps in parallel
    SimulateOptions parallel_only;
    parallel_only.reuse = false;
    expect_same_runs(simulate_model(w, hw, c.mode, models, parallel_only), reference);
    // A cache already warm from another run (as a study's points share one) changes nothing.
    hw::KernelOutcomeCache shared(hw);
    SimulateOptions warm;
    warm.cache = &shared;
    simulate_model(w, hw, c.mode, models, warm);
    EXPECT_GT(shared.size(), 0u);
    expect_same_runs(simulate_model(w, hw, c.mode, models, warm), reference);
  }
}

// Traces see every CTA: a recorded run simulates each detailed step's kernels in full, and
// still gives the same results.
TEST(Reuse, RecordedTimelinesAreTheSameWithReuse) {
  const auto models = models::default_kernel_models();
  const hw::HardwareSpec hw = chip("h100");
  const ModelWorkload w = model_workload(
      "model: llama3-8b\nphase: generate\nbatch: 1\nseq_len: 64\noutput_len: 4\ndtype: bf16\n");
  SimulateOptions with, without;
  with.record_timeline = without.record_timeline = true;
  with.record_ctas = without.record_ctas = true;
  without.reuse = false;
  const ModelRun a = simulate_model(w, hw, hw::LaunchMode::kGraph, models, with);
  const ModelRun b = simulate_model(w, hw, hw::LaunchMode::kGraph, models, without);
  expect_same_runs(a, b);
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    if (!a.steps[i].detail) continue;
    ASSERT_TRUE(a.steps[i].detail->timeline && b.steps[i].detail->timeline);
    EXPECT_EQ(a.steps[i].detail->timeline->ctas.size(), b.steps[i].detail->timeline->ctas.size());
    EXPECT_EQ(a.steps[i].detail->timeline->samples.size(), b.steps[i].detail->timeline->samples.size());
  }
}

// A cache handed to a run on another chip is not used (its outcomes would be wrong there).
TEST(Reuse, ACacheForAnotherChipIsNotUsed) {
  const auto models = models::default_kernel_models();
  const hw::HardwareSpec h100 = chip("h100");
  const hw::HardwareSpec smaller = chip("h100", {{"l2.size", "8MiB"}});
  const ModelWorkload w = model_workload("model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 900\ndtype: bf16\n");
  hw::KernelOutcomeCache cache(h100);
  SimulateOptions o;
  o.cache = &cache;
  simulate_model(w, h100, hw::LaunchMode::kGraph, models, o);
  const std::size_t entries = cache.size();
  SimulateOptions scratch;
  scratch.reuse = false;
  expect_same_runs(simulate_model(w, smaller, hw::LaunchMode::kGraph, models, o),
                   simulate_model(w, smaller, hw::LaunchMode::kGraph, models, scratch));
  EXPECT_EQ(cache.size(), entries);
}

}  // namespace
}  // namespace gpusim::workloads
