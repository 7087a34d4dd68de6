// The cs336_basics training step: the forward with the loss, autograd's backward of every
// hand-written op in reverse, cs336_basics' AdamW; twice the forward's matrix products in the
// backward; memory from the tensors autograd saves; what is refused (the key named).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::expect_config_error;

ModelWorkload workload(const std::string& yaml) { return gpusim::testing::model_workload(yaml); }

hw::HardwareSpec rtx5090() { return hw::load_hardware("rtx5090", hw::PresetCatalog(config_dir() / "hw"), {}); }

// A two-layer model of cs336_basics' architecture (dims multiples of the GEMM tiles).
const std::string kModel =
    "model:\n  name: tiny336\n  layers: 2\n  d_model: 256\n  heads: 4\n  d_ff: 1024\n  vocab: 1024\n"
    "  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n";
const std::string kTrain = kModel + "phase: train\nbatch: 2\nseq_len: 256\ndtype: fp32\nlowering: cs336-basics\n";

StepProgram train_step(const std::string& yaml, const hw::HardwareSpec& hw, const models::KernelModelRegistry& models) {
  OpLoweringCache lowering(hw, models);
  return build_step(workload(yaml), "train", {2, 256, 0}, lowering);
}

// The ops of vertices [from, to), each once in launch order; with `prefix`, only those under it
// (the prefix removed).
std::vector<std::string> ops_of(const KernelDag& dag, std::size_t from, std::size_t to, const std::string& prefix = "") {
  std::vector<std::string> ops;
  for (std::size_t v = from; v < to; ++v) {
    const std::string& op = dag[static_cast<KernelDag::Vertex>(v)].op;
    if (op.rfind(prefix, 0) != 0) continue;
    const std::string local = op.substr(prefix.size());
    if (ops.empty() || ops.back() != local) ops.push_back(local);
  }
  return ops;
}

bool is_gemm(const hw::Launch& l) { return l.family == "gemm" || l.family == "gemv"; }

TEST(Cs336TrainLowering, ABlocksBackwardRunsEveryOpsBackwardInReverse) {
  const auto models = models::default_kernel_models();
  const auto hw = rtx5090();
  const StepProgram step = train_step(kTrain + "optimizer: none\n", hw, models);
  ASSERT_EQ(step.phase_starts.size(), 2u);  // optimizer: none, as the seed's benchmark times a step
  EXPECT_EQ(step.phase_starts[0].first, "forward");
  EXPECT_EQ(step.phase_starts[1].first, "backward");
  const std::size_t bwd = step.phase_starts[1].second, end = step.dag.size();
  const auto fwd_ops = ops_of(step.dag, 0, bwd);
  EXPECT_EQ(fwd_ops.back(), "loss.mean");  // cross_entropy ends the forward
  const auto all = ops_of(step.dag, bwd, end);
  EXPECT_EQ(all.front(), "loss.grad_seed");
  EXPECT_EQ(all.back(), "token_embeddings.grad_weight");  // weight[token_ids]'s index_put_
  const auto at = [&](const std::string& op) { return std::find(all.begin(), all.end(), op) - all.begin(); };
  EXPECT_LT(at("lm_head.grad_weight"), at("ln_final.grad_input"));
  EXPECT_LT(at("layers[1].ln1.grad_input"), at("layers[0].ffn.w2.grad_weight"));  // the last block first
  const std::vector<std::string> norm{"grad_normed", "grad_weight_mul", "grad_weight", "grad_rms_quotient",
                                      "grad_rms_quotient2", "grad_rms_neg", "grad_rms_mul", "grad_input_div",
                                      "grad_rms", "grad_sqrt_scale", "grad_sqrt", "grad_mean", "grad_pow_copy",
                                      "grad_pow_scale", "grad_pow", "grad_input"};
  const auto linear = [](const std::string& l) {
    return std::vector<std::string>{l + ".grad_weight", l + ".grad_input", l + ".grad_weight_layout"};
  };
  const auto rope = [](const std::string& r) {
    std::vector<std::string> out;
    for (const char* k : {"grad_sin_x1", "grad_cos_x2", "grad_sub_neg", "grad_cos_x1", "grad_sin_x2", "grad_x1",
                          "grad_x2", "grad_stack", "grad_interleave"}) {
      out.push_back(r + "." + k);
    }
    return out;
  };
  std::vector<std::string> want;
  const auto add = [&want](const std::vector<std::string>& ops) { want.insert(want.end(), ops.begin(), ops.end()); };
  add(linear("ffn.w2"));
  add({"ffn.grad_up", "ffn.grad_act"});
  add(linear("ffn.w3"));
  add({"ffn.grad_sigmoid_out", "ffn.grad_gate_mul", "ffn.grad_sigmoid", "ffn.grad_gate"});
  add(linear("ffn.w1"));
  add({"ffn.grad_input_sum"});
  for (const auto& k : norm) want.push_back("ln2." + k);
  add({"grad_residual_ffn"});
  add(linear("attn.output_proj"));
  add({"attn.grad_merge_heads", "attn.pv.grad_v", "attn.pv.grad_probs", "attn.softmax.grad_sum_quotient",
       "attn.softmax.grad_sum_quotient2", "attn.softmax.grad_sum_neg", "attn.softmax.grad_sum_mul",
       "attn.softmax.grad_div", "attn.softmax.grad_sum", "attn.softmax.grad_exp_accumulate", "attn.softmax.grad_exp",
       "attn.softmax.grad_max_neg", "attn.softmax.grad_max", "attn.softmax.grad_amax",
       "attn.softmax.grad_scores_accumulate", "attn.grad_where_zero", "attn.grad_where", "attn.grad_scale",
       "attn.qk.grad_k", "attn.qk.grad_q"});
  add(rope("attn.rope_k"));
  add(rope("attn.rope_q"));
  add({"attn.grad_v_heads"});
  add(linear("attn.v_proj"));
  add({"attn.grad_k_heads"});
  add(linear("attn.k_proj"));
  add({"attn.grad_input_sum", "attn.grad_q_heads"});
  add(linear("attn.q_proj"));
  add({"attn.grad_input_sum"});
  for (const auto& k : norm) want.push_back("ln1." + k);
  add({"grad_residual_attn"});
  EXPECT_EQ(ops_of(step.dag, bwd, end, "layers[0]."), want);
}

// Every matrix product of the forward has two in the backward (its operands' gradients) of the
// same FLOPs; the loss has none.
TEST(Cs336TrainLowering, TheBackwardRunsTwiceTheForwardsMatrixProducts) {
  const auto models = models::default_kernel_models();
  const auto hw = rtx5090();
  const StepProgram step = train_step(kTrain + "optimizer: none\n", hw, models);
  const std::size_t bwd = step.phase_starts[1].second;
  double flops[2] = {0, 0};
  std::map<std::string, int> products[2];  // GEMM ops by block
  for (std::size_t v = 0; v < step.dag.size(); ++v) {
    const auto& x = step.dag[static_cast<KernelDag::Vertex>(v)];
    if (!is_gemm(x.launch)) continue;
    const int phase = v < bwd ? 0 : 1;
    const hw::LaunchTotals t = hw::totals(x.launch);
    flops[phase] += t.fp32_flops + t.tensor_flops;
    products[phase][x.op.substr(0, x.op.find('.'))] += 1;
  }
  // Per block: 7 linears and 2 attention products forward, 18 products backward (a split-K
  // GEMM's reduction is a separate family).
  EXPECT_EQ(products[0]["layers[0]"], 9);
  EXPECT_EQ(products[1]["layers[0]"], 18);
  EXPECT_EQ(products[0]["lm_head"], 1);
  EXPECT_EQ(products[1]["lm_head"], 2);
  // The cost models charge whole tiles: about twice, exactly twice without padding.
  EXPECT_GT(flops[1], 1.9 * flops[0]);
  EXPECT_LT(flops[1], 2.1 * flops[0]);
}

TEST(Cs336TrainLowering, MemoryHoldsTheSavedActivationsAndTheGradients) {
  const auto models = models::default_kernel_models();
  const auto hw = rtx5090();
  const auto infer = simulate_model(workload(kModel + "phase: prefill\nbatch: 2\nseq_len: 256\ndtype: fp32\nlowering: cs336-basics\n"),
                                    hw, hw::LaunchMode::kGraph, models);
  const auto none = simulate_model(workload(kTrain + "optimizer: none\n"), hw, hw::LaunchMode::kGraph, models);
  const auto adamw = simulate_model(workload(kTrain + "optimizer: adamw\n"), hw, hw::LaunchMode::kGraph, models);
  // The forward's activations die after their last reader; a training step keeps what autograd
  // saves until the backward reads it, and the gradients to the end.
  EXPECT_GT(none.memory.activation_peak_bytes, 3 * infer.memory.activation_peak_bytes);
  EXPECT_GT(none.memory.activation_peak_bytes, none.memory.weights_bytes);  // the gradients alone are as large
  EXPECT_EQ(none.memory.gradients_bytes, none.memory.weights_bytes);
  EXPECT_EQ(none.memory.optimizer_state_bytes, 0);
  EXPECT_EQ(adamw.memory.optimizer_state_bytes, 2 * adamw.memory.weights_bytes);  // AdamW's m and v
  EXPECT_GE(adamw.memory.total_bytes, none.memory.total_bytes + adamw.memory.optimizer_state_bytes);
  // The same forward and backward either way.
  ASSERT_EQ(adamw.steps.front().phase_splits.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(adamw.steps.front().phase_splits[i].kernels, none.steps.front().phase_splits[i].kernels);
  }
}

// cs336_basics' AdamW: a Python loop over model.parameters(), 16 kernels each.
TEST(Cs336TrainLowering, AdamWLaunchesSixteenKernelsAParameter) {
  const auto models = models::default_kernel_models();
  const auto hw = rtx5090();
  const StepProgram step = train_step(kTrain + "optimizer: adamw\n", hw, models);
  ASSERT_EQ(step.phase_starts.size(), 3u);
  EXPECT_EQ(step.phase_starts[2].first, "optimizer");
  const std::size_t params = 1 + 9 * 2 + 2;  // the embedding, 9 per block, ln_final, lm_head
  EXPECT_EQ(step.dag.size() - step.phase_starts[2].second, 16 * params);
  const auto ops = ops_of(step.dag, step.phase_starts[2].second, step.dag.size());
  EXPECT_EQ(ops.front(), "w.token_embeddings.adamw.decay");
  EXPECT_EQ(ops.back(), "w.lm_head.adamw.update_sub");
}

TEST(Cs336TrainLowering, EagerStepsPayTheHostForEveryKernel) {
  const auto models = models::default_kernel_models();
  const auto hw = rtx5090();
  const auto r = simulate_model(workload(kTrain + "optimizer: none\n"), hw, hw::LaunchMode::kEager, models);
  const auto& s = r.steps.front();
  EXPECT_GT(s.total_us, hw.host.model_kernel_issue.us() * static_cast<double>(s.kernels));
  EXPECT_GT(s.phase_splits[1].kernel_time_us, 1.5 * s.phase_splits[0].kernel_time_us);
}

TEST(Cs336TrainLowering, RefusesWhatItDoesNotLowerByKey) {
  const std::string fp32 = kTrain;
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string y = fp32;
    y.replace(y.find(from), from.size(), to);
    return y;
  };
  // Mixed precision: the seed's bf16 autocast runs are not lowered for cs336-basics.
  const auto amp = expect_config_error([&] { workload(fp32 + "autocast: bf16\n"); });
  EXPECT_EQ(amp.key(), "autocast");
  EXPECT_NE(std::string(amp.what()).find("cs336-basics"), std::string::npos) << amp.what();
  EXPECT_EQ(expect_config_error([&] { workload(with("dtype: fp32", "dtype: bf16")); }).key(), "dtype");
  EXPECT_EQ(expect_config_error([&] { workload(fp32 + "optimizer: sgd\n"); }).key(), "optimizer");
  EXPECT_EQ(expect_config_error([&] { workload(fp32 + "optimizer: adamw-fused\n"); }).key(), "optimizer");
  EXPECT_EQ(expect_config_error([&] { workload(fp32 + "checkpointing: full\n"); }).key(), "checkpointing");
  EXPECT_EQ(expect_config_error([&] { workload(fp32 + "gradient_accumulation_steps: 2\n"); }).key(),
            "gradient_accumulation_steps");
  EXPECT_EQ(expect_config_error([&] { workload(with("phase: train", "phase: decode")); }).key(), "phase");
  EXPECT_NO_THROW(workload(with("dtype: fp32", "dtype: tf32")));  // fp32 tensors, TF32 matmuls
}

}  // namespace
}  // namespace gpusim::workloads
