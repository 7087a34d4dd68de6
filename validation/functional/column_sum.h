// x.sum(0) over the rows of R x C (bias and norm-weight gradients) as ATen's reduce_kernel
// splits it for a reduction over the outer dimension (models/column_sum.cpp,
// lower_column_sum): CTA (x, y) owns a block of cols_per_cta columns and the y-th of
// ctas_per_output even shares of the rows (the first R % ctas_per_output shares one row longer,
// as the blockIdx-ordered schedule splits them). With the rows split (ctas_per_output > 1) each
// CTA stores its fp32 partial sums and the last CTA of a column block adds them up (ATen's
// global reduction through a semaphore).
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

struct ColumnSumPlan {
  std::int64_t cols_per_cta = 32;
  std::int64_t ctas_per_output = 1;
};

// x [R, C] -> [C]. CTA index: block * ctas_per_output + share (the model's class order).
// Counts per CTA: its rows x columns of x loaded (in_bytes), one add per element; with one
// share it stores its outputs (out_bytes); with several it stores its fp32 partials, and the
// last share's CTA of each block also loads every share's partials (4 B), adds them (one add
// each) and stores the outputs. Partials are added in share order: the result does not depend
// on which CTA finishes last.
OpRun column_sum(const Tensor& x, const ColumnSumPlan& plan, std::int64_t in_bytes,
                 std::int64_t out_bytes);

}  // namespace gpusim::functional
