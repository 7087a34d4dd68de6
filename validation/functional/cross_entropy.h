// The loss of a causal LM and its backward as ForCausalLMLoss runs it (F.cross_entropy on fp32
// logits, workloads/hf_train_lowering.cpp: loss_forward, loss_backward; models/loss_kernels.cpp):
// log_softmax over the vocabulary (the softmax kernels with the log epilogue), nll_loss with
// mean reduction over the rows whose target is not ignore_index (one CTA), then for the
// backward the zeroed gradient of the log-probabilities, nll_loss's scatter of
// -grad / total_weight, and log_softmax's backward.
#pragma once

#include <cstdint>
#include <vector>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

constexpr std::int64_t kIgnoreIndex = -100;  // PyTorch's default ignore_index

// x [R, C] -> x - max - log(sum(exp(x - max))) per row; CTAs as softmax() (rows_per_cta from
// softmax_rows_per_cta), the same counts: 4 FLOPs per element (max, subtraction, sum, final
// subtraction), each element loaded and stored once.
OpRun log_softmax(const Tensor& x, std::int64_t rows_per_cta, std::int64_t elt_bytes);

// nll_loss(logp, target, reduction="mean"): -sum(logp[r, target[r]]) / total_weight over the
// rows not ignored, total_weight their count. One CTA: it loads every target (int64, 8 B) and,
// for rows not ignored, the log-probability it indexes (logp_bytes); stores the loss and
// total_weight (fp32, 8 B); 2 FLOPs a counted row (the sum's add and the weight's).
struct NllLoss {
  float loss = 0, total_weight = 0;
  KernelCounts kernel;
};
NllLoss nll_loss(const Tensor& logp, const std::vector<std::int64_t>& target,
                 std::int64_t logp_bytes = 4);

// The gradient of nll_loss's mean w.r.t. logp [R, C] for a loss gradient `grad_loss`: the zero
// fill (FillFunctor, an elementwise launch, grad_bytes per element), then one CTA that loads
// grad_loss and total_weight (8 B) and every target (8 B) and stores -grad_loss / total_weight
// at each counted row's target (grad_bytes).
OpRun nll_loss_backward(const std::vector<std::int64_t>& target, std::int64_t C, float total_weight,
                        float grad_loss = 1.f, std::int64_t grad_bytes = 4);

// F.cross_entropy(logits, target) (mean, ignore_index = -100) and the gradient of the loss
// w.r.t. logits [R, C] (loss gradient 1). Kernels in launch order: log_softmax, nll_loss, the
// zero fill, nll_loss's backward, log_softmax's backward; all in fp32 (the upcast logits).
struct CrossEntropy {
  float loss = 0;
  Tensor dlogits;
  std::vector<KernelCounts> kernels;
};
CrossEntropy cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& target);

}  // namespace gpusim::functional
