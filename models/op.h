// Framework-level operations: what a PyTorch program asks for (a matmul, an attention call, a
// norm), before any kernel is chosen. Kernel cost models lower these to launches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hw/dtype.h"

namespace gpusim::models {

enum class OpKind {
  kMatmul,          // A[M,K] @ B[K,N]
  kLinear,          // x[M,K] @ W[N,K]^T (+ bias), as F.linear
  kSdpa,            // fused attention over a whole sequence (prefill)
  kSdpaDecode,      // one query token per sequence against a KV cache
  kNaiveAttention,  // matmul, softmax, matmul as separate kernels
  kAdd,
  kMul,
  kSilu,
  kGelu,
  kCast,
  kLayerNorm,
  kRmsNorm,
  kSoftmax,  // over the last dimension
  kCopy,     // a copy into another tensor (x.copy_, a slice assignment such as a KV-cache write)
  kRope,     // rotary embedding as written in PyTorch: x*cos + rotate_half(x)*sin (5 kernels)
  // NCCL collectives over `gpus` GPUs of the system (models/collective_model.h)
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv,
};

// Shapes, one struct per family. All extents are element counts.
struct MatmulShape {
  std::int64_t M, N, K;
};
struct LinearShape {
  std::int64_t M, N, K;
  bool bias = false;
};
struct SdpaShape {
  std::int64_t B, H, S, D;
  bool causal;
  // Causal sliding window: each query attends its last `window` keys (itself included); 0: all.
  std::int64_t window = 0;
  // An explicit additive mask (attn_mask, as transformers passes for windows and padding): no
  // tile is skipped and each score tile adds the mask's tile.
  bool masked = false;
  // dropout_p > 0 (a model in training mode): the kernel draws a Philox number per score.
  bool dropout = false;
  // Keys per (batch, head) when they differ from the S queries (a continuous-batching engine's
  // packed batch attends every cached token through its mask); 0: S.
  std::int64_t keys = 0;
};
struct SdpaDecodeShape {
  std::int64_t B, Hq, Hkv, L, D;  // Hq is a multiple of Hkv (grouped-query attention)
};
struct NaiveAttentionShape {
  std::int64_t B, H, S, D;
  bool causal = false;
  // The softmax written out as cs336_basics does (max, subtract, exp, sum, divide: five
  // kernels) instead of torch.softmax's one.
  bool manual_softmax = false;
  // Autograd's backward of the attention, from the output's gradient, instead of its forward.
  bool backward = false;
};
struct ElementwiseShape {  // add, mul, silu, gelu, copy
  std::int64_t n;
  // An operand is a view that is not dense (a chunk, a transpose, a broadcast): TensorIterator
  // cannot vectorize, so ATen takes its strided elementwise_kernel.
  bool strided = false;
};
struct CastShape {
  std::int64_t n;
  hw::DType from, to;
};
struct RowShape {  // layer_norm, rms_norm, softmax: R rows of C elements
  std::int64_t R, C;
};

// RoPE on q or k of B sequences of S tokens, H heads of D dimensions, laid out as a projection
// writes them ([B, S, H, D]) and rotated through the transposed [B, H, S, D] view.
struct RopeShape {
  std::int64_t B, S, H, D;
};
// A collective's buffer as nccl-tests sizes it (all-reduce: each rank's buffer; all-gather: the
// gathered output; reduce-scatter: the input; all-to-all: each rank's send buffer; send/recv:
// the message), over a group of `gpus` GPUs.
struct CollectiveShape {
  std::int64_t bytes;
  int gpus;
};

using OpShape = std::variant<MatmulShape, LinearShape, SdpaShape, SdpaDecodeShape,
                             NaiveAttentionShape, ElementwiseShape, CastShape, RowShape, RopeShape,
                             CollectiveShape>;

class Op {
 public:
  // The shape must be the family of `kind` (ElementwiseShape for kAdd, ...); a mismatch is a
  // programming error (std::invalid_argument). For kCast, dtype is the output type.
  Op(OpKind kind, hw::DType dtype, OpShape shape);

  OpKind kind() const { return kind_; }
  hw::DType dtype() const { return dtype_; }
  const OpShape& shape() const { return shape_; }
  // The shape as its family, e.g. op.as<MatmulShape>().K; throws if it is another family.
  template <class Shape>
  const Shape& as() const {
    return std::get<Shape>(shape_);
  }

 private:
  OpKind kind_;
  hw::DType dtype_;
  OpShape shape_;
};

// The name used in workload files: "matmul", "sdpa_decode", "layer_norm", ...
std::string_view op_name(OpKind kind);
std::optional<OpKind> parse_op_kind(std::string_view name);
std::vector<std::string_view> op_names();  // every name, in OpKind order

// A collective op kind (kAllReduce ... kSendRecv).
bool is_collective(OpKind kind);

// One line such as "matmul M=2048 N=2048 K=2048 bf16".
std::string describe(const Op& op);

}  // namespace gpusim::models
