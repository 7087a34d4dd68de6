#include "validation/functional/column_sum.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace gpusim::functional {

OpRun column_sum(const Tensor& x, const ColumnSumPlan& plan, std::int64_t in_bytes,
                 std::int64_t out_bytes) {
  if (x.shape.size() != 2 || plan.cols_per_cta <= 0 || plan.ctas_per_output <= 0) {
    throw std::invalid_argument("column_sum: x [R, C] and a positive plan");
  }
  const std::int64_t R = x.dim(0), C = x.dim(1), split = plan.ctas_per_output;
  const std::int64_t blocks = (C + plan.cols_per_cta - 1) / plan.cols_per_cta;
  // Share y's first row: the first R % split shares take one row more.
  const std::int64_t base = R / split, extra = R % split;
  const auto share_begin = [&](std::int64_t y) { return y * base + std::min(y, extra); };
  OpRun run;
  run.out = Tensor({C});
  Tensor partial({split, C});
  Footprint fx(x.numel(), in_bytes);
  run.kernels.push_back(run_ctas("column_sum", blocks * split, [&](std::int64_t cta, CtaCount& c) {
    const std::int64_t b = cta / split, y = cta % split;
    const std::int64_t j0 = b * plan.cols_per_cta, cols = std::min(plan.cols_per_cta, C - j0);
    const std::int64_t r0 = share_begin(y), r1 = share_begin(y + 1);
    std::vector<float> acc(static_cast<std::size_t>(cols), 0.f);
    for (std::int64_t r = r0; r < r1; ++r) {
      count_load(c, fx, r * C + j0, cols);
      for (std::int64_t j = 0; j < cols; ++j) acc[static_cast<std::size_t>(j)] += x[r * C + j0 + j];
    }
    c.math_flops = (r1 - r0) * cols;
    if (split == 1) {
      for (std::int64_t j = 0; j < cols; ++j) run.out[j0 + j] = acc[static_cast<std::size_t>(j)];
      c.bytes_written = cols * out_bytes;
    } else {
      for (std::int64_t j = 0; j < cols; ++j)
        partial[y * C + j0 + j] = acc[static_cast<std::size_t>(j)];
      c.bytes_written = cols * 4;
    }
    c.useful_flops = c.math_flops;
  }));
  if (split > 1) {
    // The global reduction, by the block's last CTA (index order: share split - 1), after
    // every share's partials are stored (the semaphore on the GPU, the loop's end here).
    for (std::int64_t b = 0; b < blocks; ++b) {
      CtaCount& c = run.kernels[0].ctas[static_cast<std::size_t>(b * split + split - 1)];
      const std::int64_t j0 = b * plan.cols_per_cta, cols = std::min(plan.cols_per_cta, C - j0);
      for (std::int64_t j = 0; j < cols; ++j) {
        float sum = 0.f;
        for (std::int64_t y = 0; y < split; ++y) sum += partial[y * C + j0 + j];
        run.out[j0 + j] = sum;
      }
      c.bytes_loaded += split * cols * 4;
      c.bytes_written += cols * out_bytes;
      c.math_flops += split * cols;
      c.useful_flops += split * cols;
    }
  }
  return run;
}

}  // namespace gpusim::functional
