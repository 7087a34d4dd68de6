#include "validation/functional/embedding_backward.h"

#include <algorithm>
#include <stdexcept>

#include "validation/functional/elementwise.h"

namespace gpusim::functional {

OpRun embedding_backward(const std::vector<std::int64_t>& ids, const Tensor& dy, std::int64_t V,
                         std::int64_t elt_bytes) {
  const auto T = static_cast<std::int64_t>(ids.size());
  if (dy.shape.size() != 2 || dy.dim(0) != T)
    throw std::invalid_argument("embedding_backward: dy [T, d]");
  for (const auto id : ids) {
    if (id < 0 || id >= V) throw std::invalid_argument("embedding_backward: index out of range");
  }
  const std::int64_t d = dy.dim(1);
  EwKernel zero;
  zero.name = "embedding_backward.zero";
  zero.out_shape = {V, d};
  zero.f = [](const float*) { return 0.f; };
  zero.per_cta = elementwise_elements_per_cta(0, elt_bytes, elt_bytes, false);
  zero.in_bytes = zero.out_bytes = elt_bytes;
  OpRun run = elementwise(zero);

  Footprint fid(T, 8), fdy(dy.numel(), elt_bytes), ftable(V * d, elt_bytes);
  const std::int64_t ctas = (d + kEmbeddingFeatures - 1) / kEmbeddingFeatures;
  run.kernels.push_back(
      run_ctas("embedding_backward_feature", ctas, [&](std::int64_t cta, CtaCount& c) {
        const std::int64_t f0 = cta * kEmbeddingFeatures,
                           cols = std::min(kEmbeddingFeatures, d - f0);
        std::vector<float> sum(static_cast<std::size_t>(cols));
        for (std::int64_t t0 = 0; t0 < T; t0 += kEmbeddingChunk) {
          const std::int64_t n = std::min(kEmbeddingChunk, T - t0);
          count_load(c, fid, t0, n);
          for (std::int64_t t = t0; t < t0 + n; ++t) count_load(c, fdy, t * d + f0, cols);
          for (std::int64_t t = t0; t < t0 + n; ++t) {
            const std::int64_t id = ids[static_cast<std::size_t>(t)];
            // The warp of the index's first occurrence in the chunk leads it.
            if (std::find(ids.begin() + t0, ids.begin() + t, id) != ids.begin() + t) continue;
            count_load(c, ftable, id * d + f0, cols);
            for (std::int64_t j = 0; j < cols; ++j)
              sum[static_cast<std::size_t>(j)] = run.out[id * d + f0 + j];
            for (std::int64_t u = t; u < t0 + n; ++u) {
              if (ids[static_cast<std::size_t>(u)] != id) continue;
              for (std::int64_t j = 0; j < cols; ++j)
                sum[static_cast<std::size_t>(j)] += dy[u * d + f0 + j];
            }
            for (std::int64_t j = 0; j < cols; ++j)
              run.out[id * d + f0 + j] = sum[static_cast<std::size_t>(j)];
            c.bytes_written += cols * elt_bytes;
          }
        }
        c.math_flops = c.useful_flops = T * cols;
      }));
  return run;
}

}  // namespace gpusim::functional
