#!/usr/bin/env python3
"""hf_train3.py: training steps, set 3 (issue 15): mixture-of-experts and this year's families.

The method is hf_train.py's (see its docstring): one optimizer step (foreach AdamW, bf16 weights)
of a Hugging Face causal LM built from its config with random weights, per-phase kernels and
kernel time, the step's wall time and memory peak. Models: Qwen3-MoE (128 experts, top 8; and a
mixed dense/sparse variant with 32 experts, top 4), a small Mixtral (8 experts, top 2),
DeepSeek-V2-Lite with 4 layers (multi-head latent attention, 64 routed and 2 shared experts),
Phi-3-mini with 2 layers (fused projections) and Gemma 3 1B with 6 layers (sandwich norms, q/k
norms, local and global layers; sequences within the window).

Split: cases alternate calibration / holdout in list order. Held-out figures are not printed.
The set was drawn up on 2026-11-25 before any of its cases was lowered for training.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/hf_train3.py --gpu h100 --out $OUT
Writes $OUT/hf_train3_<gpu>.json in hf_train.py's format.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_train  # noqa: E402
from hf_models import DEEPSEEK_V2_LITE_4L, GEMMA3_1B, MIXTRAL_SMALL, PHI3_MINI, QWEN3_MOE_4L, QWEN3_MOE_MIXED  # noqa: E402
from hf_train import case  # noqa: E402

MIXTRAL_SMALL_4L = dict(MIXTRAL_SMALL, num_hidden_layers=4)
PHI3_MINI_2L = dict(PHI3_MINI, num_hidden_layers=2)
GEMMA3_1B_6L = dict(GEMMA3_1B, num_hidden_layers=6)

CASES = [
    case("qwen3-moe-4l_b4_s512", "qwen3_moe", QWEN3_MOE_4L, 4, 512),
    case("qwen3-moe-4l_b2_s1024", "qwen3_moe", QWEN3_MOE_4L, 2, 1024),
    case("mixtral-small-4l_b4_s512", "mixtral", MIXTRAL_SMALL_4L, 4, 512),
    case("mixtral-small-4l_b2_s1024", "mixtral", MIXTRAL_SMALL_4L, 2, 1024),
    case("qwen3-moe-mixed_b4_s1024", "qwen3_moe", QWEN3_MOE_MIXED, 4, 1024),
    case("qwen3-moe-mixed_b8_s512", "qwen3_moe", QWEN3_MOE_MIXED, 8, 512),
    case("deepseek-v2-lite-4l_b2_s512", "deepseek_v2", DEEPSEEK_V2_LITE_4L, 2, 512),
    case("deepseek-v2-lite-4l_b4_s512", "deepseek_v2", DEEPSEEK_V2_LITE_4L, 4, 512),
    case("phi3-mini-2l_b4_s512", "phi3", PHI3_MINI_2L, 4, 512),
    case("phi3-mini-2l_b2_s1024", "phi3", PHI3_MINI_2L, 2, 1024),
    case("gemma3-1b-6l_b8_s256", "gemma3_text", GEMMA3_1B_6L, 8, 256),
    case("gemma3-1b-6l_b4_s512", "gemma3_text", GEMMA3_1B_6L, 4, 512),
]
for i, c in enumerate(CASES):
    c["split"] = "holdout" if i % 2 else "calibration"

if __name__ == "__main__":
    hf_train.main(CASES, "hf_train3")
