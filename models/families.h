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
};
// `linear`: F.linear's layout (W is [N, K]); it changes kernel names, not work.
std::vector<Launch> lower_gemm(const GemmProblem& p, const hw::HardwareSpec& hw,
                               const std::string& tag, bool linear = false);

class GemmModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

// ---- elementwise_model.cpp: add, mul, silu, gelu, cast (ATen CUDALoops.cuh) ---------------

enum class EwFunc { kAdd, kMul, kMulScalar, kSilu, kGelu, kCast, kMaskedFill };
struct ElementwiseProblem {
  EwFunc func = EwFunc::kAdd;
  std::int64_t n = 0;
  hw::DType in = hw::DType::kBf16, out = hw::DType::kBf16;
  std::vector<std::string> inputs;  // tagged names, one per tensor input
  std::string output;
  // kMaskedFill: the mask is broadcast (an S x S bool mask over B*H of them), so the
  // iterator is not contiguous and ATen takes the non-vectorized legacy kernel.
  std::int64_t mask_bytes = 0;
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

// ---- naive_attention_model.cpp: bmm, scale, (mask), softmax, bmm --------------------------

class NaiveAttentionModel final : public KernelModel {
 public:
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                            const std::string& tag) const override;
};

}  // namespace gpusim::models
