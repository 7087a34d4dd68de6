// Optimizer steps as torch.optim runs them on the GPU (PyTorch 2.11;
// workloads/hf_train_lowering.cpp, optimizer_step; models/foreach_kernels.cpp), over fp32 tensors,
// counted in the modeled dtype:
//  * AdamW, foreach (the default): _multi_tensor_adam with decoupled weight decay, 8 foreach ops:
//      p *= 1 - lr wd;  m.lerp_(g, 1 - b1);  v *= b2;  v.addcmul_(g, g, 1 - b2);
//      d = sqrt(v);  d /= sqrt(1 - b2^t) (a scalar per tensor);  d += eps;
//      p.addcdiv_(m, d, -lr / (1 - b1^t)) (a scalar per tensor)
//    i.e. p <- p (1 - lr wd) - lr mhat / (sqrt(vhat) + eps), mhat = m / (1 - b1^t),
//    vhat = v / (1 - b2^t), with m <- b1 m + (1 - b1) g and v <- b2 v + (1 - b2) g^2.
//  * AdamW, fused (torch._fused_adamw_): one multi_tensor_apply kernel over (p, g, m, v), the
//    same formula in FusedAdamMathFunctor's order (hyperparameters in double).
//  * SGD with momentum, foreach: buf *= momentum; buf += (1 - dampening) g; p += -lr buf
//    (the first step clones g into buf instead); weight decay adds wd p to g first.
// Scalars reach the foreach kernels as fp32 (their opmath type), as in PyTorch.
#pragma once

#include <cstdint>
#include <vector>

#include "validation/functional/counters.h"
#include "validation/functional/tensor.h"

namespace gpusim::functional {

struct AdamWConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
};

// Per parameter: the moments (same shapes) and the steps taken so far (the step about to run
// is steps + 1). PyTorch keeps a step count per parameter; one count serves all here.
struct AdamState {
  std::vector<Tensor> exp_avg, exp_avg_sq;
  std::int64_t steps = 0;
};
// Zero moments shaped as `params`, no steps taken.
AdamState adam_state_for(const std::vector<Tensor*>& params);

// One step, in place on params and state. Kernels: the 8 foreach ops' launches in order
// (names "adamw.<op>"), or the fused kernel's launches. FLOPs per element as the lowering
// charges them for the foreach ops (weight decay 1, lerp 3, mul 1, addcmul 3, sqrt 2 as an
// rsqrt and a multiply, div 2, add 1, addcdiv 3); the fused kernel counts 14 (the formula's
// operations, square root excluded).
std::vector<KernelCounts> adamw_foreach(const std::vector<Tensor*>& params,
                                        const std::vector<Tensor*>& grads, AdamState& state,
                                        const AdamWConfig& cfg, std::int64_t elt_bytes);
std::vector<KernelCounts> adamw_fused(const std::vector<Tensor*>& params,
                                      const std::vector<Tensor*>& grads, AdamState& state,
                                      const AdamWConfig& cfg, std::int64_t elt_bytes);

struct SgdConfig {
  double lr = 1e-2, momentum = 0.9, dampening = 0.0, weight_decay = 0.0;
};
// `momentum_buffers` empty: the first step (each buffer a clone of its gradient, uncounted
// copies). Kernels: with weight decay "sgd.weight_decay" (g + wd p into a new list), then
// "sgd.momentum_mul" and "sgd.momentum_add" (steady state only) and "sgd.param_add"; FLOPs
// 2, 1, 2, 2 per element. Momentum 0: no buffers, p += -lr g. `grads` are not modified.
std::vector<KernelCounts> sgd_foreach(const std::vector<Tensor*>& params,
                                      const std::vector<Tensor*>& grads,
                                      std::vector<Tensor>& momentum_buffers, const SgdConfig& cfg,
                                      std::int64_t elt_bytes);

}  // namespace gpusim::functional
