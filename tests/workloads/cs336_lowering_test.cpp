// The cs336_basics lowering: the kernels its code launches per layer, in order; no KV cache;
// forward passes of its one architecture only (bad input names the key, exit status 2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"
#include "workloads/memory_footprint.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;

ModelWorkload workload(const std::string& yaml) { return gpusim::testing::model_workload(yaml, "test.yaml"); }

hw::HardwareSpec rtx5090() { return hw::load_hardware("rtx5090", hw::PresetCatalog(config_dir() / "hw"), {}); }

// The framework ops of layer 0, each once in launch order (a GEMM's split-K reduce is the same op).
std::vector<std::string> layer0_ops(const KernelDag& dag) {
  std::vector<std::string> ops;
  for (std::size_t v = 0; v < dag.size(); ++v) {
    const std::string& op = dag[static_cast<KernelDag::Vertex>(v)].op;
    if (op.rfind("layers[0].", 0) != 0) continue;
    const std::string local = op.substr(10);
    if (ops.empty() || ops.back() != local) ops.push_back(local);
  }
  return ops;
}

TEST(Cs336Lowering, ALayerLaunchesWhatTheCodeDoes) {
  const auto models = models::default_kernel_models();
  const auto hw = rtx5090();
  const ModelWorkload w = workload("model: cs336-small\nphase: prefill\nbatch: 4\nseq_len: 256\ndtype: fp32\nlowering: cs336-basics\n");
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(w, "prefill", {4, 256, 0}, lowering);
  const std::vector<std::string> norm{"pow", "mean", "add_eps", "sqrt", "div", "weight_mul"};
  std::vector<std::string> want;
  for (const auto& k : norm) want.push_back("ln1." + k);
  for (const auto& k : {"attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.positions", "attn.seq", "attn.causal_mask"}) {
    want.push_back(k);
  }
  for (const std::string r : {"attn.rope_q", "attn.rope_k"}) {
    for (const auto& k : {"cos_sin", "cos_x1", "sin_x2", "sub", "sin_x1", "cos_x2", "add", "interleave"}) {
      want.push_back(r + "." + k);
    }
  }
  for (const auto& k : {"attn.qk", "attn.scale", "attn.where", "attn.softmax.amax", "attn.softmax.sub", "attn.softmax.exp",
                        "attn.softmax.sum", "attn.softmax.div", "attn.v_contiguous", "attn.pv", "attn.merge_heads",
                        "attn.output_proj", "residual_attn"}) {
    want.push_back(k);
  }
  for (const auto& k : norm) want.push_back("ln2." + k);
  for (const auto& k : {"ffn.w1", "ffn.sigmoid", "ffn.silu_mul", "ffn.w3", "ffn.mul", "ffn.w2", "residual_ffn"}) {
    want.push_back(k);
  }
  EXPECT_EQ(layer0_ops(step.dag), want);
  // lm_head on every position: M = batch x sequence.
  bool head = false;
  for (std::size_t v = 0; v < step.dag.size(); ++v) {
    const auto& x = step.dag[static_cast<KernelDag::Vertex>(v)];
    if (x.op == "lm_head") head = true;
  }
  EXPECT_TRUE(head);
  // No cache; eager forwards pay the host per kernel.
  const auto run = simulate_model(w, hw, hw::LaunchMode::kEager, models);
  EXPECT_EQ(run.memory.kv_cache_bytes, 0);
  EXPECT_GT(run.steps.at(0).total_us, hw.host.model_kernel_issue.us() * static_cast<double>(run.steps.at(0).kernels));
}

// The hand-written softmax reads and writes the S x S scores four more times than the fused one:
// at long sequences the cs336 forward takes longer than hf-eager's written-out attention.
TEST(Cs336Lowering, TheHandWrittenSoftmaxCostsAtLongSequences) {
  const auto models = models::default_kernel_models();
  const auto hw = rtx5090();
  const std::string base = "model: cs336-small\nphase: prefill\nbatch: 4\nseq_len: 1024\ndtype: fp32\n";
  const auto cs = simulate_model(workload(base + "lowering: cs336-basics\n"), hw, hw::LaunchMode::kGraph, models);
  const auto hf = simulate_model(workload(base + "lowering: hf-eager\nattention: naive\n"), hw, hw::LaunchMode::kGraph, models);
  EXPECT_GT(cs.steps.at(0).kernel_time_us, hf.steps.at(0).kernel_time_us * 1.1);
}

TEST(Cs336Lowering, OtherPhasesAndArchitecturesAreRefusedByName) {
  try {
    workload("model: cs336-small\nphase: decode\nbatch: 1\nseq_len: 16\ndtype: fp32\nlowering: cs336-basics\n");
    FAIL() << "decode accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("phase"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("KV cache"), std::string::npos) << e.what();
  }
  try {
    workload("model: llama3-8b\nphase: prefill\nbatch: 1\nseq_len: 16\ndtype: bf16\nlowering: cs336-basics\n");
    FAIL() << "grouped-query attention accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("lowering"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("grouped-query"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpusim::workloads
