#!/usr/bin/env python3
"""hf_models.py: kernel-level ground truth for Hugging Face transformers models.

For each case (a model config, a phase, batch and lengths) this builds the model
from its config with random weights (AutoModelForCausalLM.from_config, bf16,
attn_implementation="sdpa", on the GPU; nothing is downloaded) and measures the
kernels one forward pass launches, as `generate` calls it:

  * prefill: forward(input_ids [B,S], attention_mask, position_ids,
    cache_position, past_key_values=DynamicCache(), use_cache=True,
    logits_to_keep=1);
  * decode: the same with one token per sequence against a DynamicCache
    holding seq_len tokens (the cache is cut back to seq_len, contiguous,
    after every repetition, outside the measured range);
  * generate: model.generate(max_new_tokens=output_len, greedy, no EOS), with
    model.forward wrapped in record_function("gpusim_forward") so that each
    kernel is attributed to a forward call (or to generate's own bookkeeping).

Method (as op_kernels.py): warm-up, then REPS profiled repetitions; before each
the L2 is flushed (256 MiB written inside record_function("gpusim_flush")); the
phase runs inside record_function("gpusim_op"); kernels are assigned to a
repetition by the correlation id of their launch (op_kernels.assign_gpu_events).
kernel_time_us = median over repetitions of the sum of kernel durations.
wall_us = median CUDA-event time of the phase in an unprofiled loop (eager
launches, host included). activation_peak_bytes = torch.cuda.max_memory_allocated
during the phase minus memory allocated before it (weights and, for decode, the
cache excluded).

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/hf_models.py --gpu h100 --out $OUT
  options: --only REGEX, --split calibration|holdout, --deadline-s N, --show-holdout,
           --set2 (the fresh held-out cases CASES2, written to hf_models2_<gpu>.json),
           --set3 (issue 13's families, CASES3, written to hf_models3[_<split>]_<gpu>.json),
           --set4 (their second round, CASES4, written to hf_models4[_<split>]_<gpu>.json),
           --set5 (issue 16's sixteenth round, CASES5, written to hf_models5[_<split>]_<gpu>.json),
           --set6 (issue 16's twenty-second round, CASES6, written to hf_models6[_<split>]_<gpu>.json),
           --set7 (the same round, after set 6's comparison, CASES7, hf_models7[_<split>]_<gpu>.json),
           --set8 (issue 16's twenty-fifth round: MoE cases with their routing recorded, CASES8,
                   hf_models8[_<split>]_<gpu>.json),
           --set9 (the same round: MoE prefills of one to three row tiles an expert, routing
                   recorded, CASES9, hf_models9[_<split>]_<gpu>.json),
           --set10 (the same round's end, for the next: MoE cases with routing recorded, CASES10,
                    hf_models10[_<split>]_<gpu>.json),
           --no-reference (no defaults/sources dump)
Writes $OUT/hf_models_<gpu>.json (rewritten after every case), $OUT/hf_configs/<case>.json
(the config.json of each case, as save_pretrained writes it), $OUT/hf_defaults.json
(each config class's defaults) and $OUT/sources/ (the modeling files, for reading).

MoE cases also record their routing (`routing`): per MoE layer, the tokens each expert received
in one run of the measured phase (a forward pre-hook on each layer's experts module reads the
top-k indices it dispatches; where the experts module takes none, the router's own output), so
that the simulation can be given the routing the benchmark's random weights produced. Set 8 and
later seed the weights (torch.manual_seed(MODEL_SEED) before from_config; set 9 MODEL_SEED + 1),
so a case's routing can be reproduced.

Split: `holdout` cases are for the final accuracy report only: the console hides
their results unless --show-holdout is given.
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_kernels import assign_gpu_events, _dims, _f, _ranges  # noqa: E402

WARMUP = 2
FLUSH_BYTES = 256 * 1024 * 1024

LLAMA3_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                 rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=8192,
                 tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001)
LLAMA3_70B_4L = dict(LLAMA3_8B, hidden_size=8192, intermediate_size=28672, num_hidden_layers=4,
                     num_attention_heads=64)
QWEN2_15B = dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                 num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                 rms_norm_eps=1e-6, rope_theta=1000000.0, max_position_embeddings=131072,
                 tie_word_embeddings=True, use_sliding_window=False, sliding_window=None)
QWEN2_05B = dict(QWEN2_15B, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                 num_attention_heads=14, num_key_value_heads=2)
GPT2_MEDIUM = dict(n_embd=1024, n_layer=24, n_head=16)
GPT2_LARGE = dict(n_embd=1280, n_layer=36, n_head=20)
MISTRAL_7B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                  num_attention_heads=32, num_key_value_heads=8, vocab_size=32768,
                  rms_norm_eps=1e-5, rope_theta=1000000.0, max_position_embeddings=32768,
                  sliding_window=None, tie_word_embeddings=False)
MIXTRAL_4L = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
                  num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
                  rms_norm_eps=1e-5, rope_theta=1000000.0, max_position_embeddings=32768,
                  num_local_experts=8, num_experts_per_tok=2, sliding_window=None)
MIXTRAL_SMALL = dict(MIXTRAL_4L, hidden_size=2048, intermediate_size=5632, num_hidden_layers=6,
                     num_attention_heads=16, num_key_value_heads=4)
DEEPSEEK_OCR = dict(hidden_size=1280, intermediate_size=6848, num_hidden_layers=12,
                    num_attention_heads=10, num_key_value_heads=10, vocab_size=129280,
                    moe_intermediate_size=896, n_routed_experts=64, n_shared_experts=2,
                    num_experts_per_tok=6, first_k_dense_replace=1, moe_layer_freq=1,
                    kv_lora_rank=None, q_lora_rank=None, qk_rope_head_dim=0, qk_nope_head_dim=0,
                    v_head_dim=0, use_mla=False, topk_method="greedy", n_group=1, topk_group=1,
                    max_position_embeddings=8192)


def case(cid, split, mtype, cfg, phase, batch, seq_len, output_len=None):
    return dict(id=cid, split=split, model_type=mtype, cfg=cfg, phase=phase, batch=batch,
                seq_len=seq_len, output_len=output_len)


CASES = [
    # calibration: kernel lists and timings may be looked at while building the lowering
    case("llama3-8b_decode_b1_l512", "calibration", "llama", LLAMA3_8B, "decode", 1, 512),
    case("llama3-8b_prefill_b1_s512", "calibration", "llama", LLAMA3_8B, "prefill", 1, 512),
    case("qwen2-1.5b_decode_b8_l1024", "calibration", "qwen2", QWEN2_15B, "decode", 8, 1024),
    case("gpt2-small_decode_b4_l256", "calibration", "gpt2", {}, "decode", 4, 256),
    case("gpt2-small_prefill_b2_s128", "calibration", "gpt2", {}, "prefill", 2, 128),
    case("mixtral-4l_decode_b1_l512", "calibration", "mixtral", MIXTRAL_4L, "decode", 1, 512),
    case("mixtral-4l_prefill_b1_s256", "calibration", "mixtral", MIXTRAL_4L, "prefill", 1, 256),
    case("deepseek-ocr_decode_b1_l1024", "calibration", "deepseek_v2", DEEPSEEK_OCR, "decode", 1, 1024),
    case("llama3-8b-4l_generate_b2_s128_o16", "calibration", "llama",
         dict(LLAMA3_8B, num_hidden_layers=4), "generate", 2, 128, 16),
    # holdout: for the final report only
    case("llama3-8b_decode_b16_l1024", "holdout", "llama", LLAMA3_8B, "decode", 16, 1024),
    case("llama3-8b_prefill_b1_s2048", "holdout", "llama", LLAMA3_8B, "prefill", 1, 2048),
    case("llama3-8b_decode_b4_l4096", "holdout", "llama", LLAMA3_8B, "decode", 4, 4096),
    case("llama3-8b_prefill_b4_s256", "holdout", "llama", LLAMA3_8B, "prefill", 4, 256),
    case("llama3-70b-4l_decode_b8_l1024", "holdout", "llama", LLAMA3_70B_4L, "decode", 8, 1024),
    case("qwen2-1.5b_prefill_b4_s512", "holdout", "qwen2", QWEN2_15B, "prefill", 4, 512),
    case("qwen2-1.5b_decode_b32_l512", "holdout", "qwen2", QWEN2_15B, "decode", 32, 512),
    case("qwen2-0.5b_decode_b1_l2048", "holdout", "qwen2", QWEN2_05B, "decode", 1, 2048),
    case("gpt2-medium_prefill_b8_s512", "holdout", "gpt2", GPT2_MEDIUM, "prefill", 8, 512),
    case("gpt2-large_decode_b16_l512", "holdout", "gpt2", GPT2_LARGE, "decode", 16, 512),
    case("mistral-7b_decode_b2_l2048", "holdout", "mistral", MISTRAL_7B, "decode", 2, 2048),
    case("mistral-7b_prefill_b1_s1024", "holdout", "mistral", MISTRAL_7B, "prefill", 1, 1024),
    case("mixtral-4l_decode_b16_l1024", "holdout", "mixtral", MIXTRAL_4L, "decode", 16, 1024),
    case("mixtral-4l_prefill_b2_s1024", "holdout", "mixtral", MIXTRAL_4L, "prefill", 2, 1024),
    case("mixtral-small_decode_b64_l256", "holdout", "mixtral", MIXTRAL_SMALL, "decode", 64, 256),
    case("deepseek-ocr_decode_b8_l512", "holdout", "deepseek_v2", DEEPSEEK_OCR, "decode", 8, 512),
    case("deepseek-ocr_prefill_b1_s1024", "holdout", "deepseek_v2", DEEPSEEK_OCR, "prefill", 1, 1024),
    case("qwen2-1.5b_generate_b4_s256_o32", "holdout", "qwen2", QWEN2_15B, "generate", 4, 256, 32),
]


# Set 2 (measured after gpusim's hf-eager lowering was final, for a clean evaluation): models and
# shapes that appear nowhere in CASES. All held out.
LLAMA32_1B = dict(LLAMA3_8B, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                  num_attention_heads=32, num_key_value_heads=8, head_dim=64, tie_word_embeddings=True)
LLAMA32_3B = dict(LLAMA3_8B, hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
                  num_attention_heads=24, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True)
QWEN2_7B = dict(QWEN2_15B, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                num_attention_heads=28, num_key_value_heads=4, vocab_size=152064,
                tie_word_embeddings=False)
GPT2_XL = dict(n_embd=1600, n_layer=48, n_head=25)

CASES2 = [
    case("llama3.2-1b_decode_b8_l2048", "holdout", "llama", LLAMA32_1B, "decode", 8, 2048),
    case("llama3.2-1b_prefill_b2_s1024", "holdout", "llama", LLAMA32_1B, "prefill", 2, 1024),
    case("llama3.2-3b_decode_b4_l1024", "holdout", "llama", LLAMA32_3B, "decode", 4, 1024),
    case("llama3.2-3b_prefill_b1_s4096", "holdout", "llama", LLAMA32_3B, "prefill", 1, 4096),
    case("qwen2-7b_decode_b2_l512", "holdout", "qwen2", QWEN2_7B, "decode", 2, 512),
    case("qwen2-7b_prefill_b1_s1024", "holdout", "qwen2", QWEN2_7B, "prefill", 1, 1024),
    case("gpt2-xl_decode_b8_l256", "holdout", "gpt2", GPT2_XL, "decode", 8, 256),
    case("gpt2-xl_prefill_b4_s256", "holdout", "gpt2", GPT2_XL, "prefill", 4, 256),
    case("mistral-7b_decode_b32_l512", "holdout", "mistral", MISTRAL_7B, "decode", 32, 512),
    case("llama3-8b_decode_b64_l256", "holdout", "llama", LLAMA3_8B, "decode", 64, 256),
    case("qwen2-1.5b_prefill_b1_s2048", "holdout", "qwen2", QWEN2_15B, "prefill", 1, 2048),
    case("mixtral-small_prefill_b4_s512", "holdout", "mixtral", MIXTRAL_SMALL, "prefill", 4, 512),
    case("mixtral-4l_decode_b4_l2048", "holdout", "mixtral", MIXTRAL_4L, "decode", 4, 2048),
    case("mixtral-small_decode_b2_l1024", "holdout", "mixtral", MIXTRAL_SMALL, "decode", 2, 1024),
    case("llama3.2-1b_generate_b8_s128_o16", "holdout", "llama", LLAMA32_1B, "generate", 8, 128, 16),
]


# Set 3 (issue 13): the families users try next, with a calibration split (looked at while building
# their lowerings) and a holdout split (first compared at the final evaluation). Shapes are the
# published models' (fewer layers where the whole model would be slow to build).
QWEN3_17B = dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, vocab_size=151936, rms_norm_eps=1e-6,
                 rope_theta=1000000.0, max_position_embeddings=40960, tie_word_embeddings=True,
                 use_sliding_window=False)
QWEN3_MOE_4L = dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=4, num_attention_heads=32,
                    num_key_value_heads=4, head_dim=128, vocab_size=151936, rms_norm_eps=1e-6,
                    rope_theta=1000000.0, max_position_embeddings=40960, tie_word_embeddings=False,
                    num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768, norm_topk_prob=True,
                    decoder_sparse_step=1, mlp_only_layers=[], use_sliding_window=False)
QWEN3_MOE_MIXED = dict(QWEN3_MOE_4L, num_hidden_layers=6, num_experts=32, num_experts_per_tok=4,
                       decoder_sparse_step=2, mlp_only_layers=[0], norm_topk_prob=False)
GEMMA2_2B = dict(hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
                 num_key_value_heads=4, head_dim=256, vocab_size=256000, rms_norm_eps=1e-6,
                 rope_theta=10000.0, max_position_embeddings=8192, sliding_window=4096,
                 query_pre_attn_scalar=256, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                 hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)
GEMMA3_1B = dict(hidden_size=1152, intermediate_size=6912, num_hidden_layers=26, num_attention_heads=4,
                 num_key_value_heads=1, head_dim=256, vocab_size=262144, rms_norm_eps=1e-6,
                 rope_theta=1000000.0, rope_local_base_freq=10000.0, max_position_embeddings=32768,
                 sliding_window=512, sliding_window_pattern=6, query_pre_attn_scalar=256,
                 hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)
PHI3_MINI = dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=32, num_attention_heads=32,
                 num_key_value_heads=32, vocab_size=32064, rms_norm_eps=1e-5, rope_theta=10000.0,
                 max_position_embeddings=4096, original_max_position_embeddings=4096, sliding_window=2047,
                 tie_word_embeddings=False, pad_token_id=32000, bos_token_id=1, eos_token_id=32000)
PHI4_MINI = dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=32, num_attention_heads=24,
                 num_key_value_heads=8, vocab_size=200064, rms_norm_eps=1e-5, rope_theta=10000.0,
                 partial_rotary_factor=0.75, max_position_embeddings=131072,
                 original_max_position_embeddings=4096, sliding_window=262144, tie_word_embeddings=True,
                 pad_token_id=199999, bos_token_id=199999, eos_token_id=199999,
                 rope_scaling={"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [1.2] * 48})
DEEPSEEK_V2_LITE_4L = dict(hidden_size=2048, intermediate_size=10944, num_hidden_layers=4,
                           num_attention_heads=16, num_key_value_heads=16, vocab_size=102400,
                           q_lora_rank=None, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
                           v_head_dim=128, moe_intermediate_size=1408, n_routed_experts=64,
                           n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1,
                           moe_layer_freq=1, topk_method="greedy", n_group=1, topk_group=1,
                           norm_topk_prob=False, routed_scaling_factor=1.0, rms_norm_eps=1e-6,
                           rope_theta=10000.0, max_position_embeddings=163840, tie_word_embeddings=False)
DEEPSEEK_V3_4L = dict(hidden_size=7168, intermediate_size=18432, num_hidden_layers=4, num_attention_heads=128,
                      num_key_value_heads=128, vocab_size=129280, q_lora_rank=1536, kv_lora_rank=512,
                      qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, moe_intermediate_size=2048,
                      n_routed_experts=256, n_shared_experts=1, num_experts_per_tok=8,
                      first_k_dense_replace=3, n_group=8, topk_group=4, norm_topk_prob=True,
                      routed_scaling_factor=2.5, rms_norm_eps=1e-6, rope_theta=10000.0,
                      max_position_embeddings=163840, tie_word_embeddings=False)
MOONLIGHT_4L = dict(hidden_size=2048, intermediate_size=11264, num_hidden_layers=4, num_attention_heads=16,
                    num_key_value_heads=16, vocab_size=163840, q_lora_rank=None, kv_lora_rank=512,
                    qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, moe_intermediate_size=1408,
                    n_routed_experts=64, n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1,
                    n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.446,
                    rms_norm_eps=1e-5, rope_theta=50000.0, max_position_embeddings=8192,
                    tie_word_embeddings=False)
MISTRAL_7B_SW = dict(MISTRAL_7B, sliding_window=1024)

CASES3 = [
    case("qwen3-1.7b_decode_b4_l1024", "calibration", "qwen3", QWEN3_17B, "decode", 4, 1024),
    case("qwen3-1.7b_prefill_b1_s1024", "calibration", "qwen3", QWEN3_17B, "prefill", 1, 1024),
    case("qwen3-moe-4l_decode_b4_l1024", "calibration", "qwen3_moe", QWEN3_MOE_4L, "decode", 4, 1024),
    case("qwen3-moe-4l_prefill_b1_s512", "calibration", "qwen3_moe", QWEN3_MOE_4L, "prefill", 1, 512),
    case("qwen3-moe-mixed_decode_b4_l512", "calibration", "qwen3_moe", QWEN3_MOE_MIXED, "decode", 4, 512),
    case("gemma2-2b_decode_b4_l1024", "calibration", "gemma2", GEMMA2_2B, "decode", 4, 1024),
    case("gemma2-2b_prefill_b1_s1024", "calibration", "gemma2", GEMMA2_2B, "prefill", 1, 1024),
    case("gemma3-1b_decode_b4_l1024", "calibration", "gemma3_text", GEMMA3_1B, "decode", 4, 1024),
    case("gemma3-1b_prefill_b1_s1024", "calibration", "gemma3_text", GEMMA3_1B, "prefill", 1, 1024),
    case("phi3-mini_decode_b4_l1024", "calibration", "phi3", PHI3_MINI, "decode", 4, 1024),
    case("phi3-mini_prefill_b1_s1024", "calibration", "phi3", PHI3_MINI, "prefill", 1, 1024),
    case("phi4-mini_decode_b4_l1024", "calibration", "phi3", PHI4_MINI, "decode", 4, 1024),
    case("deepseek-v2-lite-4l_decode_b4_l1024", "calibration", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 4, 1024),
    case("deepseek-v2-lite-4l_prefill_b1_s512", "calibration", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 1, 512),
    case("deepseek-v3-4l_decode_b1_l1024", "calibration", "deepseek_v3", DEEPSEEK_V3_4L, "decode", 1, 1024),
    case("moonlight-4l_prefill_b1_s1024", "calibration", "deepseek_v3", MOONLIGHT_4L, "prefill", 1, 1024),
    case("mistral-7b-sw_decode_b4_l2048", "calibration", "mistral", MISTRAL_7B_SW, "decode", 4, 2048),
    case("mistral-7b-sw_prefill_b1_s2048", "calibration", "mistral", MISTRAL_7B_SW, "prefill", 1, 2048),
    # holdout: for the final report only
    case("qwen3-1.7b_decode_b16_l2048", "holdout", "qwen3", QWEN3_17B, "decode", 16, 2048),
    case("qwen3-1.7b_prefill_b2_s2048", "holdout", "qwen3", QWEN3_17B, "prefill", 2, 2048),
    case("qwen3-moe-4l_decode_b32_l512", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 32, 512),
    case("qwen3-moe-4l_prefill_b2_s1024", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 2, 1024),
    case("qwen3-moe-mixed_prefill_b1_s1024", "holdout", "qwen3_moe", QWEN3_MOE_MIXED, "prefill", 1, 1024),
    case("gemma2-2b_decode_b1_l8192", "holdout", "gemma2", GEMMA2_2B, "decode", 1, 8192),
    case("gemma2-2b_prefill_b2_s2048", "holdout", "gemma2", GEMMA2_2B, "prefill", 2, 2048),
    case("gemma3-1b_decode_b16_l2048", "holdout", "gemma3_text", GEMMA3_1B, "decode", 16, 2048),
    case("gemma3-1b_prefill_b2_s2048", "holdout", "gemma3_text", GEMMA3_1B, "prefill", 2, 2048),
    case("phi3-mini_decode_b8_l3000", "holdout", "phi3", PHI3_MINI, "decode", 8, 3000),
    case("phi3-mini_prefill_b1_s3000", "holdout", "phi3", PHI3_MINI, "prefill", 1, 3000),
    case("phi4-mini_prefill_b2_s1024", "holdout", "phi3", PHI4_MINI, "prefill", 2, 1024),
    case("deepseek-v2-lite-4l_decode_b16_l2048", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 16, 2048),
    case("deepseek-v2-lite-4l_prefill_b2_s1024", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 2, 1024),
    case("deepseek-v3-4l_decode_b8_l512", "holdout", "deepseek_v3", DEEPSEEK_V3_4L, "decode", 8, 512),
    case("moonlight-4l_decode_b4_l2048", "holdout", "deepseek_v3", MOONLIGHT_4L, "decode", 4, 2048),
    case("mistral-7b-sw_decode_b2_l4096", "holdout", "mistral", MISTRAL_7B_SW, "decode", 2, 4096),
    case("mistral-7b-sw_prefill_b1_s3072", "holdout", "mistral", MISTRAL_7B_SW, "prefill", 1, 3072),
]


# Set 4 (issue 13, second round): fresh shapes and sizes of the same families, measured before the
# round-two changes were made and compared only once they were final. The calibration cases may be
# looked at; the holdout cases are the final held-out evaluation.
QWEN3_4B_8L = dict(QWEN3_17B, hidden_size=2560, intermediate_size=9728, num_hidden_layers=8,
                   num_attention_heads=32, num_key_value_heads=8)
GEMMA2_9B_4L = dict(GEMMA2_2B, hidden_size=3584, intermediate_size=14336, num_hidden_layers=4,
                    num_attention_heads=16, num_key_value_heads=8, sliding_window=4096)
GEMMA3_4B_6L = dict(GEMMA3_1B, hidden_size=2560, intermediate_size=10240, num_hidden_layers=6,
                    num_attention_heads=8, num_key_value_heads=4, sliding_window=1024)
PHI3_MEDIUM_4L = dict(PHI3_MINI, hidden_size=5120, intermediate_size=17920, num_hidden_layers=4,
                      num_attention_heads=40, num_key_value_heads=10, max_position_embeddings=4096)

CASES4 = [
    case("phi3-mini_decode_b2_l2048", "calibration", "phi3", PHI3_MINI, "decode", 2, 2048),
    case("phi3-mini_prefill_b2_s512", "calibration", "phi3", PHI3_MINI, "prefill", 2, 512),
    case("gemma2-2b_decode_b1_l2048", "calibration", "gemma2", GEMMA2_2B, "decode", 1, 2048),
    case("gemma3-1b_prefill_b1_s2048", "calibration", "gemma3_text", GEMMA3_1B, "prefill", 1, 2048),
    # holdout: for the final report only
    case("qwen3-4b-8l_decode_b8_l1024", "holdout", "qwen3", QWEN3_4B_8L, "decode", 8, 1024),
    case("qwen3-1.7b_prefill_b1_s4096", "holdout", "qwen3", QWEN3_17B, "prefill", 1, 4096),
    case("qwen3-moe-4l_decode_b1_l2048", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 1, 2048),
    case("qwen3-moe-4l_prefill_b4_s512", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 4, 512),
    case("gemma2-9b-4l_decode_b4_l2048", "holdout", "gemma2", GEMMA2_9B_4L, "decode", 4, 2048),
    case("gemma2-2b_prefill_b1_s3072", "holdout", "gemma2", GEMMA2_2B, "prefill", 1, 3072),
    case("gemma3-4b-6l_decode_b8_l2048", "holdout", "gemma3_text", GEMMA3_4B_6L, "decode", 8, 2048),
    case("gemma3-1b_prefill_b4_s1024", "holdout", "gemma3_text", GEMMA3_1B, "prefill", 4, 1024),
    case("phi3-mini_decode_b1_l2048", "holdout", "phi3", PHI3_MINI, "decode", 1, 2048),
    case("phi3-mini_decode_b16_l512", "holdout", "phi3", PHI3_MINI, "decode", 16, 512),
    case("phi3-mini_prefill_b4_s512", "holdout", "phi3", PHI3_MINI, "prefill", 4, 512),
    case("phi3-medium-4l_decode_b4_l1024", "holdout", "phi3", PHI3_MEDIUM_4L, "decode", 4, 1024),
    case("phi4-mini_decode_b16_l1024", "holdout", "phi3", PHI4_MINI, "decode", 16, 1024),
    case("deepseek-v2-lite-4l_decode_b1_l4096", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 1, 4096),
    case("deepseek-v2-lite-4l_prefill_b1_s2048", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 1, 2048),
    case("deepseek-v3-4l_prefill_b1_s512", "holdout", "deepseek_v3", DEEPSEEK_V3_4L, "prefill", 1, 512),
    case("moonlight-4l_decode_b16_l1024", "holdout", "deepseek_v3", MOONLIGHT_4L, "decode", 16, 1024),
    case("mistral-7b-sw_decode_b8_l1536", "holdout", "mistral", MISTRAL_7B_SW, "decode", 8, 1536),
    case("mistral-7b-sw_prefill_b2_s1536", "holdout", "mistral", MISTRAL_7B_SW, "prefill", 2, 1536),
]


# Set 5 (issue 16's sixteenth round): fresh small-batch MoE decode cases, where routing leaves
# experts idle. All held out.
CASES5 = [
    case("mixtral-4l_decode_b2_l1024", "holdout", "mixtral", MIXTRAL_4L, "decode", 2, 1024),
    case("mixtral-4l_decode_b8_l512", "holdout", "mixtral", MIXTRAL_4L, "decode", 8, 512),
    case("qwen3-moe-4l_decode_b2_l1024", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 2, 1024),
    case("qwen3-moe-4l_decode_b8_l1024", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 8, 1024),
    case("deepseek-v2-lite-4l_decode_b2_l1024", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 2, 1024),
    case("deepseek-v2-lite-4l_decode_b8_l1024", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 8, 1024),
]

# Issue 16's twenty-second round: fresh MoE cases (all held out) for the grouped GEMM's decode pace,
# measured before that model change was compared with them: decodes at new batches and lengths and
# short prefills whose experts each get one tile of rows.
CASES6 = [
    case("mixtral-4l_decode_b1_l2048", "holdout", "mixtral", MIXTRAL_4L, "decode", 1, 2048),
    case("mixtral-4l_decode_b4_l256", "holdout", "mixtral", MIXTRAL_4L, "decode", 4, 256),
    case("mixtral-4l_decode_b16_l512", "holdout", "mixtral", MIXTRAL_4L, "decode", 16, 512),
    case("mixtral-4l_prefill_b1_s128", "holdout", "mixtral", MIXTRAL_4L, "prefill", 1, 128),
    case("qwen3-moe-4l_decode_b1_l512", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 1, 512),
    case("qwen3-moe-4l_decode_b4_l2048", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 4, 2048),
    case("qwen3-moe-4l_decode_b16_l512", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 16, 512),
    case("qwen3-moe-4l_prefill_b1_s128", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 1, 128),
    case("deepseek-v2-lite-4l_decode_b4_l512", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 4, 512),
    case("deepseek-v2-lite-4l_decode_b16_l1024", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 16, 1024),
]

# The same round, measured after set 6's comparison (its Qwen3-MoE prefill ran 43% slow) and
# before any change made for it: MoE prefills of 64-256 tokens and larger decode batches.
CASES7 = [
    case("qwen3-moe-4l_prefill_b1_s64", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 1, 64),
    case("qwen3-moe-4l_prefill_b2_s128", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 2, 128),
    case("qwen3-moe-4l_decode_b64_l256", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 64, 256),
    case("mixtral-4l_prefill_b1_s64", "holdout", "mixtral", MIXTRAL_4L, "prefill", 1, 64),
    case("mixtral-4l_decode_b32_l256", "holdout", "mixtral", MIXTRAL_4L, "decode", 32, 256),
    case("deepseek-v2-lite-4l_prefill_b1_s128", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 1, 128),
    case("deepseek-v2-lite-4l_decode_b1_l256", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 1, 256),
    case("deepseek-v2-lite-4l_decode_b32_l512", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 32, 512),
]


def provenance(gpu):
    import torch
    import transformers
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except Exception as e:  # noqa
        smi = f"nvidia-smi failed: {e}"
    return {"gpu_arg": gpu, "device_name": torch.cuda.get_device_name(0), "nvidia_smi": smi,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "transformers": transformers.__version__, "python": platform.python_version(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "warmup": WARMUP, "flush_bytes": FLUSH_BYTES}


def dump_reference(out):
    """HF defaults of each config class and the modeling sources, for reading."""
    import inspect
    import transformers
    from transformers import AutoConfig
    defaults = {}
    for t in ("llama", "mistral", "mixtral", "qwen2", "gpt2", "deepseek_v2", "qwen2_moe", "qwen3", "qwen3_moe",
              "gemma2", "gemma3_text", "phi3", "deepseek_v3"):
        try:
            defaults[t] = AutoConfig.for_model(t).to_dict()
        except Exception as e:  # noqa
            defaults[t] = {"error": repr(e)}
    with open(os.path.join(out, "hf_defaults.json"), "w") as f:
        json.dump(defaults, f, indent=1, sort_keys=True, default=str)
    src = os.path.join(out, "sources")
    os.makedirs(src, exist_ok=True)
    import importlib
    for mod in ("transformers.models.qwen2_moe.modeling_qwen2_moe", "transformers.models.llama.modeling_llama", "transformers.models.mixtral.modeling_mixtral",
                "transformers.models.deepseek_v2.modeling_deepseek_v2",
                "transformers.models.deepseek_v2.configuration_deepseek_v2",
                "transformers.models.gpt2.modeling_gpt2", "transformers.models.qwen2.modeling_qwen2",
                "transformers.models.mistral.modeling_mistral", "transformers.masking_utils",
                "transformers.integrations.sdpa_attention", "transformers.integrations.moe",
                "transformers.cache_utils", "transformers.generation.utils",
                "transformers.models.gpt2.configuration_gpt2",
                "transformers.models.qwen3.modeling_qwen3", "transformers.models.qwen3_moe.modeling_qwen3_moe",
                "transformers.models.gemma2.modeling_gemma2", "transformers.models.gemma3.modeling_gemma3",
                "transformers.models.phi3.modeling_phi3", "transformers.models.deepseek_v3.modeling_deepseek_v3",
                "transformers.models.deepseek_v3.configuration_deepseek_v3",
                "transformers.models.gemma2.configuration_gemma2", "transformers.models.gemma3.configuration_gemma3",
                "transformers.models.phi3.configuration_phi3", "transformers.models.qwen3_moe.configuration_qwen3_moe",
                "transformers.modeling_rope_utils", "transformers.activations", "transformers.modeling_utils"):
        try:
            m = importlib.import_module(mod)
            with open(os.path.join(src, mod.split(".")[-1] + ".py"), "w") as f:
                f.write(inspect.getsource(m))
        except Exception as e:  # noqa
            with open(os.path.join(src, mod.split(".")[-1] + ".error"), "w") as f:
                f.write(repr(e))


def build_model(c):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(c["model_type"], **c["cfg"])
    with torch.device("cuda"):
        try:
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
        except TypeError:
            model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    model.config.architectures = [model.__class__.__name__]
    return model


def new_cache(model):
    from transformers import DynamicCache
    try:
        return DynamicCache(config=model.config)
    except TypeError:
        return DynamicCache()


def cache_layers(cache):
    if hasattr(cache, "layers"):
        return [(l, "keys", "values") for l in cache.layers]
    raise RuntimeError("unknown DynamicCache layout")


def cut_cache(cache, L):
    """The cache as generation leaves it after L tokens: full layers hold L tokens, contiguous;
    sliding-window layers (DynamicSlidingWindowLayer) hold the last min(L, window - 1) tokens,
    once the window is full as the view generation leaves (the last window - 1 of a contiguous
    tensor of window tokens), and count L tokens seen."""
    import torch
    for layer, k, v in cache_layers(cache):
        if getattr(layer, "is_sliding", False):
            w = layer.sliding_window
            n = min(L, w - 1)
            for name in (k, v):
                t = getattr(layer, name)[:, :, :n]
                if n == w - 1:
                    buf = torch.empty(t.shape[0], t.shape[1], w, t.shape[3], dtype=t.dtype, device=t.device)
                    buf[:, :, 1:] = t
                    setattr(layer, name, buf[:, :, 1:])
                else:
                    setattr(layer, name, t.contiguous())
            layer.cumulative_length = L
        else:
            setattr(layer, k, getattr(layer, k)[:, :, :L].contiguous())
            setattr(layer, v, getattr(layer, v)[:, :, :L].contiguous())
    assert cache.get_seq_length() == L, (cache.get_seq_length(), L)


def cache_bytes(cache):
    total = 0
    for layer, k, v in cache_layers(cache):
        for t in (getattr(layer, k), getattr(layer, v)):
            total += t.numel() * t.element_size()
    return total


def make_phase(model, c):
    """Returns (run, after) callables: run() is the measured phase, after() restores state."""
    import torch
    B, S, V = c["batch"], c["seq_len"], model.config.vocab_size
    g = torch.Generator(device="cuda").manual_seed(1234)
    ids = torch.randint(0, V, (B, S), device="cuda", generator=g)
    info = {}
    import inspect
    accepted = set(inspect.signature(model.forward).parameters)

    def call(**kw):  # pass only what this model's forward takes (as generate does)
        return model(**{k: v for k, v in kw.items() if k in accepted})
    if c["phase"] == "prefill":
        mask = torch.ones(B, S, dtype=torch.long, device="cuda")
        pos = torch.arange(S, device="cuda").unsqueeze(0).expand(B, S)
        cpos = torch.arange(S, device="cuda")

        def run():
            return call(input_ids=ids, attention_mask=mask, position_ids=pos, cache_position=cpos,
                        past_key_values=new_cache(model), use_cache=True, logits_to_keep=1)
        return run, (lambda: None), info
    if c["phase"] == "decode":
        cache = new_cache(model)
        with torch.no_grad():
            call(input_ids=ids, attention_mask=torch.ones(B, S, dtype=torch.long, device="cuda"),
                 past_key_values=cache, use_cache=True, logits_to_keep=1)
        cut_cache(cache, S)
        info["kv_cache_bytes"] = cache_bytes(cache)
        nxt = torch.randint(0, V, (B, 1), device="cuda", generator=g)
        mask = torch.ones(B, S + 1, dtype=torch.long, device="cuda")
        pos = torch.full((B, 1), S, device="cuda", dtype=torch.long)
        cpos = torch.tensor([S], device="cuda")

        def run():
            return call(input_ids=nxt, attention_mask=mask, position_ids=pos, cache_position=cpos,
                        past_key_values=cache, use_cache=True, logits_to_keep=1)
        return run, (lambda: cut_cache(cache, S)), info
    # generate
    mask = torch.ones(B, S, dtype=torch.long, device="cuda")
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    N = c["output_len"]

    def run():
        return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=N, do_sample=False)
    return run, (lambda: None), info


# Issue 16's twenty-fifth round: fresh MoE cases (all held out) measured with their routing
# recorded, so that validation gives the simulation the routing the random weights produced.
CASES8 = [
    case("qwen3-moe-4l_prefill_b1_s96", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 1, 96),
    case("qwen3-moe-4l_prefill_b1_s256", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 1, 256),
    case("qwen3-moe-4l_prefill_b4_s128", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 4, 128),
    case("qwen3-moe-4l_decode_b8_l512", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 8, 512),
    case("qwen3-moe-4l_decode_b32_l1024", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 32, 1024),
    case("mixtral-4l_prefill_b1_s256", "holdout", "mixtral", MIXTRAL_4L, "prefill", 1, 256),
    case("mixtral-4l_decode_b8_l1024", "holdout", "mixtral", MIXTRAL_4L, "decode", 8, 1024),
    case("deepseek-v2-lite-4l_prefill_b1_s256", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 1, 256),
    case("deepseek-v2-lite-4l_prefill_b2_s128", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 2, 128),
    case("deepseek-v2-lite-4l_decode_b16_l256", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 16, 256),
]
# The same round, after set 8's comparison: MoE prefills whose experts get one to three 64-row tiles
# of tokens (and two large decode batches), routing recorded, weights seeded afresh.
CASES9 = [
    case("qwen3-moe-4l_prefill_b1_s1024", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 1, 1024),
    case("qwen3-moe-4l_prefill_b2_s384", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 2, 384),
    case("qwen3-moe-4l_decode_b128_l256", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 128, 256),
    case("mixtral-4l_prefill_b1_s512", "holdout", "mixtral", MIXTRAL_4L, "prefill", 1, 512),
    case("mixtral-4l_prefill_b2_s160", "holdout", "mixtral", MIXTRAL_4L, "prefill", 2, 160),
    case("mixtral-4l_decode_b64_l512", "holdout", "mixtral", MIXTRAL_4L, "decode", 64, 512),
    case("deepseek-v2-lite-4l_prefill_b1_s1024", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 1, 1024),
    case("deepseek-v2-lite-4l_prefill_b4_s192", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 4, 192),
]
# Measured at the same round's end and stored unread for the next: MoE cases with routing recorded
# (a mixed dense/MoE Qwen3, longer and shorter prefills, Moonlight's DeepSeek-V3 routing).
CASES10 = [
    case("qwen3-moe-mixed_prefill_b1_s512", "holdout", "qwen3_moe", QWEN3_MOE_MIXED, "prefill", 1, 512),
    case("qwen3-moe-4l_prefill_b1_s2048", "holdout", "qwen3_moe", QWEN3_MOE_4L, "prefill", 1, 2048),
    case("qwen3-moe-4l_decode_b16_l2048", "holdout", "qwen3_moe", QWEN3_MOE_4L, "decode", 16, 2048),
    case("mixtral-4l_prefill_b1_s1024", "holdout", "mixtral", MIXTRAL_4L, "prefill", 1, 1024),
    case("mixtral-4l_prefill_b4_s64", "holdout", "mixtral", MIXTRAL_4L, "prefill", 4, 64),
    case("deepseek-v2-lite-4l_prefill_b2_s512", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "prefill", 2, 512),
    case("deepseek-v2-lite-4l_decode_b64_l512", "holdout", "deepseek_v2", DEEPSEEK_V2_LITE_4L, "decode", 64, 512),
    case("moonlight-4l_prefill_b1_s512", "holdout", "deepseek_v3", MOONLIGHT_4L, "prefill", 1, 512),
]
MODEL_SEED = 2025


def expert_count(config):
    for key in ("num_experts", "num_local_experts", "n_routed_experts"):
        v = getattr(config, key, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


def capture_routing(model, run, after):
    """One run of the phase with hooks: per MoE layer (by its index in model.layers), the tokens
    each expert received, and where they were read (the experts module's top-k index argument, or
    the router's output: its integer indices, else the top-k of its logits)."""
    import torch
    E, k = expert_count(model.config), getattr(model.config, "num_experts_per_tok", None)
    if E is None or k is None:
        return None
    from_experts, from_gate, hooks = {}, {}, []

    def layer_of(name):
        m = re.search(r"layers\.(\d+)\.", name)
        return int(m.group(1)) if m else None

    def int_tensor(values):
        for v in values:
            if torch.is_tensor(v) and not v.is_floating_point() and v.dim() >= 1 and v.shape[-1] == k:
                return v
        return None

    for name, mod in model.named_modules():
        layer = layer_of(name)
        if layer is None:
            continue
        if name.endswith(".experts"):
            def pre(mod, args, kwargs, layer=layer):
                idx = int_tensor(list(args) + list(kwargs.values()))
                if idx is not None:
                    from_experts[layer] = idx.detach().reshape(-1).to(torch.int64)
            hooks.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
        elif name.endswith(".gate"):
            def post(mod, args, out, layer=layer):
                outs = list(out) if isinstance(out, (tuple, list)) else [out]
                idx = int_tensor(outs)
                if idx is None:
                    logits = next((o for o in outs if torch.is_tensor(o) and o.is_floating_point()
                                   and o.shape[-1] == E), None)
                    if logits is None:
                        return
                    idx = torch.topk(logits.float(), k, dim=-1).indices
                from_gate[layer] = idx.detach().reshape(-1).to(torch.int64)
            hooks.append(mod.register_forward_hook(post))
    try:
        out = run()
        torch.cuda.synchronize()
        del out
        after()
    finally:
        for h in hooks:
            h.remove()
    layers = {}
    for layer in sorted(set(from_experts) | set(from_gate)):
        idx = from_experts.get(layer, from_gate.get(layer))
        layers[str(layer)] = torch.bincount(idx.cpu(), minlength=E).tolist()
    return {"experts": E, "top_k": k, "layers": layers,
            "source": "experts pre-hook" if from_experts else "router output"}


def measure_case(c, reps, wall_reps):
    import torch
    from torch.profiler import profile, ProfilerActivity, record_function
    if c.get("seeded"):
        torch.manual_seed(c["seeded"])
    model = build_model(c)
    n_params = sum(p.numel() for p in model.parameters())
    weights_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    cfg_json = model.config.to_json_string(use_diff=True)
    full_cfg = model.config.to_dict()
    if c["phase"] == "generate":
        import functools
        orig = model.forward

        @functools.wraps(orig)  # generate reads forward's signature (logits_to_keep)
        def wrapped(*a, **k):
            with record_function("gpusim_forward"):
                return orig(*a, **k)
        model.forward = wrapped
    run, after, info = make_phase(model, c)
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    with torch.no_grad():
        for _ in range(WARMUP):
            run()
            after()
        torch.cuda.synchronize()
        # unprofiled wall time and activation peak
        walls, peaks = [], []
        for _ in range(wall_reps):
            flush.zero_()
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            out = run()
            e1.record()
            torch.cuda.synchronize()
            walls.append(e0.elapsed_time(e1) * 1000.0)
            peaks.append(torch.cuda.max_memory_allocated() - base)
            del out
            after()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            for _ in range(reps):
                with record_function("gpusim_flush"):
                    flush.zero_()
                torch.cuda.synchronize()
                with record_function("gpusim_op"):
                    out = run()
                    torch.cuda.synchronize()
                del out
                after()
                torch.cuda.synchronize()
        routing = capture_routing(model, run, after)
    evs = trace_events(prof)
    res = summarize(evs)
    if routing is not None:
        res["routing"] = routing
    res.update(n_params=n_params, weights_bytes=weights_bytes, wall_us_median=statistics.median(walls),
               wall_us_all=walls, activation_peak_bytes=max(peaks), hf_config_json=cfg_json,
               full_config=full_cfg, **info)
    del model, flush
    torch.cuda.empty_cache()
    return res


def trace_events(prof):
    """The profiler's events, as its chrome-trace export lists them."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        evs = json.load(f)
    os.unlink(path)
    return evs.get("traceEvents", evs) if isinstance(evs, dict) else evs


def innermost_ops(cpu_ops, launches):
    """Name of the innermost cpu_op (same thread) around each launch: one sweep over time."""
    names = [""] * len(launches)
    points = [(_f(l["ts"]), 1, 0.0, i) for i, l in enumerate(launches) if l is not None]
    by_tid = {}
    for o in cpu_ops:
        by_tid.setdefault(o.get("tid"), []).append((_f(o["ts"]), 0, -_f(o.get("dur", 0)), o))
    for tid, ops in by_tid.items():
        events = sorted(ops + [p for p in points if launches[p[3]].get("tid") == tid],
                        key=lambda x: (x[0], x[1], x[2]))
        stack = []  # open ops, outermost first: (end, name)
        for ts, kind, negdur, item in events:
            while stack and stack[-1][0] < ts:
                stack.pop()
            if kind == 0:
                stack.append((ts - negdur, item.get("name", "")))
            elif stack:
                names[item] = stack[-1][1]
    return names


def summarize(evs):
    per_rep, corr2launch, method, info = assign_gpu_events(evs)
    X = [e for e in evs if e.get("ph") == "X" and "ts" in e]
    reps = [r for r in per_rep if r]
    seqs = [tuple(e.get("name", "") for e in r) for r in reps]
    modal = max(set(seqs), key=lambda s: (seqs.count(s), len(s)))
    keep = [r for r, s in zip(reps, seqs) if s == modal]
    sums = [sum(_f(e.get("dur", 0)) for e in r) for r in keep]
    # the innermost aten op and the forward call (generate) of each launch, in the first kept rep
    cpu_ops = sorted((e for e in X if e.get("cat") == "cpu_op"), key=lambda e: _f(e["ts"]))
    fwd = _ranges(X, "user_annotation", "gpusim_forward")
    first = keep[0]
    aten_of = innermost_ops(cpu_ops, [corr2launch.get(e.get("args", {}).get("correlation")) for e in first])
    kernels = []
    for i, e in enumerate(first):
        a = e.get("args", {})
        launch = corr2launch.get(a.get("correlation"))
        aten, fidx = aten_of[i], -1
        if launch is not None:
            ts = _f(launch["ts"])
            for j, (s, en, _) in enumerate(fwd):
                if s <= ts <= en:
                    fidx = j
                    break
        durs = [_f(r[i].get("dur", 0)) for r in keep]
        kernels.append({"i": i, "name": e.get("name", ""), "cat": e.get("cat", ""), "aten": aten,
                        "grid": _dims(a.get("grid")), "block": _dims(a.get("block")),
                        "regs": a.get("registers per thread"), "smem": a.get("shared memory"),
                        "dur_us": statistics.median(durs), "forward": fidx})
    if fwd:  # forward ranges repeat per rep: renumber to the first rep's calls
        fmin = min(k["forward"] for k in kernels if k["forward"] >= 0) if any(k["forward"] >= 0 for k in kernels) else 0
        for k in kernels:
            if k["forward"] >= 0:
                k["forward"] -= fmin
    return {"assign_method": method, "assign": {k: v for k, v in info.items() if k != "counts_gpu_annotation"},
            "n_reps_used": len(keep), "n_kernels": len(modal), "kernel_time_us_median": statistics.median(sums),
            "kernel_time_us_all": sums, "kernels": kernels}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("--split", default=None)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--deadline-s", type=float, default=1e9)
    ap.add_argument("--show-holdout", action="store_true")
    ap.add_argument("--set2", action="store_true", help="measure CASES2 (fresh holdout) instead")
    ap.add_argument("--set3", action="store_true", help="measure CASES3 (issue 13's families) instead")
    ap.add_argument("--set4", action="store_true", help="measure CASES4 (issue 13, second round) instead")
    ap.add_argument("--set5", action="store_true",
                    help="measure CASES5 (issue 16's sixteenth round: fresh small-batch MoE decode cases, "
                         "where routing leaves experts idle) instead")
    ap.add_argument("--set6", action="store_true",
                    help="measure CASES6 (issue 16's twenty-second round: fresh MoE decodes and short "
                         "prefills for the grouped GEMM's pace) instead")
    ap.add_argument("--set7", action="store_true",
                    help="measure CASES7 (the same round, after set 6's comparison: MoE prefills "
                         "and larger decode batches) instead")
    ap.add_argument("--set8", action="store_true",
                    help="measure CASES8 (issue 16's twenty-fifth round: MoE cases with their routing "
                         "recorded, seeded weights) instead")
    ap.add_argument("--set9", action="store_true",
                    help="measure CASES9 (the same round: MoE prefills of one to three row tiles an "
                         "expert, routing recorded, seeded weights) instead")
    ap.add_argument("--set10", action="store_true",
                    help="measure CASES10 (the same round's end, for the next: MoE cases with routing "
                         "recorded, seeded weights) instead")
    ap.add_argument("--no-reference", action="store_true", help="skip the defaults and sources dump")
    args = ap.parse_args()
    start = time.time()
    os.makedirs(os.path.join(args.out, "hf_configs"), exist_ok=True)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    if not args.no_reference:
        dump_reference(args.out)
    result = {"provenance": provenance(args.gpu), "method": __doc__, "cases": [], "errors": []}
    # The highest-numbered set flag wins (as the old chain of flags did); none: the first set.
    sets = {"2": CASES2, "3": CASES3, "4": CASES4, "5": CASES5, "6": CASES6, "7": CASES7,
            "8": [dict(c, seeded=MODEL_SEED) for c in CASES8],
            "9": [dict(c, seeded=MODEL_SEED + 1) for c in CASES9],
            "10": [dict(c, seeded=MODEL_SEED + 2) for c in CASES10]}
    suffix = next((n for n in sorted(sets, key=int, reverse=True) if getattr(args, "set" + n)), "")
    cases = sets.get(suffix, CASES)
    if args.split:
        suffix += "_" + args.split
    out_json = os.path.join(args.out, f"hf_models{suffix}_{args.gpu}.json")
    for c in cases:
        if args.only and not re.search(args.only, c["id"]):
            continue
        if args.split and c["split"] != args.split:
            continue
        if time.time() - start > args.deadline_s:
            result["errors"].append({"id": c["id"], "error": "skipped: deadline"})
            continue
        t = time.time()
        try:
            big = c["phase"] == "generate" or c["cfg"].get("num_hidden_layers", 12) >= 28
            res = measure_case(c, reps=max(3, args.reps // 2) if big else args.reps, wall_reps=5)
            with open(os.path.join(args.out, "hf_configs", c["id"] + ".json"), "w") as f:
                f.write(res["hf_config_json"])
            rec = {k: v for k, v in c.items() if k != "cfg"}
            rec.update(res)
            result["cases"].append(rec)
            show = c["split"] != "holdout" or args.show_holdout
            print(f"{c['id']:40s} {c['split']:11s} kernels={res['n_kernels']:5d} "
                  + (f"kernel_time={res['kernel_time_us_median']:10.1f}us wall={res['wall_us_median']:10.1f}us "
                     f"act_peak={res['activation_peak_bytes']/1e6:8.1f}MB" if show else "(hidden)")
                  + f"  [{time.time()-t:.0f}s]", flush=True)
        except Exception as e:  # noqa
            result["errors"].append({"id": c["id"], "error": repr(e), "trace": traceback.format_exc()})
            print(f"{c['id']:40s} ERROR {e!r}", flush=True)
            import torch as _t
            _t.cuda.empty_cache()
        with open(out_json, "w") as f:
            json.dump(result, f, indent=None, separators=(",", ":"))
    print(f"done in {time.time()-start:.0f}s, {len(result['cases'])} cases, {len(result['errors'])} errors")


if __name__ == "__main__":
    main()
