// Steps extended from their first repeating layers (workloads/layer_repeat.h) must give the whole
// step's totals bit for bit: for dense and MoE models (with dense first layers), prefill and
// decode, hf-eager and fused, graph and eager launches, and L2 sizes that the step fills early,
// midway or never, every step is simulated both ways and compared.
#include "workloads/layer_repeat.h"

#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "hw/kernel_outcome_cache.h"
#include "hw/serial_chain.h"
#include "models/kernel_model.h"
#include "tests/support/temp_files.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;

hw::HardwareSpec chip(const std::string& name, std::vector<hw::HardwareOverride> overrides = {}) {
  return hw::load_hardware(name, hw::PresetCatalog(config_dir() / "hw"), overrides);
}

ModelWorkload model_workload(const std::string& yaml) {
  return std::get<ModelWorkload>(parse_workload(yaml, "test.yaml", {}, config_dir() / "models"));
}

struct Case {
  std::string name, yaml, hw;
  std::vector<hw::HardwareOverride> overrides = {};
  hw::LaunchMode mode = hw::LaunchMode::kGraph;
  bool extends = true;  // has more layers of the repeating kind than the three lowered
};

std::vector<Case> cases() {
  const std::string llama = "model: llama3-8b\ndtype: bf16\n";
  const std::string small = "model: {layers: 9, d_model: 512, heads: 8, kv_heads: 2, d_ff: 1024, vocab: 2000, "
                            "norm: rmsnorm, activation: swiglu, positions: rope}\ndtype: bf16\n";
  const std::string moe_dense_first =
      "model: {layers: 7, d_model: 256, heads: 8, kv_heads: 4, d_ff: 512, vocab: 1000, norm: rmsnorm, "
      "activation: swiglu, positions: rope, moe: {experts: 8, top_k: 2, expert_d_ff: 256, dense_layers: 2, "
      "shared_experts: 1}}\ndtype: bf16\n";
  const std::string gpt2 = "model: gpt2-small\ndtype: fp32\n";
  const auto e = hw::LaunchMode::kEager;
  return {
      {"llama-decode-b1", llama + "phase: decode\nbatch: 1\nseq_len: 600\n", "h100"},  // L2 fills midway
      {"llama-decode-b1-eager", llama + "phase: decode\nbatch: 1\nseq_len: 600\n", "h100", {}, e},
      {"llama-decode-b16", llama + "phase: decode\nbatch: 16\nseq_len: 1024\n", "h100", {}, e},
      {"llama-prefill", llama + "phase: prefill\nbatch: 1\nseq_len: 200\n", "h200"},
      {"llama-decode-fused", llama + "phase: decode\nbatch: 8\nseq_len: 300\nlowering: fused\n", "h100", {}, e},
      {"llama-decode-big-l2", llama + "phase: decode\nbatch: 1\nseq_len: 64\n", "h100", {{"l2.size", "1GiB"}}},
      {"small-decode-tiny-l2", small + "phase: decode\nbatch: 2\nseq_len: 100\n", "h100", {{"l2.size", "1MiB"}}, e},
      {"small-prefill-rtx", small + "phase: prefill\nbatch: 1\nseq_len: 64\n", "rtx5090", {}, e},
      {"small-naive", small + "phase: decode\nbatch: 3\nseq_len: 50\nattention: naive\n", "a100"},
      {"moe-dense-first", moe_dense_first + "phase: decode\nbatch: 4\nseq_len: 80\n", "h100", {}, e},
      {"moe-dense-first-fused", moe_dense_first + "phase: decode\nbatch: 4\nseq_len: 80\nlowering: fused\n", "h200"},
      {"gpt2-decode-eager", gpt2 + "phase: decode\nbatch: 2\nseq_len: 100\n", "h100", {}, e},
      {"mixtral-decode", "model: mixtral-8x7b\nphase: decode\nbatch: 2\nseq_len: 256\ndtype: bf16\n", "h200"},
      {"too-few-layers", "model: {layers: 3, d_model: 256, heads: 8, kv_heads: 2, d_ff: 512, vocab: 1000, "
                         "norm: rmsnorm, activation: swiglu, positions: rope}\ndtype: bf16\nphase: decode\n"
                         "batch: 1\nseq_len: 10\n", "h100", {}, e, false},
  };
}

// A listed extended step's kernel against the engine's on the whole step: everything reports
// use, and the tensor lists where the extended step keeps them.
void expect_same_kernel(const hw::KernelNode& node, const hw::KernelResult& k, const hw::KernelNode& whole_node,
                        const hw::KernelResult& whole) {
  EXPECT_EQ(node.op, whole_node.op);
  EXPECT_EQ(node.stream, whole_node.stream);
  EXPECT_EQ(node.deps, whole_node.deps);
  EXPECT_EQ(node.launch.name, whole_node.launch.name);
  EXPECT_TRUE(hw::same_launch_timing(node.launch, whole_node.launch));
  if (!node.launch.reads.empty() || !node.launch.writes.empty()) {
    ASSERT_EQ(node.launch.reads.size(), whole_node.launch.reads.size());
    for (std::size_t i = 0; i < node.launch.reads.size(); ++i) {
      EXPECT_EQ(node.launch.reads[i].tensor, whole_node.launch.reads[i].tensor);
    }
    ASSERT_EQ(node.launch.writes.size(), whole_node.launch.writes.size());
    for (std::size_t i = 0; i < node.launch.writes.size(); ++i) {
      EXPECT_EQ(node.launch.writes[i].tensor, whole_node.launch.writes[i].tensor);
    }
  }
  EXPECT_EQ(k.name, whole.name);
  EXPECT_EQ(k.op, whole.op);
  EXPECT_EQ(k.family, whole.family);
  EXPECT_EQ(k.start, whole.start);
  EXPECT_EQ(k.end, whole.end);
  EXPECT_EQ(k.tensor_flops, whole.tensor_flops);
  EXPECT_EQ(k.fp32_flops, whole.fp32_flops);
  EXPECT_EQ(k.sfu_ops, whole.sfu_ops);
  EXPECT_EQ(k.l2_bytes, whole.l2_bytes);
  EXPECT_EQ(k.dram_read_bytes, whole.dram_read_bytes);
  EXPECT_EQ(k.dram_write_bytes, whole.dram_write_bytes);
  EXPECT_EQ(k.l2_read_hit_rate, whole.l2_read_hit_rate);
  EXPECT_EQ(k.ctas_per_sm, whole.ctas_per_sm);
  EXPECT_EQ(k.theoretical_occupancy, whole.theoretical_occupancy);
  EXPECT_EQ(k.achieved_occupancy, whole.achieved_occupancy);
  EXPECT_EQ(k.waves, whole.waves);
  EXPECT_EQ(k.clock_hz, whole.clock_hz);
  EXPECT_EQ(k.tensor_heavy, whole.tensor_heavy);
}

TEST(LayerRepeat, ExtendedStepsEqualWholeSteps) {
  const auto models = models::default_kernel_models();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const hw::HardwareSpec hw = chip(c.hw, c.overrides);
    ModelWorkload w = model_workload(c.yaml);
    for (const auto& [phase, shape] : step_shapes(w)) {
      OpLoweringCache lowering(hw, models);
      hw::KernelOutcomeCache cache(hw);
      const auto extended = simulate_repeating_layers(w, phase, shape, lowering, c.mode, cache);
      ASSERT_TRUE(extended.has_value());
      EXPECT_EQ(extended->run.extended, c.extends);
      const StepProgram whole = build_step(w, phase, shape, lowering);
      const hw::EngineResult r = hw::run_engine(hw, c.mode, whole.dag.to_nodes());  // no cache at all
      double kernel_time_us = 0;
      for (const auto& k : r.kernels) kernel_time_us += k.duration().us();
      EXPECT_EQ(extended->run.total_us, r.end.us());
      EXPECT_EQ(extended->run.kernel_time_us, kernel_time_us);
      EXPECT_EQ(extended->run.kernels, static_cast<std::int64_t>(whole.dag.size()));
      EXPECT_EQ(extended->run.events, r.events);
      EXPECT_EQ(extended->activation_peak_bytes, whole.activation_peak_bytes);
      EXPECT_FALSE(extended->run.detail.has_value());

      // Listed: every kernel as the engine reports it on the whole step.
      const auto listed = simulate_repeating_layers(w, phase, shape, lowering, c.mode, cache, true);
      ASSERT_TRUE(listed.has_value());
      ASSERT_TRUE(listed->run.detail.has_value());
      EXPECT_EQ(listed->run.total_us, extended->run.total_us);
      EXPECT_EQ(listed->run.events, extended->run.events);
      const auto whole_nodes = whole.dag.to_nodes();
      const StepDetail& d = *listed->run.detail;
      ASSERT_EQ(d.nodes.size(), whole_nodes.size());
      ASSERT_EQ(d.result.kernels.size(), r.kernels.size());
      EXPECT_EQ(d.result.end, r.end);
      EXPECT_EQ(d.result.events, r.events);
      for (std::size_t i = 0; i < whole_nodes.size(); ++i) {
        SCOPED_TRACE("kernel " + std::to_string(i));
        expect_same_kernel(d.nodes[i], d.result.kernels[i], whole_nodes[i], r.kernels[i]);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// The serial chain is run_engine for one stream: every kernel of a step, each alone.
TEST(LayerRepeat, SerialChainEqualsTheEngineKernelByKernel) {
  const auto models = models::default_kernel_models();
  const hw::HardwareSpec hw = chip("h100", {{"l2.size", "4MiB"}});
  const ModelWorkload w = model_workload("model: llama3-8b\ndtype: bf16\nphase: decode\nbatch: 2\nseq_len: 200\n");
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(w, "decode", {2, 1, 200}, lowering);
  const auto nodes = step.dag.to_nodes();
  for (const auto mode : {hw::LaunchMode::kGraph, hw::LaunchMode::kEager}) {
    const hw::EngineResult r = hw::run_engine(hw, mode, nodes);
    hw::KernelOutcomeCache cache(hw);
    hw::SerialChain chain(hw, mode, cache);
    std::unordered_map<std::string, std::int32_t> ids;
    auto accesses = [&](const std::vector<hw::TensorUse>& uses) {
      std::vector<hw::TensorAccess> out;
      for (const auto& u : uses) out.push_back({ids.try_emplace(u.tensor, static_cast<std::int32_t>(ids.size())).first->second, u.bytes, u.evict_first});
      return out;
    };
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      chain.run(nodes[i].launch, accesses(nodes[i].launch.reads), accesses(nodes[i].launch.writes), nodes[i].host_gap,
                nodes[i].host_sync);
      ASSERT_EQ(chain.end(), r.kernels[i].end) << "kernel " << i;
    }
    EXPECT_EQ(chain.events(), r.events);
    EXPECT_LT(cache.size(), nodes.size());  // layers repeat: outcomes were reused
  }
}

// A chip the model cannot run on fails as the engine fails, naming the kernel.
TEST(LayerRepeat, AKernelTheChipCannotRunFailsAsInTheEngine) {
  const auto models = models::default_kernel_models();
  const hw::HardwareSpec hw = chip("h100", {{"sm.shared_memory_per_cta", "2KiB"}});
  const ModelWorkload w = model_workload("model: llama3-8b\ndtype: bf16\nphase: decode\nbatch: 1\nseq_len: 64\n");
  OpLoweringCache lowering(hw, models);
  hw::KernelOutcomeCache cache(hw);
  std::string from_engine, from_chain;
  try {
    hw::run_engine(hw, hw::LaunchMode::kGraph, build_step(w, "decode", {1, 1, 64}, lowering).dag.to_nodes());
  } catch (const ModelError& e) {
    from_engine = e.what();
  }
  try {
    simulate_repeating_layers(w, "decode", {1, 1, 64}, lowering, hw::LaunchMode::kGraph, cache);
  } catch (const ModelError& e) {
    from_chain = e.what();
  }
  EXPECT_FALSE(from_engine.empty());
  EXPECT_EQ(from_chain, from_engine);
}

}  // namespace
}  // namespace gpusim::workloads
