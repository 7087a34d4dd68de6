#!/usr/bin/env python3
"""hf_train2.py: training steps, set 2 (issue 15): activation checkpointing, gradient
accumulation and forward+backward-only steps, plus fresh shapes of the plain and autocast steps.

The method is hf_train.py's (see its docstring), with these case options:
  checkpointing "full": model.gradient_checkpointing_enable() with transformers' defaults (it
    turns the KV cache off in training);
  accumulation_steps k: k micro-batches of `batch` sequences, each loss divided by k, forward and
    backward ranges once per micro-batch, then one optimizer step;
  optimizer "none": no optimizer (model.zero_grad(set_to_none=True) between steps).

Split: cases alternate calibration / holdout in list order, except that every autocast case is
held out (set 1's calibration autocast cases are what the autocast lowering is built from).
The set was drawn up on 2026-11-25 before any of its cases was simulated.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/hf_train2.py --gpu h100 --out $OUT
Writes $OUT/hf_train2_<gpu>.json in hf_train.py's format (cases also carry checkpointing and
accumulation_steps).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_train  # noqa: E402
from hf_train import (GPT2_SMALL, LLAMA_1B_4L, LLAMA_8B_2L, MISTRAL_7B_2L, QWEN2_05B_6L,  # noqa: E402
                      QWEN3_06B_4L, case)

AMP = "fp32+autocast-bf16"
CASES = [
    case("llama3.2-1b-4l_b4_s1024_ckpt", "llama", LLAMA_1B_4L, 4, 1024, checkpointing="full"),
    case("qwen3-0.6b-4l_b8_s1024_ckpt", "qwen3", QWEN3_06B_4L, 8, 1024, checkpointing="full"),
    case("qwen2-0.5b-6l_b8_s1024_ckpt", "qwen2", QWEN2_05B_6L, 8, 1024, checkpointing="full"),
    case("llama3-8b-2l_b2_s2048_ckpt", "llama", LLAMA_8B_2L, 2, 2048, checkpointing="full"),
    case("llama3.2-1b-4l_b2_s1024_acc4", "llama", LLAMA_1B_4L, 2, 1024, accumulation_steps=4),
    case("qwen3-0.6b-4l_b4_s512_acc2", "qwen3", QWEN3_06B_4L, 4, 512, accumulation_steps=2),
    case("mistral-7b-2l_b1_s1024_acc2", "mistral", MISTRAL_7B_2L, 1, 1024, accumulation_steps=2),
    case("qwen2-0.5b-6l_b2_s2048_acc2", "qwen2", QWEN2_05B_6L, 2, 2048, accumulation_steps=2),
    case("llama3.2-1b-4l_b8_s512_none", "llama", LLAMA_1B_4L, 8, 512, optimizer="none"),
    case("qwen3-0.6b-4l_b2_s2048_none", "qwen3", QWEN3_06B_4L, 2, 2048, optimizer="none"),
    case("llama3-8b-2l_b4_s512", "llama", LLAMA_8B_2L, 4, 512),
    case("qwen2-0.5b-6l_b16_s256", "qwen2", QWEN2_05B_6L, 16, 256),
    case("llama3.2-1b-4l_b4_s2048_ckpt_acc2", "llama", LLAMA_1B_4L, 4, 2048, checkpointing="full",
         accumulation_steps=2),
    case("mistral-7b-2l_b1_s4096_ckpt", "mistral", MISTRAL_7B_2L, 1, 4096, checkpointing="full"),
    case("llama3.2-1b-4l_b8_s512_amp", "llama", LLAMA_1B_4L, 8, 512, AMP),
    case("qwen3-0.6b-4l_b4_s1024_amp", "qwen3", QWEN3_06B_4L, 4, 1024, AMP),
    case("qwen2-0.5b-6l_b8_s512_amp", "qwen2", QWEN2_05B_6L, 8, 512, AMP),
    case("llama3-8b-2l_b1_s1024_amp", "llama", LLAMA_8B_2L, 1, 1024, AMP),
    case("gpt2-small_b4_s512_ckpt", "gpt2", GPT2_SMALL, 4, 512, checkpointing="full"),
    case("gpt2-small_b8_s1024", "gpt2", GPT2_SMALL, 8, 1024),
]
for i, c in enumerate(CASES):
    c["split"] = "holdout" if i % 2 or c["precision"] == AMP else "calibration"

if __name__ == "__main__":
    hf_train.main(CASES, "hf_train2")
