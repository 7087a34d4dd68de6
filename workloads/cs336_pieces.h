// Pieces of the cs336-basics lowering shared by its files (workloads/cs336_lowering.cpp, the
// forward; workloads/cs336_train_lowering.cpp, a training step's loss, backward and optimizer).
// Internal to workloads/.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {

// What autograd saves of cs336_basics' RMSNorm (x ** 2, mean, + eps, sqrt, x / rms, weight *):
// the input (pow's base and the division's dividend), rms (sqrt's result and the divisor), the
// normalized input (the weight product's other factor) and the weight.
struct Cs336NormTape {
  TensorUse x, rms, normed, weight;
  std::int64_t rows = 0, width = 0;
};

// What autograd saves of the hand-written attention: the rotated queries and keys (the scores
// einsum's operands), the causal mask (torch.where's condition), the masked scores and their
// row maxima (torch.amax's input and result), exp's result and the row sums (the softmax
// division's operands), the weights and V's contiguous copy (the second einsum's operands).
// Hand-written softmaxes take the maximum with torch.amax (the measurement script's softmax,
// validation/measure/cs336_forward.py); its saved input is the third S x S tensor seed 002's
// attention benchmark keeps alive before backward (24.9 GB at S = 16384).
struct Cs336AttentionTape {
  TensorUse q, k, mask, scores, max, exp, sum, probs, v;
};

// What a training step's backward reads of one TransformerBlock's forward.
struct Cs336LayerTape {
  Cs336NormTape ln1, ln2;
  TensorUse h, wq, wk, wv, wo;
  // The cos / sin rows each RoPE call gathers at the positions (its products' saved factors).
  TensorUse rope_q_table, rope_k_table;
  Cs336AttentionTape attn;
  TensorUse merged;  // the heads rearranged back: output_proj's input
  TensorUse h2, w1, w3, w2;
  TensorUse gate, sigmoid, act, up, prod;  // w1 x, sigmoid(w1 x), silu, w3 x, silu * w3 x
};

// What a training step's backward reads of the forward: every block's tape, the token ids, the
// final norm, the head and the logits.
struct Cs336ForwardTape {
  std::vector<Cs336LayerTape> layers;
  TensorUse ids, embedding;
  Cs336NormTape ln_final;
  TensorUse hidden, head, logits;  // ln_final's output, lm_head's weight, the logits
};

// The cs336_basics forward of one step (whole sequences, lm_head on every position); with a
// `tape`, the tensors autograd saves for a backward are recorded there.
void lower_cs336_forward(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b, Cs336ForwardTape* tape);

}  // namespace gpusim::workloads::detail
