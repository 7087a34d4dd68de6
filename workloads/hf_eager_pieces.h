// Pieces of the hf-eager lowering shared by its files (workloads/hf_eager_lowering.cpp, the
// llama-style families; workloads/hf_eager_mla.cpp, DeepSeek's multi-head latent attention;
// workloads/hf_sdpa_math.cpp, SDPA's math backend).
// Internal to workloads/.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "workloads/step_emitter.h"

namespace gpusim::workloads::detail {

// What a training step's backward reads of an RMSNorm's forward (autograd's saved tensors).
struct RmsNormTape {
  TensorUse in, in_fp32, rstd, normed, weight;  // normed: the fp32 product cast back (LlamaRMSNorm)
  std::int64_t rows = 0, width = 0;             // or the fp32 product itself (Gemma's)
  TensorUse scale;                              // Gemma's 1 + weight.float() (fp32)
};

// The head dimensions RoPE rotates (partial_rotary_factor), even.
std::int64_t rotary_dim(const ModelConfig& m);

// RMSNorm over `rows` rows of `width` as the model's class computes it (LlamaRMSNorm, or Gemma's
// 1 + weight); a strided input (a split view) is read by the legacy copy kernel. `tape`, when
// given, gets the tensors its backward reads.
TensorUse rms_norm_rows(StepEmitter& e, const std::string& label, const TensorUse& x, std::int64_t rows,
                        std::int64_t width, bool strided_input, RmsNormTape* tape = nullptr);

// What a training step's backward reads of a MoE block's forward (transformers 5's grouped_mm
// experts path; its backward is workloads/hf_train_moe.cpp).
struct MoeTape {
  TensorUse h;                            // the block's (normed) input
  TensorUse w_router, w_gate_up, w_down;  // the router's weight and the stacked expert weights
  TensorUse probs, top, sum;              // softmax's fp32 output, the top-k values, their sum
  TensorUse ids, order;                   // the sorted pairs' ids, the inverse permutation
  TensorUse wg;                           // the gathered routing weights the experts scale by
  TensorUse xm, upm, act, gated, dm;      // the grouped GEMMs' inputs, SwiGLU's operands, the masked output
  std::vector<std::int64_t> rows;         // rows (token-expert pairs) per expert
  bool weights_cast = false;              // MoeConfig::weights_in_dtype
  // DeepSeek's router (MoeConfig::router_fp32): F.linear of the input and weight cast to fp32.
  TensorUse h_fp32, w_router_fp32;
  // Shared experts (DeepSeek): a dense SwiGLU MLP over the block's input.
  TensorUse sh_gate, sh_act, sh_up, sh_prod, sh_wg, sh_wu, sh_wd;
};

// What a training step's backward reads of DeepseekV2Attention's forward (workloads/hf_eager_mla.cpp;
// its backward is workloads/hf_train_mla.cpp).
struct MlaTape {
  TensorUse h;                       // the attention's normed input
  TensorUse wq, wkva, wkvb, wo;      // q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj
  TensorUse q, ckv, latent, kv;      // their outputs (latent: kv_a_layernorm's)
  TensorUse query, key, attn, out;   // sdpa's q and k, its output, o_proj's input
  TensorUse cis;                     // the complex rotary table
  RmsNormTape kv_norm;
};

// What a training step's backward reads of a GPT2Block beyond LayerTape's common fields: the
// Conv1D weights, gelu_new's saved intermediates and the dropout masks (GPT-2 trains with
// dropout: embd_pdrop, attn_pdrop and resid_pdrop, 0.1 by default).
struct Gpt2LayerTape {
  TensorUse w_attn, w_fc, w_mlp_proj;           // c_attn, mlp.c_fc, mlp.c_proj (attn.c_proj is wo)
  TensorUse fc, gelu_half, gelu_tanh, gelu_one, gelu_out;  // c_fc's output and gelu_new's pieces
  TensorUse attn_drop_mask, mlp_drop_mask;      // resid_dropout's after each c_proj
  bool cached = false;                          // k and v went through the cache's cat (use_cache)
};

// What the backward of SDPA's math backend reads (workloads/hf_sdpa_math.cpp): the scaled q made
// dense, the scaled and expanded keys, the expanded values, the probabilities.
struct SdpaMathTape {
  bool used = false;
  TensorUse q, k, v, probs;
};

// Whether attention runs on SDPA's math backend: an fp32 training step (sdpa in fp32 with
// grouped-query heads has no fused kernel; prefill and decode still charge written-out attention).
bool uses_sdpa_math(const StepEmitter& e);

// F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True) on PyTorch's math
// backend for the step's tokens (hf_sdpa_math.cpp); `tape`, when given, gets what its backward
// reads. Returns the output transposed back to [B, S, H, D] (transformers' .contiguous()).
TensorUse sdpa_math(StepEmitter& e, const std::string& label, const TensorUse& q, const TensorUse& k,
                    const TensorUse& v, SdpaMathTape* tape);

// What a training step's backward reads of one decoder layer's forward (llama-style layers,
// Phi-3's fused projections, Gemma 3's sandwich norms; GPT-2's LayerNorms fill `in`, `weight`
// (weight and bias, 2 x width), rows and width of the RmsNormTapes, its other tensors `gpt2`).
struct LayerTape {
  TensorUse x_in, x_mid;                     // the residual stream before attention, before the MLP
  RmsNormTape input_norm, post_norm, q_norm, k_norm;  // q_norm / k_norm: Qwen3's and Gemma's
  RmsNormTape attn_out_norm, mlp_out_norm;   // Gemma: post_attention_ and post_feedforward_layernorm
  bool local = false;                        // Gemma: a sliding-window layer (the local rotary table)
  TensorUse qkv, wqkv, gate_up, wgu;         // Phi-3: the fused projections' outputs and weights
  TensorUse h, q, k, v, q_rot, k_rot, attn, attn_out;  // h: the attention's normed input
  TensorUse q_sdpa, k_sdpa, v_sdpa;          // under autocast: sdpa's operands after its casts
  SdpaMathTape math;                         // fp32: what SDPA's math backend saved
  TensorUse wq, wk, wv, wo;
  TensorUse h2, gate, gate_act, up, prod;    // the MLP's normed input and SwiGLU's intermediates
  TensorUse wg, wu, wd;
  Gpt2LayerTape gpt2;
  bool sparse = false;  // a MoE layer: `moe` instead of the MLP's tensors
  MoeTape moe;
  MlaTape mla;          // multi-head latent attention (DeepSeek) instead of q, k, v
};

// What a training step's backward reads of the forward: every layer's tape, the rotary table,
// the final norm and the head. Filled by lower_hf_eager_forward when given. Under activation
// checkpointing the layers keep only their inputs (`layer_inputs`); the backward recomputes
// each layer's tape with lower_hf_eager_layer.
struct ForwardTape {
  std::vector<LayerTape> layers;
  std::vector<TensorUse> layer_inputs;
  TensorUse ids, embed_table, cos, sin;
  TensorUse positions, wpe, embed_drop_mask;  // GPT-2: position ids, the wpe table, drop's mask
  TensorUse cos_local, sin_local;  // Gemma 3's table for its sliding-window layers
  RmsNormTape final_norm;
  TensorUse hidden, head, logits;  // the final norm's output, the head's weight, the logits
};

// The hf-eager forward of one step; with a `tape`, as a training step runs it: no attention
// mask (none is passed), the head over every position, and the tape filled.
void lower_hf_eager_forward(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b, ForwardTape* tape);
// The same through a training step's emitter (which keeps what autocast cast for the backward).
void lower_hf_eager_forward(StepEmitter& e, ForwardTape* tape);

// Decoder layer `i`'s forward on the residual stream `x` (updated), as lower_hf_eager_forward
// lowers it in a training step (llama-style layers, full attention); fills `lt`.
void lower_hf_eager_layer(StepEmitter& e, int i, TensorUse& x, const ForwardTape& tape, LayerTape* lt);

// transformers' continuous batching, per step before the forward (ContinuousBatchingIOs
// .prepare_batch_tensors, launched eagerly by the host): the attention mask reset to -inf over
// the batch's queries and keys, then each sequence's causal block written into it (full, triu,
// copy into the mask's slice).
void paged_batch_prep(StepEmitter& e);
// paged|sdpa's attention of one layer over the packed batch (integrations/sdpa_paged.py):
// PagedAttentionCache.update writes the new K and V rows into the cache (index_copy_) and
// gathers every scheduled sequence's keys (index_select), repeat_kv expands them to every query
// head (a copy each), and cuDNN's masked SDPA runs the queries against all of them (the mask is
// block-diagonal, so no tile is skipped); the output is transposed back (a copy).
TensorUse paged_sdpa(StepEmitter& e, const std::string& label, const TensorUse& q, const TensorUse& k,
                     const TensorUse& v);

// DeepseekV2RotaryEmbedding: the complex table freqs_cis (first; second unused).
std::pair<TensorUse, TensorUse> mla_rotary_table(StepEmitter& e);

// DeepseekV2Attention (transformers 5.x): q (direct or through the q LoRA), the compressed
// latent and its norm, complex RoPE, the latent cache, keys and values expanded from the whole
// latent cache each step, sdpa and o_proj. Returns o_proj's output.
TensorUse mla_attention(StepEmitter& e, const std::string& label, const TensorUse& h,
                        const std::pair<TensorUse, TensorUse>& rot, MlaTape* tape = nullptr);

}  // namespace gpusim::workloads::detail
