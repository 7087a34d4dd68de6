// Pieces of the hf-eager lowering shared by its files (workloads/hf_eager_lowering.cpp, the
// llama-style families; workloads/hf_eager_mla.cpp, DeepSeek's multi-head latent attention).
// Internal to workloads/.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {

// RMSNorm over `rows` rows of `width` as the model's class computes it (LlamaRMSNorm, or Gemma's
// 1 + weight); a strided input (a split view) is read by the legacy copy kernel.
TensorUse rms_norm_rows(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t rows,
                        std::int64_t width, bool strided_input);

// DeepseekV2RotaryEmbedding: the complex table freqs_cis (first; second unused).
std::pair<TensorUse, TensorUse> mla_rotary_table(StepEmitter& e);

// DeepseekV2Attention (transformers 5.x): q (direct or through the q LoRA), the compressed
// latent and its norm, complex RoPE, the latent cache, keys and values expanded from the whole
// latent cache each step, sdpa and o_proj. Returns o_proj's output.
TensorUse mla_attention(StepEmitter& e, const std::string& label, const TensorUse& h,
                        const std::pair<TensorUse, TensorUse>& rot);

}  // namespace gpusim::workloads::detail
