// nn.Embedding's backward for few indices (T <= 3072; more take ATen's sort path, not decomposed
// here) as ATen runs it (Embedding.cu; models/embedding_backward.cpp, lower_embedding_backward):
// the gradient table zeroed (FillFunctor, an elementwise launch), then
// embedding_backward_feature_kernel: one CTA per 32 features walks the indices in chunks of 32
// (a warp per index); per chunk it loads the chunk's indices and its features of their gradient
// rows, and for each distinct index of the chunk the warp that leads it adds the chunk's rows of
// that index (in chunk order) into the table row: a load and a store of its features. Each CTA
// owns its features of every table row, so the accumulation has no races and runs in index
// order.
#pragma once

#include <cstdint>
#include <vector>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

constexpr std::int64_t kEmbeddingFeatures = 32, kEmbeddingChunk = 32;

// ids (T, each in [0, V)), dy [T, d] -> grad_table [V, d]. Counts of the feature kernel per
// CTA: every index (8 B) and its features of every gradient row (elt_bytes) loaded; per chunk
// and distinct index, its features of the table row loaded and stored; one add per gradient
// element.
OpRun embedding_backward(const std::vector<std::int64_t>& ids, const Tensor& dy, std::int64_t V,
                         std::int64_t elt_bytes);

}  // namespace gpusim::functional
