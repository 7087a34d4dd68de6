#!/usr/bin/env python3
"""hf_train4.py: training steps, set 4 (issue 15): a tuned trainer's step, and fp32 eager steps.

The method is hf_train.py's (see its docstring), with two kinds of case:
  trainer "compiled": the model compiled by TorchInductor (torch.compile with its defaults: the
    forward with its loss and the backward become Triton kernels fused by Inductor around cuBLAS
    GEMMs and the SDPA kernels), bf16 weights, AdamW fused=True (not compiled): the step a tuned
    trainer runs (torchtitan-style compile plus fused optimizer);
  precision "fp32": fp32 weights, activations, gradients and AdamW state, no autocast, PyTorch's
    default fp32 matmul precision ("highest": no TF32), SDPA's fp32 kernels.
The first warm-up step compiles; the measured steps run the compiled graphs.

Split: cases alternate calibration / holdout in list order. Held-out figures are not printed.
The set was drawn up on 2026-11-25 before any step of these kinds was lowered.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/hf_train4.py --gpu h100 --out $OUT
Writes $OUT/hf_train4_<gpu>.json in hf_train.py's format (cases also carry "trainer").
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_train  # noqa: E402
from hf_train import LLAMA_1B_4L, LLAMA_8B_2L, QWEN2_05B_6L, QWEN3_06B_4L, case  # noqa: E402

C = dict(trainer="compiled", optimizer="adamw-fused")
CASES = [
    case("llama3.2-1b-4l_b4_s512_compiled", "llama", LLAMA_1B_4L, 4, 512, **C),
    case("llama3.2-1b-4l_b8_s1024_compiled", "llama", LLAMA_1B_4L, 8, 1024, **C),
    case("qwen2-0.5b-6l_b8_s512_compiled", "qwen2", QWEN2_05B_6L, 8, 512, **C),
    case("qwen2-0.5b-6l_b4_s1024_compiled", "qwen2", QWEN2_05B_6L, 4, 1024, **C),
    case("llama3-8b-2l_b2_s1024_compiled", "llama", LLAMA_8B_2L, 2, 1024, **C),
    case("llama3-8b-2l_b1_s2048_compiled", "llama", LLAMA_8B_2L, 1, 2048, **C),
    case("qwen3-0.6b-4l_b4_s1024_compiled", "qwen3", QWEN3_06B_4L, 4, 1024, **C),
    case("qwen3-0.6b-4l_b8_s512_compiled", "qwen3", QWEN3_06B_4L, 8, 512, **C),
    case("llama3.2-1b-4l_b2_s512_fp32", "llama", LLAMA_1B_4L, 2, 512, "fp32"),
    case("llama3.2-1b-4l_b4_s512_fp32", "llama", LLAMA_1B_4L, 4, 512, "fp32"),
    case("qwen2-0.5b-6l_b4_s512_fp32", "qwen2", QWEN2_05B_6L, 4, 512, "fp32"),
    case("qwen2-0.5b-6l_b8_s512_fp32", "qwen2", QWEN2_05B_6L, 8, 512, "fp32"),
    case("qwen3-0.6b-4l_b2_s1024_fp32", "qwen3", QWEN3_06B_4L, 2, 1024, "fp32"),
    case("qwen3-0.6b-4l_b4_s1024_fp32", "qwen3", QWEN3_06B_4L, 4, 1024, "fp32"),
]
for i, c in enumerate(CASES):
    c["split"] = "holdout" if i % 2 else "calibration"

if __name__ == "__main__":
    hf_train.main(CASES, "hf_train4")
