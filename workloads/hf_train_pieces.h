// Pieces of the hf-eager training lowering shared by its files (workloads/hf_train_lowering.cpp,
// the step and the llama-style layers; workloads/hf_train_moe.cpp, the MoE block's backward).
// Internal to workloads/.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "models/families.h"
#include "workloads/hf_eager_pieces.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {

// The parameters' gradients (.grad) by parameter tensor name. With gradient accumulation, a
// micro-batch after the first adds its gradient into .grad (AccumulateGrad's in-place add).
struct Grads {
  StepEmitter* e = nullptr;
  bool accumulate = false;
  std::map<std::string, TensorUse> of;
  void add(const TensorUse& param, const TensorUse& grad) {
    auto it = of.find(param.tensor);
    if (!accumulate || it == of.end()) {
      of[param.tensor] = grad;
      return;
    }
    const auto n = static_cast<std::int64_t>(static_cast<double>(grad.bytes) / e->act_bytes());
    it->second = e->pointwise(param.tensor + ".accumulate_grad", models::EwFunc::kAdd, n, e->act(), e->act(),
                              {it->second, grad}, false);
  }
  // A parameter's .grad (a state tensor for one the step gave no gradient).
  TensorUse of_param(const TensorUse& param) const {
    const auto it = of.find(param.tensor);
    return it != of.end() ? it->second : e->b().state(param.tensor + ".grad", param.bytes);
  }
};

// The backward of y[T, N] = x[T, K] @ W[N, K]^T (+ bias) over the step's T tokens: the weight's
// gradient (dY^T X), the input's (dY W), then the bias's; returns the input's gradient.
TensorUse linear_backward(StepEmitter& e, const std::string& label, std::int64_t N, std::int64_t K,
                          const TensorUse& dy, const TensorUse& x, const TensorUse& w, const TensorUse* bias,
                          Grads& g);

// The backward of a MoE block (workloads/hf_train_moe.cpp) from its output's gradient `dy`:
// returns the gradient of its input.
TensorUse moe_backward(StepEmitter& e, const std::string& label, const MoeTape& t, const TensorUse& dy, Grads& g);

}  // namespace gpusim::workloads::detail
