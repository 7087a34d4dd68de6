// Parameter counts of a model, as Hugging Face counts them (sum of numel over parameters;
// buffers such as GPT-2's causal mask and RoPE tables are not parameters).
#pragma once

#include <cstdint>

#include "workloads/model_config.h"

namespace gpusim::workloads {

// Every parameter: token embedding, learned position table, per-layer norms, attention and
// MLP (dense, or router + routed experts + shared experts), final norm, and the lm_head unless
// tied to the token embedding.
std::int64_t parameter_count(const ModelConfig& model);

// A pipeline stage's share of `model` (whose layers are the stage's): the token embedding on the
// first stage, the final norm and lm_head on the last.
std::int64_t stage_parameter_count(const ModelConfig& model, bool first, bool last);

// The parameters a token's forward multiplies by: parameter_count without the routed experts a
// token does not visit (each MoE layer counts top_k of its experts).
std::int64_t active_parameter_count(const ModelConfig& model);

}  // namespace gpusim::workloads
