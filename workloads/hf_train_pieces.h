// Pieces of the hf-eager training step shared by its files (workloads/hf_train_lowering.cpp, the
// step and llama-style decoders; workloads/hf_train_gpt2.cpp, GPT-2's backward). Internal to
// workloads/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "workloads/hf_eager_pieces.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {

// The parameters' gradients (.grad) by parameter tensor name. With gradient accumulation, a
// micro-batch after the first adds its gradient into .grad (AccumulateGrad's in-place add).
struct Grads {
  StepEmitter* e = nullptr;
  bool accumulate = false;
  std::map<std::string, TensorUse> of;
  void add(const TensorUse& param, const TensorUse& grad);
  // A parameter's .grad (a state tensor for one the step gave no gradient).
  TensorUse of_param(const TensorUse& param) const;
};

// A parameter in model.parameters() order, with its element count.
struct TrainParam {
  TensorUse weight;
  std::int64_t elems;
};

// C[M, N] = A[M, K] @ B[K, N] as autograd's mm (cuBLAS, the layouts' transposes aside).
TensorUse mm(StepEmitter& e, const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
             const TensorUse& a, const TensorUse& b);

// The two GEMMs of y[T, N] = x[T, K] @ W[N, K]^T's backward: the weight's gradient first
// (dY^T @ X), then the input's (dY @ W), as autograd's mm backward orders them. Under autocast
// they read what the forward's GEMM read (the cast input and weight), the input's gradient is
// cast back to the input's type when autocast had cast it, then the weight's to fp32 (the
// backward of autocast's weight cast). Returns {dW, dX}.
std::pair<TensorUse, TensorUse> gemm_backward(StepEmitter& e, const std::string& label, std::int64_t M,
                                              std::int64_t N, std::int64_t K, const TensorUse& dy,
                                              const TensorUse& x, const TensorUse& w);

// The backward of y[T, N] = x[T, K] @ W (+ bias), W as F.linear's [N, K] or Conv1D's [K, N]:
// gemm_backward, then the bias's gradient as a column sum of dY (cast to fp32 under autocast).
TensorUse linear_backward(StepEmitter& e, const std::string& label, std::int64_t N, std::int64_t K,
                          const TensorUse& dy, const TensorUse& x, const TensorUse& w, const TensorUse* bias,
                          Grads& g);

// GPT-2 (workloads/hf_train_gpt2.cpp): the backward from the final LayerNorm's output gradient
// `dh` through every GPT2Block (recomputed first under checkpointing), the embedding dropout and
// the position embedding; returns the gradient of the token embeddings' output.
TensorUse gpt2_backward(StepEmitter& e, ForwardTape& tape, const TensorUse& dh, Grads& g);

// GPT-2's parameters in model.parameters() order (wte, wpe, per block ln_1, c_attn, c_proj,
// ln_2, c_fc, mlp.c_proj, each weight then bias, then ln_f).
std::vector<TrainParam> gpt2_parameters(StepEmitter& e, const ForwardTape& tape);

}  // namespace gpusim::workloads::detail
