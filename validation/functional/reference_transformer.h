// A plain forward pass of a Llama-style decoder (RMSNorm, GQA attention with RoPE, SwiGLU or a
// top-k MoE with shared experts, tied or untied head) in double precision, with the weights
// of synthetic_state.h under the names the hf-eager lowering gives them ("w.layers[0].attn.q_proj",
// a linear weight being [out, in]). The reference the kernel DAG's interpretation is checked
// against.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/model_config.h"

namespace gpusim::functional {

// Logits [batch, vocab] at the last of `positions` tokens (synthetic_token) of each sequence,
// the whole sequence run causally at once.
std::vector<double> reference_logits(const workloads::ModelConfig& m, std::int64_t batch,
                                     std::int64_t positions);

}  // namespace gpusim::functional
