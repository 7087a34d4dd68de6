// The tiny Llama's training step written independently of the functional kernels, in plain
// double-precision loops: the forward loss (training_step.h's model: RMSNorm, RoPE, causal
// grouped-query softmax attention, SwiGLU, untied head, cross-entropy over the shifted labels),
// its gradients by central finite differences of that loss, and the AdamW and SGD updates as
// torch.optim writes them. The reference the kernels' training step is checked against.
#pragma once

#include <cstdint>
#include <vector>

#include "validation/functional/adamw.h"
#include "validation/functional/training_step.h"

namespace gpusim::functional::reference {

using Params = std::vector<std::vector<double>>;  // per parameter, training_step.h's order

Params to_double(const std::vector<Parameter>& params);

double training_loss(const TinyLlamaConfig& cfg, const Params& params, const TrainingBatch& batch);

// (loss(p + h e_i) - loss(p - h e_i)) / 2h for every element i (in parallel over elements;
// each element's difference is computed the same way whatever the thread count).
Params finite_difference_gradients(const TinyLlamaConfig& cfg, const Params& params,
                                   const TrainingBatch& batch, double h);

// AdamW with decoupled weight decay, in place; `steps` is incremented first (bias corrections
// of the new step): p -= lr wd p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr mhat / (sqrt(vhat) + eps).
void adamw(Params& params, const Params& grads, Params& m, Params& v, std::int64_t& steps,
           const AdamWConfig& cfg);

// SGD with momentum (buffers empty: the first step, buffer = g), weight decay added to g.
void sgd(Params& params, const Params& grads, Params& buffers, const SgdConfig& cfg);

}  // namespace gpusim::functional::reference
