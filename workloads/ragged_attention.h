// A ragged step's attention, as continuous-batching engines run it over a paged KV cache
// (FlashInfer-style, as vLLM and SGLang do): one variable-length prefill kernel over every
// prefilling sequence's chunk against its cached context, and one paged decode kernel over the
// decoding sequences.
#pragma once

#include <cstdint>
#include <string>

#include "hw/launch.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads {

// Emits layer `layer`'s attention of the ragged step e.s() (StepShape::seqs): reads `q` (every
// token's queries, rotated) and `cache` (K and V of every sequence), writes `o`.
//  * Prefill chunks (more than one new token, or none cached): FlashAttention-2's forward kernel
//    with one CTA per 128-query tile and head of each sequence, causal against the sequence's
//    cache (bottom-right aligned), all in one launch.
//  * Decodes (one new token against a cache): flash decoding over the decoding sequences at
//    their mean cache length (the split-KV choice is made for the batch, as the kernels do;
//    unequal lengths finish unevenly, which this does not model).
// With the engine's attention `unified-varlen` (ModelWorkload::ServingKernels), every sequence
// runs in the one varlen launch instead, a decode as a one-row query tile sweeping its whole
// cache; a decode-only batch with grouped-query heads runs FlashAttention-2's swapped form.
void ragged_attention(detail::StepEmitter& e, const std::string& label, const hw::TensorUse& q,
                      const hw::TensorUse& cache, const hw::TensorUse& o, std::int64_t layer);

}  // namespace gpusim::workloads
