// A step's totals (and, when listed, its kernels) without lowering every layer: the repeating
// layers are lowered three blocks deep and the rest follow by renaming.
//
// A model's last layers repeat in blocks of layer kinds (layer_kind: MoE or dense, windowed or
// global): one layer for most models, two for Gemma 2's alternating windowed and global layers,
// six for Gemma 3's five windowed and one global. Blocks of one kind sequence lower to the same
// kernels, tensor and op names aside, and each reads nothing of earlier blocks but its
// predecessor's output. The step is lowered with the first three blocks of that run (A, B, C)
// only. Comparing them tells, for each tensor C accesses, whether it is the same in every block
// (a rotary table, the window mask), made by the block itself (its weights, caches and
// activations: fresh in each later block), or made by the block before (the residual stream).
// Blocks after C are C's kernels with their tensors renamed by that rule, and the epilogue reads
// the last block's output where it read C's. The whole step's kernel sequence then runs on a
// SerialChain (hw/serial_chain.h), L2 state included, kernel by kernel: the totals are the whole
// step's, bit for bit, and a listed step's kernels are the engine's, op names renumbered
// (tests/workloads/layer_repeat_test.cpp and new_families_lowering_test.cpp compare them with
// run_engine on the fully lowered step, on many workloads). When the three blocks do not show
// that pattern, or a routing trace (expert_weights_by_layer) sets layers apart, nothing is
// extended and the caller lowers every layer.
#pragma once

#include <optional>
#include <string>

#include "hw/gpu_engine.h"
#include "hw/kernel_outcome_cache.h"
#include "workloads/model_run.h"
#include "workloads/op_lowering_cache.h"
#include "workloads/transformer_step.h"
#include "workloads/workload.h"

namespace gpusim::workloads {

struct ExtendedStep {
  StepRun run;  // totals, and when listed its detail: every kernel's node and result as run_step
                // gives them, except that the kernels after the lowered layers list no tensors
  double activation_peak_bytes = 0;
};

// The totals of one step of `w` as simulating all of its layers gives them (`listed`: and its
// kernels), or nullopt when the layers lowered do not repeat as layer_kind promises.
std::optional<ExtendedStep> simulate_repeating_layers(const ModelWorkload& w, const std::string& phase,
                                                      const StepShape& shape, OpLoweringCache& lowering,
                                                      hw::LaunchMode mode, hw::KernelOutcomeCache& cache,
                                                      bool listed = false);

}  // namespace gpusim::workloads
