// The kernels a PyTorch training step launches beyond the forward's: the loss (log_softmax and
// nll_loss over the vocabulary) and its backward, weight-gradient sums over rows, the
// embedding's backward, cuDNN's fused attention backward, and the optimizers' foreach
// (multi_tensor_apply) and fused kernels. Checked against validation/data/hf_train_h100.json.gz
// (PyTorch 2.11, cuDNN 9.19). One file a family: loss_kernels.cpp, column_sum.cpp,
// embedding_backward.cpp, cudnn_attention_backward.cpp, foreach_kernels.cpp,
// layer_norm_backward.cpp and dropout.cpp (GPT-2); and, for
// hand-written model code (cs336_basics, written from ATen's source and checked against
// validation/data/cs336_train_h100.json.gz), amax_backward.cpp and scatter_gather.cpp. Tensor uses
// come in already named (the caller owns the names).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"

namespace gpusim::models {

using hw::Launch;
using hw::TensorUse;

// x.sum(0) over `rows` rows of `cols` (a bias or norm weight gradient): ATen's reduce_kernel for
// a reduction over the outer dimension (setReduceConfig: 4 outputs per thread, the rows split
// over CTAs with a global accumulation when few outputs would leave the GPU idle), after the
// memset of its semaphores when the rows are split.
std::vector<Launch> lower_column_sum(std::int64_t rows, std::int64_t cols, hw::DType in, hw::DType out,
                                     const TensorUse& input, const TensorUse& output,
                                     const hw::HardwareSpec& hw);

// F.log_softmax over the last dimension of R x C (cunn_SoftMaxForward with the log epilogue)
// and its backward from the output and its gradient (cunn_SoftMaxBackward).
std::vector<Launch> lower_log_softmax(std::int64_t R, std::int64_t C, hw::DType dtype, const TensorUse& in,
                                      const TensorUse& out, const hw::HardwareSpec& hw);
std::vector<Launch> lower_log_softmax_backward(std::int64_t R, std::int64_t C, hw::DType dtype,
                                               const TensorUse& grad_out, const TensorUse& out,
                                               const TensorUse& grad_in, const hw::HardwareSpec& hw);

// torch.softmax's backward over the last dimension (_softmax_backward_data: the same kernels as
// log_softmax's with softmax's epilogue, gI = out * (gO - sum(gO * out))).
std::vector<Launch> lower_softmax_backward(std::int64_t R, std::int64_t C, hw::DType dtype,
                                           const TensorUse& grad_out, const TensorUse& out,
                                           const TensorUse& grad_in, const hw::HardwareSpec& hw);

// nll_loss with mean reduction over R rows of log-probabilities (one CTA), and its backward: the
// scatter of -1/R into an already zeroed R x C gradient (the zero fill is the caller's).
Launch lower_nll_loss_forward(std::int64_t R, std::int64_t C, const TensorUse& logp, const TensorUse& target,
                              const TensorUse& loss, const hw::HardwareSpec& hw);
Launch lower_nll_loss_backward(std::int64_t R, std::int64_t C, const TensorUse& target, const TensorUse& grad_in,
                               const hw::HardwareSpec& hw);

// embedding_dense_backward of `T` indices into a V x d table: the kernels ATen launches (the
// zeroed gradient table, the index sort and the per-feature accumulation kernels).
std::vector<Launch> lower_embedding_backward(std::int64_t T, std::int64_t V, std::int64_t d, hw::DType dtype,
                                             const TensorUse& ids, const TensorUse& grad_out,
                                             const TensorUse& grad_table, const hw::HardwareSpec& hw);

// The backward of F.scaled_dot_product_attention as cuDNN runs it on sm_90 (causal; `dropout`: the
// mask regenerated from the Philox state in the fused kernel):
// a memset, dot(dO, O) per row, the fused flash backward (dQ accumulated in fp32), dQ's
// conversion to 16 bits and, with grouped-query attention (Hq > Hkv), the reductions of dK and dV
// over each group's heads. Shapes as the forward's: B sequences of S tokens, head dim D. `masked`:
// the mask is a tensor (not causal skipping): every tile pair runs and applies its mask tile.
std::vector<Launch> lower_sdpa_backward(std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t S,
                                        std::int64_t D, bool causal, hw::DType dtype, const TensorUse& q,
                                        const TensorUse& k, const TensorUse& v, const TensorUse& o,
                                        const TensorUse& grad_o, const TensorUse& grad_q, const TensorUse& grad_k,
                                        const TensorUse& grad_v, const hw::HardwareSpec& hw,
                                        bool dropout = false, bool masked = false);

// One torch._foreach_* op over tensor lists as multi_tensor_apply launches it: chunks of 65536
// elements, at most 320 CTAs (chunks) and depth-dependent tensor counts per launch ({110, 64,
// 48, 36, 30} for 1 to 5 lists), 512 threads. `lists[l][t]` is tensor t of list l (every list
// has one entry per tensor, `elems[t]` elements each, in `dtype`); the first `written` lists
// are written (in place, or an output list placed first). `functor` names the op in the kernel
// name ("BinaryOpScalarFunctor<c10::BFloat16, 1, 1, 1>", ...); `flops_per_elem` its FP32 work.
std::vector<Launch> lower_multi_tensor_apply(const std::vector<std::int64_t>& elems, hw::DType dtype,
                                             const std::vector<std::vector<TensorUse>>& lists, int written,
                                             std::string_view functor, double flops_per_elem,
                                             const hw::HardwareSpec& hw);

// torch.amax's backward over the last dimension of rows x cols (models/amax_backward.cpp):
// (grad / count) * (result == input), the count of each row's maxima summed in int64; `input`
// and `result` are what autograd saved, `grad_rows` the rows' gradient, `grad_in` the output.
std::vector<Launch> lower_amax_backward(std::int64_t rows, std::int64_t cols, hw::DType dtype, const TensorUse& input,
                                        const TensorUse& result, const TensorUse& grad_rows,
                                        const TensorUse& grad_in, const hw::HardwareSpec& hw);

// torch.gather / scatter_add / scatter of `n` elements along the last dimension, one index per
// row (_scatter_gather_elementwise_kernel, 1024 elements a CTA): `index` and `src` read, `out`
// written (models/scatter_gather.cpp). kScatter assigns (topk's backward).
enum class ScatterGather { kGather, kScatterAdd, kScatter };
Launch lower_scatter_gather(ScatterGather op, std::int64_t n, hw::DType dtype, const TensorUse& index,
                            const TensorUse& src, const TensorUse& out, const hw::HardwareSpec& hw);

// The backward of advanced indexing `table[ids]` (`T` indices into a V x d table):
// index_put_(accumulate=True) into a zeroed gradient table, as ATen's index_put_with_sort_kernel
// runs it (the zero fill, the linearized indices, cub's radix sort of them with their positions,
// indexing_backward_kernel) (models/scatter_gather.cpp).
std::vector<Launch> lower_index_put_accumulate(std::int64_t T, std::int64_t V, std::int64_t d, hw::DType dtype,
                                               const TensorUse& ids, const TensorUse& grad_out,
                                               const TensorUse& grad_table, const hw::HardwareSpec& hw);

// GELU's backward with the tanh approximation over `n` elements (GeluBackwardCUDAKernelImpl:
// Gemma's GeGLU), dY and the saved input read, dX written (models/gelu_backward.cpp).
std::vector<Launch> lower_gelu_tanh_backward(std::int64_t n, hw::DType dtype, bool strided, const TensorUse& dy,
                                             const TensorUse& x, const TensorUse& dx, const hw::HardwareSpec& hw);

// torch._grouped_mm's weight gradient for y[rows of e] = x[rows of e] @ W[e]^T, W[e] being M x N:
// dW[e] = dY[rows of e]^T @ x[rows of e], one ragged-K grouped GEMM (the prepare kernel and the
// persistent CUTLASS kernel, chosen as GroupMM.cu does) (models/grouped_gemm_backward.cpp). The
// input's gradient is a plain lower_grouped_gemm (models/families.h) with N and K swapped.
std::vector<Launch> lower_grouped_gemm_weight_grad(const std::vector<std::int64_t>& rows_per_expert, std::int64_t M,
                                                   std::int64_t N, hw::DType dtype, const TensorUse& dy,
                                                   const TensorUse& x, const TensorUse& dw,
                                                   const hw::HardwareSpec& hw);

// torch._fused_adamw_: one multi_tensor_apply kernel family reading params, grads and both
// moments and writing params and moments, per launch of the same chunking (4 lists).
std::vector<Launch> lower_fused_adamw(const std::vector<std::int64_t>& elems, hw::DType param_dtype,
                                      hw::DType state_dtype, const std::vector<std::vector<TensorUse>>& lists,
                                      const hw::HardwareSpec& hw);

// LayerNorm's backward over R rows of C (models/layer_norm_backward.cpp): the input's gradient
// (layer_norm_grad_input_kernel_vectorized, a CTA a row) from dY, X, gamma and the saved
// statistics, then gamma's and beta's (GammaBetaBackwardCUDAKernelTemplate, a CTA per 32 columns).
std::vector<Launch> lower_layer_norm_backward(std::int64_t R, std::int64_t C, hw::DType dtype, const TensorUse& x,
                                              const TensorUse& weight, const TensorUse& grad_y,
                                              const TensorUse& grad_x, const TensorUse& grad_weight,
                                              const TensorUse& grad_bias, const hw::HardwareSpec& hw);

// nn.Dropout in training mode over n elements (models/dropout.cpp): fused_dropout_kernel_vec
// writes the output and a bool mask; the backward is EwFunc::kMaskedScale. cuDNN attention with
// dropout unpacks the Philox seed and offset first (lower_philox_unpack, one thread).
Launch lower_dropout(std::int64_t n, hw::DType dtype, const TensorUse& in, const TensorUse& out,
                     const TensorUse& mask, const hw::HardwareSpec& hw);
Launch lower_philox_unpack(const TensorUse& seeds, const hw::HardwareSpec& hw);

}  // namespace gpusim::models
