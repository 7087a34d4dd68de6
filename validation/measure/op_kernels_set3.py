#!/usr/bin/env python3
"""op_kernels_set3.py: a random set of op shapes (issue 16), measured exactly like op_kernels.py.

The shapes are drawn at random (seed 16, so the list is the same on every machine) from the space
users hit, and each instance is assigned to a split at random (half and half):
  * matmul: M, N, K log-uniform over 1..16384, half of them rounded to a multiple of 16 and half
    left as drawn (mostly unaligned), dtypes bf16, fp16, fp32 (TF32 off) and tf32;
  * linear (F.linear, bf16, with and without bias): the same draw;
  * layer_norm, rms_norm (bf16) and softmax (bf16, fp32): rows and columns log-uniform;
  * sdpa (prefill, causal or not) and sdpa_decode: heads and head dimensions of real model
    configurations (Llama 3, Qwen2/3, Mistral, GPT-2, Phi-3, Gemma 2/3), batch and lengths
    log-uniform;
  * elementwise (add, mul, silu, gelu) and casts: sizes log-uniform.
Draws whose work or memory would make one repetition slow (over ~20 ms) or not fit are redrawn.

Splits (column `split`): calibration3 (held_out = 0), to calibrate against; holdout3
(held_out = 1), for the final report only: do not calibrate against them or look at them before.
The console masks holdout3 results unless --show-fresh is given.

This script only draws the shapes: op_kernels_set2.py's main() measures them (its method is
op_kernels.py's: 3 warm-ups, 20 profiled repetitions, L2 flushed before each, median), writing
$OUT/ops3_<gpu>.json and $OUT/ops3_<gpu>.csv.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set3.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --split {all,calibration3,holdout3}, --only REGEX,
  --deadline-s N, --show-fresh, --list
"""
import importlib.util
import math
import os
import random

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set2", os.path.join(_HERE, "op_kernels_set2.py"))
s2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s2)

SEED = 16
CALIB = "calibration3"
FRESH = "holdout3"

# (Hq, Hkv, D) of published configurations.
ATTENTION_HEADS = [
    (32, 8, 128),   # Llama-3-8B, Mistral-7B
    (64, 8, 128),   # Llama-3-70B
    (32, 8, 64),    # Llama-3.2-1B
    (24, 8, 128),   # Llama-3.2-3B
    (12, 2, 128),   # Qwen2-1.5B
    (14, 2, 64),    # Qwen2-0.5B
    (16, 8, 128),   # Qwen3-1.7B
    (32, 4, 128),   # Qwen3-30B-A3B
    (12, 12, 64),   # GPT-2 small
    (32, 32, 96),   # Phi-3-mini
    (8, 4, 256),    # Gemma-2-2B
    (4, 1, 256),    # Gemma-3-1B
]


def log_uniform(rng, lo, hi):
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def gemm_dims(rng):
    dims = [log_uniform(rng, 1, 16384) for _ in range(3)]
    if rng.random() < 0.5:
        dims = [max(16, (d + 8) // 16 * 16) for d in dims]
    return dims


def draw(rng):
    """(op, overrides of op_kernels' OP LISTS) for one instance."""
    out = []
    # GEMMs: cap the work (2MNK) by dtype so that one call stays near 20 ms at most, and memory.
    flops_cap = {"bf16": 4e12, "fp16": 4e12, "tf32": 1.5e12, "fp32": 6e11}
    for dt, n in (("bf16", 74), ("fp16", 20), ("fp32", 35), ("tf32", 35)):
        got = 0
        while got < n:
            M, N, K = gemm_dims(rng)
            if 2.0 * M * N * K > flops_cap[dt] or max(M * K, K * N, M * N) > 2 ** 27:
                continue
            out.append(("matmul", {"MATMUL": [(M, N, K, dt)]}))
            got += 1
    got = 0
    while got < 60:
        M, N, K = gemm_dims(rng)
        if 2.0 * M * N * K > 4e12 or max(M * K, K * N, M * N) > 2 ** 27:
            continue
        out.append(("linear", {"LINEAR": [(M, N, K, int(rng.random() < 0.3))]}))
        got += 1
    # Row reductions: rows x columns log-uniform, at most 2^28 elements.
    for op, n in (("layer_norm", 25), ("rms_norm", 25), ("softmax", 30)):
        got = 0
        while got < n:
            R, C = log_uniform(rng, 1, 65536), log_uniform(rng, 16, 131072)
            if R * C > 2 ** 28:
                continue
            if op == "softmax":
                out.append((op, {"SOFTMAX": [(R, C, "bf16" if rng.random() < 0.7 else "fp32")]}))
            else:
                out.append((op, {"NORM_SHAPES": [(R, C)]}))
            got += 1
    # Attention from real head configurations.
    got = 0
    while got < 30:
        Hq, _, D = rng.choice(ATTENTION_HEADS)
        B, S = log_uniform(rng, 1, 16), log_uniform(rng, 64, 8192)
        if B * Hq * S * S * D * 4 > 4e12 or B * Hq * S * D > 2 ** 27:
            continue
        out.append(("sdpa", {"SDPA": [(B, Hq, S, D, int(rng.random() < 0.7), "bf16")]}))
        got += 1
    got = 0
    while got < 40:
        Hq, Hkv, D = rng.choice(ATTENTION_HEADS)
        B, L = log_uniform(rng, 1, 64), log_uniform(rng, 64, 32768)
        if B * Hkv * L * D > 2 ** 28:
            continue
        out.append(("sdpa_decode", {"SDPA_DECODE": [(B, Hq, Hkv, L, D)]}))
        got += 1
    # Elementwise and casts.
    for _ in range(20):
        op, dt = rng.choice([("add", "bf16"), ("mul", "bf16"), ("silu", "bf16"), ("gelu", "bf16"),
                             ("add", "fp32"), ("mul", "fp32")])
        out.append((op, {"EW_OPS": [(op, dt)], "EW_SIZES": [log_uniform(rng, 1024, 2 ** 27)]}))
    for _ in range(10):
        op = rng.choice(["cast_to_bf16", "cast_to_fp32"])
        out.append((op, {"CAST_SIZES": [log_uniform(rng, 1024, 2 ** 27)]}))
    return out


def groups():
    rng = random.Random(SEED)
    seen, result = set(), []
    for op, overrides in draw(rng):
        key = (op, repr(sorted(overrides.items())))
        if key in seen:
            continue
        seen.add(key)
        result.append((FRESH if rng.random() < 0.5 else CALIB, (op,), overrides))
    return result


def main():
    s2.GROUPS = groups()
    s2.CALIB, s2.FRESH, s2.SPLITS = CALIB, FRESH, (CALIB, FRESH)
    s2.FILE_PREFIX = "ops3"
    s2.SCRIPT = "validation/measure/op_kernels_set3.py"
    s2.SPLIT_TEXT = ("calibration3 (held_out = 0): random draws to calibrate against; holdout3 (held_out = 1): "
                     "random draws for the final accuracy report only (each instance assigned at random, seed 16)")
    s2.main()


if __name__ == "__main__":
    main()
