// The kernel families (one .cpp each) and the lowering helpers one family may reuse from
// another (naive attention composes the GEMM, elementwise and softmax models).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "models/kernel_model.h"

namespace gpusim::models {

// ---- gemm_model.cpp: matmul, linear (cuBLAS / cuBLASLt) -----------------------------------

// C[M,N] = A[M,K] @ B[K,N] (+ bias[N]), `batch` independent problems (strided batched GEMM).
struct GemmProblem {
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t batch = 1;
  hw::DType dtype = hw::DType::kBf16;  // tf32: fp32 storage, tensor-core math
  bool bias = false;
  // Tensor names (already tagged) for L2 residency.
  std::string a, b, c, bias_name;
  // Leading dimensions of A and B as stored (elements between rows, or columns of a transposed
  // view); 0: contiguous as lower_gemm lays them out (A's K, B's N). They set the widest aligned
  // load, and so which kernels cuBLAS can run: a transposed view of a [50257, d] tensor is
  // unaligned whatever M, N and K are.
  std::int64_t lda = 0, ldb = 0;
};
// `linear`: F.linear's layout (W is [N, K]); it changes kernel names, not work.
std::vector<Launch> lower_gemm(const GemmProblem& p, const hw::HardwareSpec& hw,
                               const std::string& tag, bool linear = false);

// The tiling lower_gemm chooses for a problem (read-only; the same choice, no side effects):
// tile_m x tile_n output tiles, K sliced `tile_k` deep, `split` K slices of k_per_split each
// (k_per_split = round_up(ceil(K / split), tile_k); the last slice may be shorter). For the
// gemv kernel (one-row products off Hopper) tile_m = 1, tile_n = 4 (outputs per CTA), tile_k = 1.
struct GemmTiling {
  std::int64_t tile_m = 0, tile_n = 0, tile_k = 0, split = 1;
  std::int64_t k_per_split = 0;
};
GemmTiling gemm_tiling(const GemmProblem& p, const hw::HardwareSpec& hw, bool linear = false);

class GemmModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- elementwise_model.cpp: add, mul, silu, gelu, cast (ATen CUDALoops.cuh) ---------------

enum class EwFunc {
  kAdd, kMul, kMulScalar, kSilu, kGelu, kCast, kMaskedFill,
  // the small kernels of eager transformer code (RMSNorm in fp32, RoPE, MoE routing)
  kNeg, kPowScalar, kAddScalar, kRsqrt, kCos, kSin, kDiv, kCopy, kCompareScalar, kFill, kClamp,
  kFloorDivide, kTanh,
  // hand-written model code (cs336_basics: softmax by exp and sum, RMSNorm by sqrt, SiLU by sigmoid)
  kExp, kSqrt, kSigmoid, kWhere,
  // autograd's backward kernels (training steps)
  kSiluBackward,
  // hand-written model code's loss and backward: logsumexp's log and abs, sigmoid's backward,
  // torch.amax's backward compare (a bool result)
  kLog, kAbs, kSigmoidBackward, kEq,
  // GPT-2's training step: gelu_new's tanh backward (grad * (1 - y^2)) and dropout's backward
  // (masked_scale_kernel: grad times a bool mask times 1 / (1 - p); the mask is one byte an element)
  kTanhBackward, kMaskedScale,
  // SDPA's math backend (fp32 training): _safe_softmax's isneginf (a bool result)
  kIsNegInf,
};
struct ElementwiseProblem {
  EwFunc func = EwFunc::kAdd;
  std::int64_t n = 0;
  hw::DType in = hw::DType::kBf16, out = hw::DType::kBf16;
  std::vector<std::string> inputs;  // tagged names, one per tensor input
  std::string output;
  // kMaskedFill: the mask is broadcast (an S x S bool mask over B*H of them), so the
  // iterator is not contiguous and ATen takes the non-vectorized legacy kernel. kWhere with
  // mask_bytes: its first input is such a bool mask (one byte an element, `mask_bytes` of them
  // distinct), its other inputs tensors of type `in`.
  std::int64_t mask_bytes = 0;
  // A one-byte output is a bool (a mask: torch.ones(..., dtype=torch.bool)), not fp8: only the
  // functor's name differs (kFill).
  bool bool_out = false;
  // An operand is broadcast or not dense (a transposed view, a slice): TensorIterator cannot
  // vectorize, so ATen takes the legacy elementwise_kernel with an offset calculator.
  bool strided = false;
  // Type promotion (an fp32 tensor plus a bf16 one under autocast, a casting copy into a tensor
  // of another type): each tensor input's type, given when some input is not of the functor's
  // type (`out`). TensorIterator then converts while loading (dynamic casting): the unrolled
  // kernel with LoadWithCast<inputs> when contiguous, gpu_kernel_impl (not _nocast) when
  // strided. Empty: every input is `in`, as before.
  std::vector<hw::DType> input_types;
};
// One launch, or several when TensorIterator splits the tensor for 32-bit indexing.
std::vector<Launch> lower_elementwise(const ElementwiseProblem& p, const hw::HardwareSpec& hw,
                                      const std::string& tag);

class ElementwiseModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- row_reduction_model.cpp: layer_norm, rms_norm, softmax -------------------------------

// Softmax over the last dimension of R x C; `input` and `output` are names under `tag`.
std::vector<Launch> lower_softmax(std::int64_t R, std::int64_t C, hw::DType dtype,
                                  const std::string& input, const std::string& output,
                                  const hw::HardwareSpec& hw, const std::string& tag);

class RowReductionModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- flash_attention_model.cpp: sdpa (FlashAttention-2 forward, PyTorch's flash backend) --

class FlashAttentionModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- decode_attention_model.cpp: sdpa_decode (split-KV flash forward + combine) -----------

// FlashAttention's num_splits_heuristic (flash_api.cpp): the fewest splits whose wave
// efficiency is at least 85% of the best.
int flash_num_splits(int batch_nheads_mblocks, int num_sms, int num_n_blocks, int max_splits);

class DecodeAttentionModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- rope_model.cpp: rotary embedding as PyTorch code writes it (mul, neg, cat, mul, add) ----

class RopeModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- collective_op_model.cpp: allreduce ... sendrecv ops through models/collective_model.h --

class CollectiveOpModel final : public KernelModel {
 public:
  // ModelError when the chip has no interconnect or fewer GPUs than the op's group.
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- naive_attention_model.cpp: bmm, scale, (mask), softmax, bmm --------------------------

class NaiveAttentionModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

}  // namespace gpusim::models

namespace gpusim::models {

// ---- aten_kernels.cpp: the small ATen kernels of eager transformer code --------------------
// Tensor uses are passed in already named (the caller owns the names); element counts are
// per tensor.

// nn.Embedding / index_select of `rows` rows of `row_elems` elements: indexSelectSmallIndex for
// at most 16 indices, else the vectorized gather kernel.
Launch lower_embedding_lookup(std::int64_t rows, std::int64_t row_elems, hw::DType dtype,
                              const TensorUse& table, const TensorUse& out,
                              const hw::HardwareSpec& hw);

// torch.cat of inputs with `input_elems` elements each. `vectorized`: every input is dense and
// aligned (CatArrayBatchedCopy_vectorized, 128 threads x 16 bytes per CTA and input, at most
// 32 CTAs per SM); otherwise the strided kernel on a 2-per-SM grid of 512-thread CTAs per
// input, where `dense[i]` says input i is contiguous (read without an offset computation;
// missing entries: strided).
Launch lower_cat(const std::vector<std::int64_t>& input_elems, hw::DType dtype, bool vectorized,
                 const std::vector<TensorUse>& inputs, const TensorUse& out,
                 const hw::HardwareSpec& hw, const std::vector<bool>& dense = {});

// reduce_kernel over `outputs` results of `reduced` elements each. `inner`: the reduced
// elements are contiguous (mean over the last dim); otherwise strided (sum over top-k slots).
Launch lower_reduce(std::int64_t outputs, std::int64_t reduced, hw::DType in, hw::DType out,
                    bool inner, std::string_view op_functor, const TensorUse& input,
                    const TensorUse& output, const hw::HardwareSpec& hw);

// torch.ones(rows, cols, dtype=torch.bool).tril() (SDPA's math backend builds its causal mask
// so): triu_tril_kernel<bool, int, false, 8, false> out of place, 8 elements a thread, 128
// threads a CTA.
Launch lower_tril_bool(std::int64_t rows, std::int64_t cols, const TensorUse& in, const TensorUse& out,
                       const hw::HardwareSpec& hw);

// MoE routing bookkeeping (transformers' grouped_mm experts path): top-k over `rows` rows of
// `cols` logits (2 kernels), sort of `n` expert ids (bitonic up to 32, the single-CTA radix
// sort up to 4,096, else cub's onesweep radix sort), histogram into `bins`, cumsum over bins
// (2 kernels), arange of `n`, a row gather of `rows` rows of `row_bytes` bytes, and
// index/index_put over `n` scalars.
std::vector<Launch> lower_topk(std::int64_t rows, std::int64_t cols, std::int64_t k,
                               const TensorUse& in, const TensorUse& out, const hw::HardwareSpec& hw);
std::vector<Launch> lower_sort(std::int64_t n, const TensorUse& inout, const hw::HardwareSpec& hw);
Launch lower_histogram(std::int64_t n, std::int64_t bins, const TensorUse& in, const TensorUse& out,
                       const hw::HardwareSpec& hw);
std::vector<Launch> lower_cumsum(std::int64_t n, const TensorUse& in, const TensorUse& out,
                                 const hw::HardwareSpec& hw);
Launch lower_arange(std::int64_t n, const TensorUse& out, const hw::HardwareSpec& hw);
Launch lower_row_gather(std::int64_t rows, double row_bytes, const TensorUse& in,
                        const TensorUse& out, const hw::HardwareSpec& hw);
Launch lower_index_scalars(std::int64_t n, bool put, const TensorUse& in, const TensorUse& out,
                           const hw::HardwareSpec& hw);

// ---- flash_mla.cpp: FlashMLA decode over a latent cache (metadata, split kernel, combine) ----

// `heads` query heads of B sequences against `keys` cached tokens of latent + rope elements each;
// the values are the latent. `q` is [B, heads, latent + rope] (queries absorbed into the latent),
// `out` [B, heads, latent].
std::vector<Launch> lower_flash_mla(std::int64_t B, std::int64_t heads, std::int64_t keys, std::int64_t latent,
                                    std::int64_t rope, hw::DType dtype, const TensorUse& q, const TensorUse& cache,
                                    const TensorUse& out, const hw::HardwareSpec& hw);

// ---- grouped_gemm_model.cpp: torch._grouped_mm (CUTLASS sm90 ptr-array grouped GEMM) ------

// out[rows of expert e] = in[rows of e] @ W[e]^T for every expert with rows; W[e] is [N, K].
// `rows_per_expert` lists the token count of each expert (0 for experts with no tokens).
std::vector<Launch> lower_grouped_gemm(const std::vector<std::int64_t>& rows_per_expert,
                                       std::int64_t N, std::int64_t K, hw::DType dtype,
                                       const TensorUse& in, const TensorUse& weights,
                                       const TensorUse& out, const hw::HardwareSpec& hw);

}  // namespace gpusim::models
