// Training steps (phase: train): the phases' kernels in autograd's order, the optimizer's
// launches, memory (gradients, optimizer state, the peak from the program's lifetimes), the
// JSON contract's figures, and what is refused (exit status 2 with the key named).
#include <gtest/gtest.h>

#include <algorithm>
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

hw::HardwareSpec h100() { return gpusim::testing::preset("h100"); }

// A small llama-style model (GQA, tied head) trained at batch 2 x 256.
const char* kLlama =
    "model:\n  name: tiny-llama\n  layers: 2\n  d_model: 512\n  heads: 8\n  kv_heads: 2\n  d_ff: 1024\n"
    "  vocab: 4096\n  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n  tied_embeddings: true\n"
    "phase: train\nbatch: 2\nseq_len: 256\ndtype: bf16\n";

std::vector<std::string> ops_of(const KernelDag& dag, std::size_t from, std::size_t to) {
  std::vector<std::string> ops;
  for (std::size_t v = from; v < to; ++v) {
    const std::string& op = dag[static_cast<KernelDag::Vertex>(v)].op;
    if (ops.empty() || ops.back() != op) ops.push_back(op);
  }
  return ops;
}

TEST(TrainLowering, PhasesInAutogradOrder) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  const ModelWorkload w = workload(kLlama);
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(w, "train", {2, 256, 0}, lowering);
  ASSERT_EQ(step.phase_starts.size(), 3u);
  EXPECT_EQ(step.phase_starts[0].first, "forward");
  EXPECT_EQ(step.phase_starts[1].first, "backward");
  EXPECT_EQ(step.phase_starts[2].first, "optimizer");
  const auto fwd = ops_of(step.dag, step.phase_starts[0].second, step.phase_starts[1].second);
  const auto bwd = ops_of(step.dag, step.phase_starts[1].second, step.phase_starts[2].second);
  // The forward ends with the loss; the backward starts from it, runs the head's weight gradient
  // before its input gradient, and the last layer before the first.
  ASSERT_GE(fwd.size(), 3u);
  EXPECT_EQ(fwd[fwd.size() - 2], "loss.log_softmax");
  EXPECT_EQ(fwd.back(), "loss.nll");
  EXPECT_EQ(bwd.front(), "loss.grad_seed");
  const auto at = [&](const std::string& op) {
    return std::find(bwd.begin(), bwd.end(), op) - bwd.begin();
  };
  EXPECT_LT(at("lm_head.grad_weight"), at("lm_head.grad_input"));
  EXPECT_LT(at("layers[1].mlp.down_proj.grad_weight"), at("layers[0].mlp.down_proj.grad_weight"));
  EXPECT_LT(at("layers[0].attn.sdpa_backward"), at("layers[0].attn.q_proj.grad_input"));
  EXPECT_EQ(bwd.back(), "embed_tokens.grad_accumulate");  // the tied head's gradient joins the embedding's
  // Every norm's backward: the weight's gradient and the fp32 chain (RMSNorm's 17 kernels in
  // hf_train_h100.json.gz; 16 here: 512 rows are summed without splitting them over CTAs, so the
  // column sum needs no memset of semaphores).
  std::size_t norm_kernels = 0;
  for (std::size_t v = step.phase_starts[1].second; v < step.phase_starts[2].second; ++v) {
    if (step.dag[static_cast<KernelDag::Vertex>(v)].op.rfind("final_norm.", 0) == 0) ++norm_kernels;
  }
  EXPECT_EQ(norm_kernels, 16u);
}

TEST(TrainLowering, OptimizersLaunchTheirForeachOps) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const auto count_ops = [&](const std::string& optimizer) {
    const ModelWorkload w = workload(std::string(kLlama) + "optimizer: " + optimizer + "\n");
    const StepProgram step = build_step(w, "train", {2, 256, 0}, lowering);
    return ops_of(step.dag, step.phase_starts[2].second, step.dag.size());
  };
  // AdamW foreach: decay, lerp, mul, addcmul, sqrt, div, add, addcdiv.
  EXPECT_EQ(count_ops("adamw").size(), 8u);
  EXPECT_EQ(count_ops("sgd").size(), 3u);
  EXPECT_EQ(count_ops("adamw-fused"),
            (std::vector<std::string>{"optimizer.step_count", "optimizer.fused_adamw"}));
}

TEST(TrainLowering, MemoryCountsGradientsStateAndTheBackwardPeak) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  const auto train = simulate_model(workload(kLlama), hw, hw::LaunchMode::kGraph, models);
  const auto sgd = simulate_model(workload(std::string(kLlama) + "optimizer: sgd\n"), hw, hw::LaunchMode::kGraph, models);
  const auto& m = train.memory;
  EXPECT_EQ(m.gradients_bytes, m.weights_bytes);
  EXPECT_EQ(m.optimizer_state_bytes, 2 * m.weights_bytes);      // AdamW: two moments
  EXPECT_EQ(sgd.memory.optimizer_state_bytes, m.weights_bytes);  // SGD: momentum
  // The activations saved for the backward and the gradients, alive together: more than the
  // gradients alone and more than a prefill of the same shape keeps.
  EXPECT_GT(m.activation_peak_bytes, m.gradients_bytes);
  auto prefill = workload(kLlama);
  prefill.phase = Phase::kPrefill;
  const auto inference = simulate_model(prefill, hw, hw::LaunchMode::kGraph, models);
  EXPECT_GT(m.activation_peak_bytes, 2 * inference.memory.activation_peak_bytes);
  EXPECT_EQ(m.total_bytes, m.weights_bytes + m.kv_cache_bytes + m.optimizer_state_bytes + m.activation_peak_bytes);
  // The phases partition the step: their kernels and kernel time add up to the step's.
  ASSERT_EQ(train.steps.size(), 1u);
  const auto& s = train.steps.front();
  ASSERT_EQ(s.phase_splits.size(), 3u);
  std::int64_t kernels = 0;
  double kernel_time = 0;
  for (const auto& p : s.phase_splits) {
    kernels += p.kernels;
    kernel_time += p.kernel_time_us;
    EXPECT_GT(p.total_us, 0);
  }
  EXPECT_EQ(kernels, s.kernels);
  EXPECT_NEAR(kernel_time, s.kernel_time_us, 1e-6 * s.kernel_time_us);
  // The backward does about twice the forward's GEMM work: it takes longer.
  EXPECT_GT(s.phase_splits[1].kernel_time_us, 1.5 * s.phase_splits[0].kernel_time_us);
}

TEST(TrainLowering, CheckpointingRecomputesEachLayerBeforeItsBackward) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram plain = build_step(workload(kLlama), "train", {2, 256, 0}, lowering);
  const StepProgram ckpt = build_step(workload(std::string(kLlama) + "checkpointing: full\n"), "train", {2, 256, 0}, lowering);
  ASSERT_EQ(ckpt.phase_starts.size(), 3u);
  const auto fwd = ops_of(ckpt.dag, ckpt.phase_starts[0].second, ckpt.phase_starts[1].second);
  const auto bwd = ops_of(ckpt.dag, ckpt.phase_starts[1].second, ckpt.phase_starts[2].second);
  const auto at = [&](const std::string& op) { return std::find(bwd.begin(), bwd.end(), op) - bwd.begin(); };
  const auto has = [](const std::vector<std::string>& ops, const std::string& op) {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  };
  // Each layer's forward runs again in the backward, right before that layer's gradients, the
  // last layer first; use_cache=False: no cache concatenation anywhere.
  EXPECT_LT(at("layers[1].attn.q_proj"), at("layers[1].mlp.down_proj.grad_weight"));
  EXPECT_LT(at("layers[1].mlp.down_proj.grad_input"), at("layers[0].attn.q_proj"));
  EXPECT_LT(at("layers[0].attn.q_proj"), at("layers[0].mlp.down_proj.grad_weight"));
  EXPECT_FALSE(has(fwd, "layers[0].attn.k_cat"));
  EXPECT_TRUE(has(ops_of(plain.dag, 0, plain.phase_starts[1].second), "layers[0].attn.k_cat"));
  // The backward launches the plain backward's kernels plus one forward of every layer.
  const std::size_t plain_fwd = plain.phase_starts[1].second, plain_bwd = plain.phase_starts[2].second - plain_fwd;
  const std::size_t ckpt_fwd = ckpt.phase_starts[1].second, ckpt_bwd = ckpt.phase_starts[2].second - ckpt_fwd;
  EXPECT_EQ(plain_fwd - ckpt_fwd, 4u);  // two cache cats in each of 2 layers
  std::size_t layer_kernels = 0;
  for (std::size_t v = 0; v < ckpt_fwd; ++v) {
    if (ckpt.dag[static_cast<KernelDag::Vertex>(v)].op.rfind("layers[", 0) == 0) ++layer_kernels;
  }
  EXPECT_EQ(ckpt_bwd, plain_bwd + layer_kernels);
  // Only the layers' inputs wait for the backward: a lower peak, and slower.
  const auto p = simulate_model(workload(kLlama), hw, hw::LaunchMode::kGraph, models);
  const auto c = simulate_model(workload(std::string(kLlama) + "checkpointing: full\n"), hw, hw::LaunchMode::kGraph, models);
  EXPECT_LT(c.memory.activation_peak_bytes, p.memory.activation_peak_bytes);
  EXPECT_EQ(c.memory.kv_cache_bytes, 0);
  EXPECT_GT(c.steps.front().kernel_time_us, p.steps.front().kernel_time_us);
}

TEST(TrainLowering, GradientAccumulationRunsEveryMicroBatchThenOneUpdate) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const ModelWorkload one = workload(kLlama);
  const ModelWorkload three = workload(std::string(kLlama) + "gradient_accumulation_steps: 3\n");
  const StepProgram step = build_step(three, "train", {2, 256, 0}, lowering);
  std::vector<std::string> phases;
  for (const auto& [name, _] : step.phase_starts) phases.push_back(name);
  EXPECT_EQ(phases, (std::vector<std::string>{"forward", "backward", "forward", "backward", "forward", "backward",
                                              "optimizer"}));
  // Micro-batches after the first add each parameter's gradient into .grad: 2 x 23 parameters
  // (embedding, 2 x (q, k, v, o, gate, up, down, 2 norms), the final norm; the head is tied).
  const auto adds = [](const StepProgram& p) {
    std::size_t n = 0;
    for (std::size_t v = 0; v < p.dag.size(); ++v) {
      const std::string& op = p.dag[static_cast<KernelDag::Vertex>(v)].op;
      if (op.size() > 16 && op.compare(op.size() - 16, 16, ".accumulate_grad") == 0) ++n;
    }
    return n;
  };
  EXPECT_EQ(adds(build_step(one, "train", {2, 256, 0}, lowering)), 0u);
  EXPECT_EQ(adds(step), 2u * 20u);
  // The report sums the repeated phases: three forwards, one optimizer.
  const auto r1 = simulate_model(one, hw, hw::LaunchMode::kGraph, models);
  const auto r3 = simulate_model(three, hw, hw::LaunchMode::kGraph, models);
  ASSERT_EQ(r3.steps.front().phase_splits.size(), 3u);
  const auto& s1 = r1.steps.front().phase_splits;
  const auto& s3 = r3.steps.front().phase_splits;
  EXPECT_NEAR(s3[0].kernel_time_us, 3 * s1[0].kernel_time_us, 0.02 * s3[0].kernel_time_us);
  EXPECT_GT(s3[1].kernel_time_us, 3 * s1[1].kernel_time_us);  // the accumulating adds
  EXPECT_NEAR(s3[2].kernel_time_us, s1[2].kernel_time_us, 0.01 * s1[2].kernel_time_us);
}

TEST(TrainLowering, OptimizerNoneStopsAfterTheBackward) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  const auto r = simulate_model(workload(std::string(kLlama) + "optimizer: none\n"), hw, hw::LaunchMode::kGraph, models);
  ASSERT_EQ(r.steps.front().phase_splits.size(), 2u);
  EXPECT_EQ(r.steps.front().phase_splits.back().name, "backward");
  EXPECT_EQ(r.memory.optimizer_state_bytes, 0);
  EXPECT_EQ(r.memory.gradients_bytes, r.memory.weights_bytes);
}

// The same model with fp32 weights under bf16 autocast (mixed precision).
std::string amp_llama(const std::string& type = "bf16") {
  std::string y = kLlama;
  y.replace(y.find("dtype: bf16"), 11, "dtype: fp32");
  return y + "autocast: " + type + "\n";
}

std::size_t count_suffix(const KernelDag& dag, std::size_t from, std::size_t to, const std::string& suffix) {
  std::size_t n = 0;
  for (std::size_t v = from; v < to; ++v) {
    const std::string& op = dag[static_cast<KernelDag::Vertex>(v)].op;
    if (op.size() >= suffix.size() && op.compare(op.size() - suffix.size(), suffix.size(), suffix) == 0) ++n;
  }
  return n;
}

// Autocast casts each fp32 weight to bf16 once per forward (its cache), the fp32 inputs of the
// linear layers (the norms' outputs) each time, and the backward casts the weights' gradients
// back to fp32 and the cast inputs' gradients too (hf_train_h100.json.gz, the calibration amp case).
TEST(TrainLowering, AutocastCastsWeightsOnceAndGradientsBackToFp32) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(amp_llama()), "train", {2, 256, 0}, lowering);
  ASSERT_EQ(step.phase_starts.size(), 3u);
  const std::size_t bwd = step.phase_starts[1].second, opt = step.phase_starts[2].second;
  // 2 layers x (q, k, v, o, gate, up, down) and the tied head: 15 weights; the inputs of q, k,
  // v, gate, up (o_proj and down_proj read bf16) and of the head: 11.
  EXPECT_EQ(count_suffix(step.dag, 0, bwd, ".weight_cast"), 15u);
  EXPECT_EQ(count_suffix(step.dag, 0, bwd, ".input_cast"), 11u);
  EXPECT_EQ(count_suffix(step.dag, bwd, opt, ".grad_weight_cast"), 15u);
  EXPECT_EQ(count_suffix(step.dag, bwd, opt, ".grad_input_cast"), 11u);
  EXPECT_EQ(count_suffix(step.dag, bwd, opt, ".weight_cast"), 0u);  // no recomputation
  // sdpa's fp32 operands (rotated q and k, the promoted v cache) are cast for it, and back.
  EXPECT_EQ(count_suffix(step.dag, 0, bwd, ".attn.q_cast"), 2u);
  EXPECT_EQ(count_suffix(step.dag, bwd, opt, ".attn.grad_q_cast"), 2u);
  // Memory: fp32 weights, fp32 gradients and fp32 AdamW moments.
  const auto r = simulate_model(workload(amp_llama()), hw, hw::LaunchMode::kGraph, models);
  const auto b = simulate_model(workload(kLlama), hw, hw::LaunchMode::kGraph, models);
  EXPECT_EQ(r.memory.weights_bytes, 2 * b.memory.weights_bytes);
  EXPECT_EQ(r.memory.gradients_bytes, r.memory.weights_bytes);
  EXPECT_EQ(r.memory.optimizer_state_bytes, 2 * r.memory.weights_bytes);
  // The casts and the fp32 optimizer (twice the bytes) cost time over the bf16 step.
  EXPECT_GT(r.steps.front().kernel_time_us, b.steps.front().kernel_time_us);
  EXPECT_GT(r.steps.front().phase_splits[2].kernel_time_us, b.steps.front().phase_splits[2].kernel_time_us);
}

// torch.utils.checkpoint re-enters autocast for each recomputed layer: its weights are cast again.
TEST(TrainLowering, AutocastCheckpointingCastsAgainInTheBackward) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(amp_llama() + "checkpointing: full\n"), "train", {2, 256, 0}, lowering);
  const std::size_t bwd = step.phase_starts[1].second, opt = step.phase_starts[2].second;
  EXPECT_EQ(count_suffix(step.dag, 0, bwd, ".weight_cast"), 15u);
  EXPECT_EQ(count_suffix(step.dag, bwd, opt, ".weight_cast"), 14u);  // every layer's 7, not the head's
}

// fp16 autocast trains with GradScaler: the loss scaled, the gradients unscaled and checked for
// infinities before the step, found_inf read by the host (a sync), the scale updated after.
TEST(TrainLowering, Fp16AutocastStepsThroughGradScaler) {
  const auto models = models::default_kernel_models();
  const auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram fp16 = build_step(workload(amp_llama("fp16")), "train", {2, 256, 0}, lowering);
  const StepProgram bf16 = build_step(workload(amp_llama()), "train", {2, 256, 0}, lowering);
  const auto opt = ops_of(fp16.dag, fp16.phase_starts[2].second, fp16.dag.size());
  ASSERT_GE(opt.size(), 8u);
  EXPECT_EQ(opt[4], "grad_scaler.unscale");
  EXPECT_EQ(opt[5], "grad_scaler.found_inf_item");
  EXPECT_EQ(opt.back(), "grad_scaler.update");
  bool synced = false;
  for (std::size_t v = fp16.phase_starts[2].second; v < fp16.dag.size(); ++v) {
    const auto& k = fp16.dag[static_cast<KernelDag::Vertex>(v)];
    synced = synced || (k.op == "grad_scaler.found_inf_item" && k.host_sync);
  }
  EXPECT_TRUE(synced);
  EXPECT_EQ(count_suffix(fp16.dag, 0, fp16.phase_starts[1].second, "grad_scaler.scale"), 1u);
  EXPECT_EQ(count_suffix(bf16.dag, 0, bf16.dag.size(), "grad_scaler.unscale"), 0u);
}

// Eager host time of a training step by phase: the forward's model code (forward_fixed before
// its first launch, model_kernel_issue a kernel), autograd's engine a backward kernel, torch.optim
// an optimizer launch; a what-if on the backward's cost moves the eager wall, not graph mode.
TEST(TrainLowering, HostCostsFollowTheStepsPhases) {
  const auto models = models::default_kernel_models();
  auto hw = h100();
  OpLoweringCache lowering(hw, models);
  const StepProgram step = build_step(workload(kLlama), "train", {2, 256, 0}, lowering);
  const auto& h = hw.host;
  ASSERT_EQ(step.phase_starts.size(), 3u);
  const std::size_t bwd = step.phase_starts[1].second, opt = step.phase_starts[2].second;
  const auto gap = [&](std::size_t v) { return *step.dag[static_cast<KernelDag::Vertex>(v)].host_gap; };
  EXPECT_EQ(gap(0), h.forward_fixed + h.model_kernel_issue);
  EXPECT_EQ(gap(1), h.model_kernel_issue);
  EXPECT_EQ(gap(bwd - 1), h.model_kernel_issue);
  EXPECT_EQ(gap(bwd), h.backward_kernel_issue);
  EXPECT_EQ(gap(opt - 1), h.backward_kernel_issue);
  EXPECT_EQ(gap(opt), h.optimizer_kernel_issue);
  EXPECT_EQ(gap(step.dag.size() - 1), h.optimizer_kernel_issue);
  // Accumulation: each micro-batch's forward starts with forward_fixed again.
  const StepProgram acc = build_step(workload(std::string(kLlama) + "gradient_accumulation_steps: 2\n"), "train",
                                     {2, 256, 0}, lowering);
  ASSERT_EQ(acc.phase_starts[2].first, "forward");
  EXPECT_EQ(*acc.dag[static_cast<KernelDag::Vertex>(acc.phase_starts[2].second)].host_gap,
            h.forward_fixed + h.model_kernel_issue);
  const auto w = workload(kLlama);
  const double eager = simulate_model(w, hw, hw::LaunchMode::kEager, models).steps.front().total_us;
  const double graph = simulate_model(w, hw, hw::LaunchMode::kGraph, models).steps.front().total_us;
  hw.host.backward_kernel_issue = hw.host.backward_kernel_issue + sim::Time::from_seconds(20e-6);
  EXPECT_GT(simulate_model(w, hw, hw::LaunchMode::kEager, models).steps.front().total_us, eager + 1000.0);
  EXPECT_EQ(simulate_model(w, hw, hw::LaunchMode::kGraph, models).steps.front().total_us, graph);
}

TEST(TrainLowering, RefusesWhatItDoesNotLowerByKey) {
  EXPECT_EQ(expect_config_error([] { workload(std::string(kLlama) + "optimizer: lion\n"); }).key(), "optimizer");
  EXPECT_EQ(expect_config_error([] { workload(std::string(kLlama) + "autocast: bf16\n"); }).key(), "autocast");
  EXPECT_EQ(expect_config_error([] {
              workload("model: llama3-8b\nphase: prefill\nbatch: 1\nseq_len: 16\ndtype: bf16\noptimizer: sgd\n");
            }).key(),
            "optimizer");
  EXPECT_EQ(expect_config_error([] {
              workload("model: deepseek-v3\nphase: train\nbatch: 1\nseq_len: 16\ndtype: bf16\n");  // MLA with a q LoRA
            }).key(),
            "phase");
  EXPECT_EQ(expect_config_error([] {
              workload(std::string(kLlama).replace(std::string(kLlama).find("dtype: bf16"), 11, "dtype: tf32"));
            }).key(),
            "dtype");
  // (The fused lowering's training step has its own refusals: fused_train_lowering_test.cpp.)
  EXPECT_EQ(expect_config_error([] { workload(std::string(kLlama) + "lowering: fused\ncheckpointing: full\n"); }).key(),
            "checkpointing");
  EXPECT_EQ(expect_config_error([] { workload(std::string(kLlama) + "checkpointing: selective\n"); }).key(), "checkpointing");
  EXPECT_EQ(expect_config_error([] { workload(std::string(kLlama) + "gradient_accumulation_steps: 0\n"); }).key(),
            "gradient_accumulation_steps");
  EXPECT_EQ(expect_config_error([] {
              workload("model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 16\ndtype: bf16\ncheckpointing: full\n");
            }).key(),
            "checkpointing");
}

}  // namespace
}  // namespace gpusim::workloads
