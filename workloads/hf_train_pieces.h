// Pieces of the hf-eager training step shared by its files (workloads/hf_train_lowering.cpp, the
// step and the llama-style layers' backward; workloads/hf_train_gpt2.cpp, GPT-2's backward;
// workloads/hf_train_phi3.cpp, Phi-3's fused projections; workloads/hf_train_gemma.cpp, Gemma 3's
// norms, GeGLU and local layers; workloads/hf_train_moe.cpp, the MoE block's backward).
// Internal to workloads/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "workloads/hf_eager_pieces.h"
#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {

// The parameters' gradients (.grad) by parameter tensor name. With gradient accumulation, a
// micro-batch after the first adds its gradient into .grad (AccumulateGrad's in-place add).
struct Grads {
  StepEmitter* e = nullptr;
  bool accumulate = false;
  std::map<std::string, hw::TensorUse> of;
  void add(const hw::TensorUse& param, const hw::TensorUse& grad);
  // A parameter's .grad (a state tensor for one the step gave no gradient).
  hw::TensorUse of_param(const hw::TensorUse& param) const;
};

// A parameter in model.parameters() order, with its element count.
struct TrainParam {
  hw::TensorUse weight;
  std::int64_t elems;
};

// C[M, N] = A[M, K] @ B[K, N] as autograd's mm (cuBLAS, the layouts' transposes aside).
hw::TensorUse mm(StepEmitter& e, const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
                 const hw::TensorUse& a, const hw::TensorUse& b);

// The two GEMMs of y[M, N] = x[M, K] @ W[N, K]^T's backward: the weight's gradient first
// (dY^T @ X), then the input's (dY @ W), as autograd's mm backward orders them (autocast's casts
// included). Returns {dW, dX}.
std::pair<hw::TensorUse, hw::TensorUse> gemm_backward(StepEmitter& e, const std::string& label, std::int64_t M,
                                                      std::int64_t N, std::int64_t K, const hw::TensorUse& dy,
                                                      const hw::TensorUse& x, const hw::TensorUse& w);

// The backward of y[T, N] = x[T, K] @ W (+ bias) over the step's tokens, W as F.linear's [N, K]
// or Conv1D's [K, N]: gemm_backward, the weight's gradient into `g`, then the bias's (a column
// sum of dY; cast to fp32 under autocast). Returns dX.
hw::TensorUse linear_backward(StepEmitter& e, const std::string& label, std::int64_t N, std::int64_t K,
                              const hw::TensorUse& dy, const hw::TensorUse& x, const hw::TensorUse& w,
                              const hw::TensorUse* bias, Grads& g);

// RMSNorm's backward as the model's class computes it: LlamaRMSNorm's (weight * x.to(bf16)), or
// Gemma's (x * (1 + weight.float()), cast last: hf_train_gemma.cpp) when the model offsets its
// norm weights. `strided_grad`: dY arrives in another layout than the norm's input (Gemma's q
// norm: the gradient of a transposed view; Qwen3's q/k norms under SDPA's math backend: a dense
// [B, H, S, D] gradient), so the products with it take the strided kernel (LlamaRMSNorm's: and
// the final sum of the two layouts).
hw::TensorUse rms_norm_backward(StepEmitter& e, const std::string& label, const RmsNormTape& t,
                                const hw::TensorUse& dy, Grads& g, bool strided_grad = false);

// Gemma3RMSNorm's backward (hf_train_gemma.cpp); rms_norm_backward's for a model with
// norm_weight_offset.
hw::TensorUse gemma_rms_norm_backward(StepEmitter& e, const std::string& label, const RmsNormTape& t,
                                      const hw::TensorUse& dy, Grads& g, bool strided_grad);

// The fp32 chain shared by both norms from d(normed) (fp32) back to the input: x * rsqrt(mean(x^2)
// + eps)'s backward (the rstd product, the row sums, rsqrt's, mean's and pow's backward) and the
// cast to the input's type `a`. `strided_grad`: Gemma's (the rstd and pow products strided);
// `transposed_grad`: d(normed) is dense in another dimension order than the input (the rstd
// product keeps it, so it and the final sum of the two layouts are strided).
hw::TensorUse rms_norm_chain_backward(StepEmitter& e, const std::string& label, const RmsNormTape& t,
                                      const hw::TensorUse& dxn, hw::DType a, bool strided_grad,
                                      bool transposed_grad = false);

// apply_rotary_pos_emb's backward for `heads` heads over `dims` rotated dimensions of each
// (0: the whole head): grad * sin through rotate_half, accumulated with grad * cos. `a` is the
// rotated input's type; `dense_grad`: sdpa's gradient for it is contiguous.
hw::TensorUse rope_backward(StepEmitter& e, const std::string& label, const hw::TensorUse& dy, std::int64_t heads,
                            const hw::TensorUse& cos, const hw::TensorUse& sin, hw::DType a, bool dense_grad,
                            std::int64_t dims = 0);

// cuDNN's attention backward for layer tape `t` (its q, k and v as sdpa read them) from the
// gradient of sdpa's output `dout`; under autocast, the backward of the operands' casts too.
// Returns {dQ, dK, dV} in the rotated q's, k's and the values' types.
struct QkvGrads {
  hw::TensorUse dq, dk, dv;
};
QkvGrads sdpa_backward(StepEmitter& e, const std::string& label, const LayerTape& t, const hw::TensorUse& dout);

// The backward of SDPA's math backend (hf_sdpa_math.cpp) from the gradient of its transposed-back
// output `dout`: {dQ, dK, dV} of the rotated q's and the keys' and values' KV-head shapes, dQ
// dense in [B, H, S, D].
QkvGrads sdpa_math_backward(StepEmitter& e, const std::string& label, const SdpaMathTape& t,
                            const hw::TensorUse& dout);

// One decoder layer's backward for the families with their own files; `dx` is the residual
// stream's gradient (updated). Phi-3 (Phi3DecoderLayer: fused qkv_proj and gate_up_proj):
void phi3_layer_backward(StepEmitter& e, int i, const LayerTape& t, const hw::TensorUse& cos,
                         const hw::TensorUse& sin, hw::TensorUse& dx, Grads& g);
// Gemma 3 (Gemma3DecoderLayer: sandwich norms, q/k norms, GeGLU; local layers rotate with their
// own table):
void gemma_layer_backward(StepEmitter& e, int i, const LayerTape& t, const ForwardTape& tape, hw::TensorUse& dx,
                          Grads& g);

// GPT-2 (workloads/hf_train_gpt2.cpp): the backward from the final LayerNorm's output gradient
// `dh` through every GPT2Block (recomputed first under checkpointing), the embedding dropout and
// the position embedding; returns the gradient of the token embeddings' output.
hw::TensorUse gpt2_backward(StepEmitter& e, ForwardTape& tape, const hw::TensorUse& dh, Grads& g);

// GPT-2's parameters in model.parameters() order (wte, wpe, per block ln_1, c_attn, c_proj,
// ln_2, c_fc, mlp.c_proj, each weight then bias, then ln_f).
std::vector<TrainParam> gpt2_parameters(StepEmitter& e, const ForwardTape& tape);

// Data parallelism (data_parallel > 1): the "gradient_sync" phase, DDP's bucketed all-reduce of
// every parameter's gradient beside the backward (StepEmitter::ddp_all_reduce); nothing otherwise.
void gradient_sync(StepEmitter& e, const std::vector<TrainParam>& params, const Grads& g);

// optimizer.step() over `params` (model.parameters() order) and their gradients: foreach AdamW,
// fused AdamW or foreach SGD (hf_train_lowering.cpp); shared by the fused lowering's step.
void train_optimizer_step(StepEmitter& e, const std::vector<TrainParam>& params, const Grads& g, Optimizer opt);

// SwiGLU's MLP backward from its output's gradient `dy` (its input `h`, what the forward kept in
// `t`; the weights' gradients into `g`): returns the input's gradient.
struct SwigluTape {
  hw::TensorUse gate, gate_act, up, prod, wg, wu, wd;
};
hw::TensorUse swiglu_mlp_backward(StepEmitter& e, const std::string& label, std::int64_t F, const hw::TensorUse& dy,
                                  const hw::TensorUse& h, const SwigluTape& t, Grads& g);

// Multi-head latent attention's backward (workloads/hf_train_mla.cpp) from o_proj's output
// gradient `dy`: returns the gradient of the attention's input.
hw::TensorUse mla_backward(StepEmitter& e, const std::string& label, const MlaTape& t, const hw::TensorUse& dy,
                           Grads& g);

// The backward of a MoE block (workloads/hf_train_moe.cpp) from its output's gradient `dy`:
// returns the gradient of its input.
hw::TensorUse moe_backward(StepEmitter& e, const std::string& label, const MoeTape& t, const hw::TensorUse& dy,
                           Grads& g);

}  // namespace gpusim::workloads::detail
