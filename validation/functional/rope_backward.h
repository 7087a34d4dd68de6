// The backward of rotary position embeddings, y = x * cos + rotate_half(x) * sin with
// rotate_half(x) = cat(-x2, x1) (rope.h): with x1, x2 the halves of a head row,
//   dx1 = dy1 * cos1 + dy2 * sin2,   dx2 = dy2 * cos2 - dy1 * sin1,
// the rotation by the opposite angle. One fused pass, a CTA per (batch, head, position) row;
// the hf-train lowering runs autograd's nine eager kernels for it (rope_backward: the products,
// rotate_half's slices as zero fills and copies, the sums), elementwise launches that compute
// the same function: no cost model of this fused pass exists, so numerics only.
#pragma once

#include <cstdint>

#include "validation/functional/op_run.h"

namespace gpusim::functional {

// dy [B, H, S, D] (D even), cos and sin [S, D] -> dx [B, H, S, D]. Counts per CTA: the row of
// dy, cos and sin loaded, the row of dx stored (elt_bytes), 3 FLOPs per element.
OpRun rope_backward(const Tensor& dy, const Tensor& cos, const Tensor& sin, std::int64_t elt_bytes);

}  // namespace gpusim::functional
