// The fused lowering's training step (workloads/fused_train_lowering.cpp): a tuned trainer's
// compiled step, as validation/data/hf_train4_h100.json.gz records it: Triton kernels in place of
// eager's elementwise chains, the loss without an fp32 copy of the logits, cuDNN's attention over
// a materialized mask, and what it refuses.
#include <gtest/gtest.h>

#include <string>

#include "models/kernel_model.h"
#include "tests/support/model_workloads.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/model_run.h"
#include "workloads/transformer_phases.h"
#include "workloads/workload.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::expect_config_error;

ModelWorkload workload(const std::string& yaml) { return gpusim::testing::model_workload(yaml); }

// A small llama-style model (GQA, tied head) at batch 2 x 256.
const std::string kLlama =
    "model:\n  name: tiny-llama\n  layers: 2\n  d_model: 512\n  heads: 8\n  kv_heads: 2\n  d_ff: 1024\n"
    "  vocab: 4096\n  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n  tied_embeddings: true\n"
    "phase: train\nbatch: 2\nseq_len: 256\ndtype: bf16\noptimizer: adamw-fused\n";

std::size_t count_names(const KernelDag& dag, std::size_t from, std::size_t to, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t v = from; v < to; ++v) {
    if (dag[static_cast<KernelDag::Vertex>(v)].launch.name.find(part) != std::string::npos) ++n;
  }
  return n;
}

TEST(FusedTrainLowering, CompiledKernelsInPlaceOfEagerChains) {
  const auto models = models::default_kernel_models();
  const auto hw = gpusim::testing::preset("h100");
  OpLoweringCache lowering(hw, models);
  const StepProgram fused = build_step(workload(kLlama + "lowering: fused\n"), "train", {2, 256, 0}, lowering);
  const StepProgram eager = build_step(workload(kLlama), "train", {2, 256, 0}, lowering);
  ASSERT_EQ(fused.phase_starts.size(), 3u);
  const std::size_t bwd = fused.phase_starts[1].second, opt = fused.phase_starts[2].second, end = fused.dag.size();
  // Forward: each norm one reduction kernel (two layers' two, the final one), SwiGLU one
  // pointwise kernel a layer, the loss an online log-sum-exp; no ATen elementwise kernels.
  EXPECT_EQ(count_names(fused.dag, 0, bwd, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt"), 5u);
  EXPECT_EQ(count_names(fused.dag, 0, bwd, "triton_poi_fused_mul_silu"), 2u);
  EXPECT_EQ(count_names(fused.dag, 0, bwd, "prepare_softmax_online"), 1u);
  EXPECT_EQ(count_names(fused.dag, 0, bwd, "at::native::"), 0u);
  // The mask is a tensor: cuDNN's forward and backward run every tile pair.
  EXPECT_EQ(count_names(fused.dag, 0, bwd, "sdpa_sm90_flash_fprop"), 2u);
  EXPECT_EQ(count_names(fused.dag, bwd, opt, "sdpa_sm90_flash_bprop"), 2u);
  // Backward: SwiGLU's in one kernel, the norms' weight gradients as split column sums.
  EXPECT_EQ(count_names(fused.dag, bwd, opt, "triton_poi_fused_mul_silu_silu_backward"), 2u);
  EXPECT_EQ(count_names(fused.dag, bwd, opt, "triton_per_fused_mul_sum_sum_1"), 5u);
  // The tied head's weight gradient accumulates onto a copy of the embedding's.
  EXPECT_EQ(count_names(fused.dag, bwd, opt, "Memcpy DtoD"), 1u);
  // Fused AdamW, uncompiled: its step count, then its fused kernel.
  EXPECT_EQ(count_names(fused.dag, opt, end, "FusedAdamMathFunctor"), end - opt - 1);
  // Far fewer kernels than eager's step, which runs each RMSNorm as 8 kernels and its backward as 17.
  EXPECT_LT(fused.dag.size() * 2, eager.dag.size());
}

TEST(FusedTrainLowering, FasterThanEagerAndItsMemoryHoldsTheLogitsGradient) {
  const auto models = models::default_kernel_models();
  const auto hw = gpusim::testing::preset("h100");
  const auto fused = simulate_model(workload(kLlama + "lowering: fused\n"), hw, hw::LaunchMode::kGraph, models);
  const auto eager = simulate_model(workload(kLlama), hw, hw::LaunchMode::kGraph, models);
  ASSERT_EQ(fused.steps.size(), 1u);
  ASSERT_EQ(fused.steps.front().phase_splits.size(), 3u);
  EXPECT_LT(fused.steps.front().kernel_time_us, eager.steps.front().kernel_time_us);
  // The logits (bf16) and their gradient are alive together in the loss's backward.
  const double logits = 2.0 * 256 * 4096 * 2;
  EXPECT_GT(static_cast<double>(fused.memory.activation_peak_bytes), 2 * logits);
  EXPECT_EQ(fused.memory.gradients_bytes, fused.memory.weights_bytes);
}

TEST(FusedTrainLowering, GradientAccumulationRunsTheGraphsPerMicroBatch) {
  const auto models = models::default_kernel_models();
  const auto hw = gpusim::testing::preset("h100");
  OpLoweringCache lowering(hw, models);
  const StepProgram one = build_step(workload(kLlama + "lowering: fused\n"), "train", {2, 256, 0}, lowering);
  const StepProgram two = build_step(workload(kLlama + "lowering: fused\ngradient_accumulation_steps: 2\n"), "train",
                                     {2, 256, 0}, lowering);
  const auto fwd_bwd = [](const StepProgram& p) { return p.phase_starts.back().second; };
  // Twice the forward and backward, plus the micro-batches' loss scaling and .grad accumulations.
  EXPECT_GT(fwd_bwd(two), 2 * fwd_bwd(one));
  EXPECT_EQ(two.dag.size() - fwd_bwd(two), one.dag.size() - fwd_bwd(one));  // one optimizer step
}

TEST(FusedTrainLowering, RefusesWhatItDoesNotLowerByKey) {
  const std::string fused = kLlama + "lowering: fused\n";
  EXPECT_EQ(expect_config_error([&] { workload(fused + "checkpointing: full\n"); }).key(), "checkpointing");
  EXPECT_EQ(expect_config_error([&] {
              workload("model: qwen3-30b-a3b\nphase: train\nbatch: 1\nseq_len: 16\ndtype: bf16\nlowering: fused\n");
            }).key(),
            "phase");
  EXPECT_EQ(expect_config_error([&] {
              workload(std::string(fused).replace(fused.find("dtype: bf16"), 11, "dtype: fp32\nautocast: bf16"));
            }).key(),
            "dtype");  // 16-bit weights only
  EXPECT_EQ(expect_config_error([&] {
              workload("model: gpt2-small\nphase: train\nbatch: 1\nseq_len: 16\ndtype: bf16\nlowering: fused\n");
            }).key(),
            "phase");
}

}  // namespace
}  // namespace gpusim::workloads
