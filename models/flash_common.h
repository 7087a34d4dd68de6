// FlashAttention-2 kernel traits and the flash_fwd_kernel lowering, shared by sdpa (prefill)
// and sdpa_decode (which falls back to the plain kernel when it chooses one split).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"

namespace gpusim::models {

// Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, ...>.
struct FlashTraits {
  std::int64_t head_dim = 0, block_m = 0, block_n = 0, warps = 0;
  std::int64_t smem = 0;  // bytes per CTA
  int regs = 0;           // registers per thread of the compiled kernel
};

// The traits flash_fwd_kernel uses for head dimension D (run_mha_fwd_hdim*).
FlashTraits flash_fwd_traits(std::int64_t D, const hw::HardwareSpec& hw);
// Registers per thread of the compiled kernels (from the profiler; see the definition).
int flash_fwd_regs(const FlashTraits& t);
// Registers of flash_fwd_splitkv_combine_kernel (from the profiler).
int flash_combine_regs(int log_max_splits);
// Static shared memory of the combine kernel: sLSE[kMaxSplits][kBlockM + 1] floats, 16-aligned.
std::int64_t flash_combine_smem(std::int64_t block_m, int log_max_splits);
// "Flash_fwd_kernel_traits<128, 128, 64, 4, false, false>".
std::string flash_traits_name(const FlashTraits& t);
// "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, ...>, ...>" names.
std::string fmt_flash_name(const char* kernel, const FlashTraits& t, bool causal);

// Attention dropout inside the fused kernels (cuDNN's sdpa with dropout_p > 0): the Philox
// 4x32-10 draws (ten rounds of two wide 32-bit multiplies on the half-rate IMAD path and the
// xors, for four numbers), the threshold compare, the select and the 1 / (1 - p) scale, charged
// to the FP32 pipe in its FLOP units (2 a lane-cycle) a score, forward and again in the backward
// (which regenerates the mask). Fitted on cuDNN's forward in GPT-2's calibration case
// (hf_train_h100.json.gz, b8 s512: 37.8 us with dropout against 15.8 us modeled without).
constexpr double kDropoutOpsPerScore = 75.0;

// One flash_fwd_kernel launch: B batches, H query heads over Hk KV heads, Sq queries against
// Sk keys of head dimension D.
struct FlashFwdProblem {
  std::int64_t B = 1, H = 1, Hk = 1, Sq = 1, Sk = 1, D = 64;
  bool causal = false;
  std::int64_t window = 0;  // causal sliding window (keys per query, itself included); 0: none
  bool masked = false;      // an additive mask tensor (SdpaShape::masked)
  bool dropout = false;     // dropout on the probabilities (SdpaShape::dropout)
  hw::DType dtype = hw::DType::kBf16;
  std::string tag;                              // the op's tag
  std::string q = "q", k = "k", v = "v", o = "o";  // tensor names under the tag
};
hw::Launch lower_flash_fwd(const FlashFwdProblem& p, const hw::HardwareSpec& hw,
                           const FlashTraits& t);

// cuDNN's fused SDPA kernels, which PyTorch 2.11 prefers on sm_90 (cudnn_attention.cpp).
// Whether cuDNN takes the op: PyTorch's check_prefer_cudnn_attention() (compute capability
// 9.0 or 10.0) and the head dimensions the measured kernels cover.
bool cudnn_sdpa_applies(const hw::HardwareSpec& hw, std::int64_t D);
std::vector<hw::Launch> lower_cudnn_sdpa(const FlashFwdProblem& p, const hw::HardwareSpec& hw);
// One query per sequence against a KV cache (GQA packed), split over the keys when the
// (batch, head) CTAs alone leave SMs idle, plus cuDNN's lean_reduction_kernel.
std::vector<hw::Launch> lower_cudnn_decode(std::int64_t B, std::int64_t Hq, std::int64_t Hkv,
                                           std::int64_t L, std::int64_t D, hw::DType dtype,
                                           const hw::HardwareSpec& hw, const std::string& tag);

}  // namespace gpusim::models
