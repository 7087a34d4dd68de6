#!/usr/bin/env python3
"""op_kernels.py: per-kernel ground truth for framework-level PyTorch ops.

For each op instance (op, dtype, shape) this runs the op in PyTorch on random
data (torch.randn, never zeros) and measures every CUDA kernel it launches the
way profilers do (DESIGN.md, "Validation"):

  * 3 warm-up calls;
  * 20 profiled repetitions under torch.profiler (ProfilerActivity.CPU+CUDA,
    record_shapes=True). Before each repetition the L2 is flushed by writing a
    256 MiB buffer (buf.zero_()) inside record_function("gpusim_flush"),
    followed by torch.cuda.synchronize(); the op itself runs inside
    record_function("gpusim_op"), followed by torch.cuda.synchronize();
  * the profile is exported as a Chrome trace and parsed with json. A GPU
    activity (kernel, memset, memcpy) belongs to repetition r of the op when
    the CUDA runtime/driver call that launched it (same "correlation" id) lies
    inside the r-th "gpusim_op" CPU range. Flush kernels launch inside
    "gpusim_flush" and are therefore never counted. The GPU-side
    "gpu_user_annotation" ranges are used as a cross-check (and as a fallback
    if no correlation ids are present);
  * per kernel (position in the op's launch sequence): median/min/max duration
    over the repetitions, and the launch configuration the trace records
    (grid, block, registers per thread, shared memory = static + dynamic,
    blocks per SM, warps per SM, est. achieved occupancy %);
  * per op: kernel_time_us = median over repetitions of the sum of its kernel
    durations; gpu_span_us = median of (last kernel end - first kernel start);
    wall_us = median of CUDA-event time around the op in a separate,
    unprofiled loop of 20 repetitions (flush, synchronize, event, op, event),
    which includes the host launch cost: for reference only.

Usage (on the GPU machine, from the repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels.py --gpu h100 --out $OUT
  options: --held-out-only, --only REGEX (op/shape filter), --deadline-s N
Writes $OUT/ops_<gpu>.json (rewritten after every op instance, so partial
results survive), $OUT/ops_<gpu>.csv (one row per op instance x kernel),
$OUT/trace_example_<gpu>.json (the Chrome trace of the first instance), and
prints a compact table at the end.

Held-out rule: an instance is held out when its index in its op list (the
list an op's shapes are declared in below, see OP LISTS) is odd.
"""
import argparse
import bisect
import csv
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

WARMUP = 3
REPS = 20
FLUSH_BYTES = 256 * 1024 * 1024

CSV_COLUMNS = [
    "op", "family", "dtype", "shape", "params_json", "held_out", "kernel_index",
    "kernel_name", "grid", "block", "regs", "smem",
    "duration_us_median", "duration_us_min", "duration_us_max",
    "op_kernel_time_us_median", "op_wall_us_median",
    # extra columns (after the requested ones)
    "activity", "aten_op", "blocks_per_sm", "warps_per_sm", "est_occupancy_pct",
    "n_reps", "op_gpu_span_us_median",
]

GPU_CATS = ("kernel", "gpu_memset", "gpu_memcpy")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


# ============================================================================ trace parsing
# Pure python (no torch), so it can be tested without a GPU.

def _f(x):
    return float(x)


def _ranges(X, cat, name):
    r = [(_f(e["ts"]), _f(e["ts"]) + _f(e.get("dur", 0)), e.get("tid")) for e in X
         if e.get("cat") == cat and e.get("name") == name]
    r.sort()
    return r


def _find_range(starts, ranges, ts):
    i = bisect.bisect_right(starts, ts) - 1
    if i >= 0 and ts <= ranges[i][1]:
        return i
    return None


def assign_gpu_events(evs, name="gpusim_op"):
    """Returns (per_rep lists of GPU events, per_rep launch events dict corr->launch, method, info)."""
    X = [e for e in evs if e.get("ph") == "X" and "ts" in e]
    cpu_ranges = _ranges(X, "user_annotation", name)
    gpu_ranges = _ranges(X, "gpu_user_annotation", name)
    gpu = [e for e in X if e.get("cat") in GPU_CATS]
    launches = [e for e in X if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})]

    # method 1: correlation ids of launches inside the CPU range
    starts = [r[0] for r in cpu_ranges]
    corr2rep, corr2launch = {}, {}
    for e in launches:
        i = _find_range(starts, cpu_ranges, _f(e["ts"]))
        if i is not None:
            c = e["args"]["correlation"]
            corr2rep[c] = i
            corr2launch[c] = e
    per_rep_c = [[] for _ in cpu_ranges]
    for g in gpu:
        c = g.get("args", {}).get("correlation")
        if c is not None and c in corr2rep:
            per_rep_c[corr2rep[c]].append(g)

    # method 2: GPU timeline annotation ranges
    gstarts = [r[0] for r in gpu_ranges]
    per_rep_g = [[] for _ in gpu_ranges]
    for g in gpu:
        i = _find_range(gstarts, gpu_ranges, _f(g["ts"]))
        if i is not None:
            per_rep_g[i].append(g)

    for lst in per_rep_c + per_rep_g:
        lst.sort(key=lambda e: _f(e["ts"]))
    cnt_c = [len(x) for x in per_rep_c]
    cnt_g = [len(x) for x in per_rep_g]
    info = {"n_cpu_ranges": len(cpu_ranges), "n_gpu_ranges": len(gpu_ranges),
            "counts_correlation": cnt_c, "counts_gpu_annotation": cnt_g,
            "methods_agree": cnt_c == cnt_g}
    if sum(cnt_c) > 0:
        return per_rep_c, corr2launch, "correlation", info
    return per_rep_g, corr2launch, "gpu_annotation", info


def innermost_cpu_op(cpu_ops, launch):
    """Name of the innermost cpu_op (same thread) that contains the launch call."""
    if launch is None:
        return ""
    ts = _f(launch["ts"])
    best = None
    for e in cpu_ops:
        if e.get("tid") != launch.get("tid"):
            continue
        s = _f(e["ts"])
        d = _f(e.get("dur", 0))
        if s <= ts <= s + d and (best is None or d < best[0]):
            best = (d, e.get("name", ""))
    return best[1] if best else ""


def _dims(v):
    if isinstance(v, (list, tuple)):
        return "x".join(str(int(a)) for a in v)
    return "" if v is None else str(v)


def summarize_trace(evs):
    """Per-op summary from a list of Chrome trace events."""
    per_rep, corr2launch, method, info = assign_gpu_events(evs)
    X = [e for e in evs if e.get("ph") == "X" and "ts" in e]
    cpu_ops = [e for e in X if e.get("cat") == "cpu_op"]
    reps_all = [r for r in per_rep if r]
    if not reps_all:
        return {"error": "no GPU activity found inside gpusim_op ranges", "assign": info,
                "assign_method": method}
    seqs = [tuple(e.get("name", "") for e in r) for r in per_rep]
    # modal launch sequence; keep only repetitions that match it
    modal = max(set(seqs), key=lambda s: (seqs.count(s), len(s)))
    keep = [r for r, s in zip(per_rep, seqs) if s == modal and len(s) > 0]
    n = len(modal)
    kernels = []
    first = keep[0]
    for i in range(n):
        durs = [_f(r[i].get("dur", 0)) for r in keep]
        e = first[i]
        a = e.get("args", {})
        launch = corr2launch.get(a.get("correlation"))
        smem = a.get("shared memory")
        kernels.append({
            "index": i,
            "name": e.get("name", ""),
            "activity": e.get("cat", ""),
            "grid": a.get("grid"),
            "block": a.get("block"),
            "regs": a.get("registers per thread"),
            "smem": smem,
            "blocks_per_sm": a.get("blocks per SM"),
            "warps_per_sm": a.get("warps per SM"),
            "est_occupancy_pct": a.get("est. achieved occupancy %"),
            "stream": a.get("stream"),
            "launch_api": launch.get("name") if launch else None,
            "aten_op": innermost_cpu_op(cpu_ops, launch),
            "duration_us_median": statistics.median(durs),
            "duration_us_min": min(durs),
            "duration_us_max": max(durs),
            "duration_us_all": durs,
        })
    sums = [sum(_f(e.get("dur", 0)) for e in r) for r in keep]
    spans = [max(_f(e["ts"]) + _f(e.get("dur", 0)) for e in r) - min(_f(e["ts"]) for e in r) for r in keep]
    # aten ops called directly or indirectly in the first kept repetition (names + input dims)
    aten = []
    X_ann = _ranges(X, "user_annotation", "gpusim_op")
    if X_ann:
        s0, e0, tid0 = X_ann[0]
        for e in sorted(cpu_ops, key=lambda e: _f(e["ts"])):
            if s0 <= _f(e["ts"]) <= e0 and e.get("tid") == tid0:
                aten.append({"name": e.get("name"), "input_dims": e.get("args", {}).get("Input Dims"),
                             "input_types": e.get("args", {}).get("Input type")})
    return {
        "assign_method": method,
        "assign": info,
        "n_reps_used": len(keep),
        "n_reps_profiled": len(per_rep),
        "n_kernels": n,
        "kernels": kernels,
        "kernel_time_us_median": statistics.median(sums),
        "kernel_time_us_min": min(sums),
        "kernel_time_us_max": max(sums),
        "kernel_time_us_all": sums,
        "gpu_span_us_median": statistics.median(spans),
        "aten_ops_rep0": aten[:64],
    }


def flush_kernels(evs):
    """GPU activity launched inside gpusim_flush ranges (for the debug print)."""
    X = [e for e in evs if e.get("ph") == "X" and "ts" in e]
    rng = _ranges(X, "user_annotation", "gpusim_flush")
    starts = [r[0] for r in rng]
    corr = set()
    for e in X:
        if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {}):
            if _find_range(starts, rng, _f(e["ts"])) is not None:
                corr.add(e["args"]["correlation"])
    return [e for e in X if e.get("cat") in GPU_CATS and e.get("args", {}).get("correlation") in corr]


# ============================================================================ op lists
# Each list is an op's list of shapes; held_out = index in that list is odd.

MATMUL = [  # (M, N, K, dtype)
    (2048, 2048, 2048, "bf16"), (4096, 4096, 4096, "bf16"), (8192, 8192, 8192, "bf16"),
    (1, 4096, 4096, "bf16"), (16, 4096, 4096, "bf16"), (64, 4096, 4096, "bf16"),
    (128, 11008, 4096, "bf16"), (1024, 1024, 1024, "bf16"), (512, 512, 512, "bf16"),
    (256, 256, 256, "bf16"), (4096, 14336, 4096, "bf16"), (1, 128256, 4096, "bf16"),
    (8, 1024, 16384, "bf16"), (32, 32, 4096, "bf16"), (3000, 3000, 3000, "bf16"),
    (16, 14336, 4096, "bf16"),
    (2048, 2048, 2048, "fp16"),
    (1024, 1024, 1024, "fp32"), (2048, 2048, 2048, "fp32"),
    (2048, 2048, 2048, "tf32"), (4096, 4096, 4096, "tf32"),
]
LINEAR = [  # (M, N, K, bias)
    (1, 11008, 4096, 0), (16, 4096, 4096, 0), (16, 14336, 4096, 0), (16, 4096, 14336, 0),
    (1, 4096, 4096, 0), (128, 4096, 4096, 0), (2048, 4096, 4096, 0), (16, 6144, 4096, 0),
    (16, 128256, 4096, 0), (4, 1536, 1536, 0), (1, 1536, 8960, 0),
    (2048, 4096, 4096, 1),
]
SDPA = [(16, h, 512, 64, 0, "fp16") for h in range(8, 129, 8)] + [
    (8, 16, 1024, 64, 1, "bf16"), (1, 32, 2048, 128, 1, "bf16"), (4, 32, 1024, 128, 0, "bf16"),
    (2, 8, 4096, 128, 1, "bf16"), (16, 12, 256, 64, 1, "bf16"), (1, 16, 512, 64, 0, "bf16"),
]
SDPA_DECODE = [  # (B, Hq, Hkv, L, D), bf16
    (4, 32, 8, 4096, 128), (16, 32, 8, 1024, 128), (1, 32, 8, 8192, 128), (1, 32, 32, 1024, 128),
    (64, 32, 8, 512, 128), (8, 10, 10, 1024, 128), (1, 12, 2, 2048, 128),
]
NAIVE_ATTN = [  # (B, H, S, D, causal), fp32
    (4, 12, 512, 64, 0), (8, 12, 256, 64, 0), (8, 16, 1024, 64, 0), (1, 16, 2048, 64, 0),
    (8, 12, 4096, 64, 0), (4, 12, 512, 64, 1), (8, 16, 1024, 64, 1),
]
EW_SIZES = [1024, 65536, 1048576, 16777216, 134217728]
EW_OPS = [("add", "bf16"), ("mul", "bf16"), ("silu", "bf16"), ("gelu", "bf16"), ("add", "fp32")]
CAST_SIZES = [65536, 1048576, 16777216, 134217728]
NORM_SHAPES = [(1, 4096), (16, 4096), (2048, 4096), (4096, 4096), (8192, 1024), (16384, 8192),
               (512, 50257), (64, 32000)]
SOFTMAX = [(r, c, "bf16") for r, c in NORM_SHAPES] + [(4096, 4096, "fp32"), (32768, 512, "fp32")]


def build_instances():
    import torch
    import torch.nn.functional as F
    DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32}
    dev = "cuda"

    def rn(*shape, dt):
        return torch.randn(*shape, device=dev, dtype=dt)

    inst = []

    def add(op, family, dtype, shape, params, idx, setup, precision="highest"):
        inst.append({"op": op, "family": family, "dtype": dtype, "shape": shape, "params": params,
                     "list_index": idx, "held_out": idx % 2 == 1, "setup": setup,
                     "fp32_matmul_precision": precision})

    for i, (M, N, K, dt) in enumerate(MATMUL):
        def s(M=M, N=N, K=K, dt=dt):
            A, B = rn(M, K, dt=DT[dt]), rn(K, N, dt=DT[dt])
            return lambda: torch.matmul(A, B)
        add("matmul", "matmul", dt, f"M={M} N={N} K={K}", {"M": M, "N": N, "K": K}, i, s,
            "high" if dt == "tf32" else "highest")

    for i, (M, N, K, b) in enumerate(LINEAR):
        def s(M=M, N=N, K=K, b=b):
            x, W = rn(M, K, dt=torch.bfloat16), rn(N, K, dt=torch.bfloat16)
            bias = rn(N, dt=torch.bfloat16) if b else None
            return lambda: F.linear(x, W, bias)
        add("linear", "linear", "bf16", f"M={M} N={N} K={K} bias={b}", {"M": M, "N": N, "K": K, "bias": b}, i, s)

    for i, (B, H, S, D, c, dt) in enumerate(SDPA):
        def s(B=B, H=H, S=S, D=D, c=c, dt=dt):
            q, k, v = (rn(B, H, S, D, dt=DT[dt]) for _ in range(3))
            return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(c))
        add("sdpa", "sdpa", dt, f"B={B} H={H} S={S} D={D} causal={c}",
            {"B": B, "H": H, "S": S, "D": D, "causal": c}, i, s)

    # The same prefill shapes with the backend forced (PyTorch's default choice is measured above).
    try:
        from torch.nn.attention import sdpa_kernel, SDPBackend
        have_ctx = True
    except Exception:  # noqa
        have_ctx = False

    def forced(backend_name, f):
        def g():
            with sdpa_kernel(getattr(SDPBackend, backend_name)):
                return f()
        return g

    for opn, bk in (("sdpa_flash", "FLASH_ATTENTION"), ("sdpa_efficient", "EFFICIENT_ATTENTION")):
        for i, (B, H, S, D, c, dt) in enumerate(SDPA):
            def s(B=B, H=H, S=S, D=D, c=c, dt=dt, bk=bk):
                q, k, v = (rn(B, H, S, D, dt=DT[dt]) for _ in range(3))
                if not have_ctx:
                    raise RuntimeError("torch.nn.attention.sdpa_kernel not available")
                return forced(bk, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(c)))
            add(opn, "sdpa", dt, f"B={B} H={H} S={S} D={D} causal={c}",
                {"B": B, "H": H, "S": S, "D": D, "causal": c, "backend": bk}, i, s)

    for i, (B, Hq, Hkv, L, D) in enumerate(SDPA_DECODE):
        p = {"B": B, "Hq": Hq, "Hkv": Hkv, "L": L, "D": D}
        shp = f"B={B} Hq={Hq} Hkv={Hkv} L={L} D={D}"

        def s(B=B, Hq=Hq, Hkv=Hkv, L=L, D=D):
            q = rn(B, Hq, 1, D, dt=torch.bfloat16)
            k, v = rn(B, Hkv, L, D, dt=torch.bfloat16), rn(B, Hkv, L, D, dt=torch.bfloat16)
            if Hq != Hkv:
                return lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            return lambda: F.scaled_dot_product_attention(q, k, v)
        add("sdpa_decode", "sdpa_decode", "bf16", shp, p, i, s)
        if Hq != Hkv:
            def s2(B=B, Hq=Hq, Hkv=Hkv, L=L, D=D):
                q = rn(B, Hq, 1, D, dt=torch.bfloat16)
                k, v = rn(B, Hkv, L, D, dt=torch.bfloat16), rn(B, Hkv, L, D, dt=torch.bfloat16)
                k = k.repeat_interleave(Hq // Hkv, dim=1).contiguous()
                v = v.repeat_interleave(Hq // Hkv, dim=1).contiguous()
                return lambda: F.scaled_dot_product_attention(q, k, v)
            add("sdpa_decode_repkv", "sdpa_decode", "bf16", shp, dict(p, repeat_kv=1), i, s2)

    for i, (B, Hq, Hkv, L, D) in enumerate(SDPA_DECODE):  # flash backend forced
        p = {"B": B, "Hq": Hq, "Hkv": Hkv, "L": L, "D": D, "backend": "FLASH_ATTENTION"}
        shp = f"B={B} Hq={Hq} Hkv={Hkv} L={L} D={D}"

        def s(B=B, Hq=Hq, Hkv=Hkv, L=L, D=D):
            q = rn(B, Hq, 1, D, dt=torch.bfloat16)
            k, v = rn(B, Hkv, L, D, dt=torch.bfloat16), rn(B, Hkv, L, D, dt=torch.bfloat16)
            if not have_ctx:
                raise RuntimeError("torch.nn.attention.sdpa_kernel not available")
            if Hq != Hkv:
                return forced("FLASH_ATTENTION", lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
            return forced("FLASH_ATTENTION", lambda: F.scaled_dot_product_attention(q, k, v))
        add("sdpa_decode_flash", "sdpa_decode", "bf16", shp, p, i, s)
        if Hq != Hkv:
            def s2(B=B, Hq=Hq, Hkv=Hkv, L=L, D=D):
                q = rn(B, Hq, 1, D, dt=torch.bfloat16)
                k, v = rn(B, Hkv, L, D, dt=torch.bfloat16), rn(B, Hkv, L, D, dt=torch.bfloat16)
                k = k.repeat_interleave(Hq // Hkv, dim=1).contiguous()
                v = v.repeat_interleave(Hq // Hkv, dim=1).contiguous()
                return forced("FLASH_ATTENTION", lambda: F.scaled_dot_product_attention(q, k, v))
            add("sdpa_decode_repkv_flash", "sdpa_decode", "bf16", shp, dict(p, repeat_kv=1), i, s2)

    for i, (B, H, S, D, c) in enumerate(NAIVE_ATTN):
        def s(B=B, H=H, S=S, D=D, c=c):
            q, k, v = (rn(B, H, S, D, dt=torch.float32) for _ in range(3))
            scale = 1.0 / math.sqrt(D)
            mask = torch.ones(S, S, device=dev, dtype=torch.bool).triu(1) if c else None

            def fn():
                sc = torch.matmul(q, k.transpose(-2, -1)) * scale
                if mask is not None:
                    sc = sc.masked_fill(mask, float("-inf"))
                p_ = torch.softmax(sc, dim=-1)
                return torch.matmul(p_, v)
            return fn
        add("naive_attention", "naive_attention", "fp32", f"B={B} H={H} S={S} D={D} causal={c}",
            {"B": B, "H": H, "S": S, "D": D, "causal": c}, i, s)

    for opn, dt in EW_OPS:
        for i, n in enumerate(EW_SIZES):
            def s(opn=opn, dt=dt, n=n):
                a = rn(n, dt=DT[dt])
                if opn == "add":
                    b = rn(n, dt=DT[dt])
                    return lambda: torch.add(a, b)
                if opn == "mul":
                    b = rn(n, dt=DT[dt])
                    return lambda: torch.mul(a, b)
                if opn == "silu":
                    return lambda: F.silu(a)
                return lambda: F.gelu(a)
            add(opn, "elementwise", dt, f"n={n}", {"n": n}, i, s)

    for opn, src, dst in (("cast_to_bf16", torch.float32, "fp32->bf16"), ("cast_to_fp32", torch.bfloat16, "bf16->fp32")):
        for i, n in enumerate(CAST_SIZES):
            def s(opn=opn, src=src, n=n):
                x = rn(n, dt=src)
                if opn == "cast_to_bf16":
                    return lambda: x.to(torch.bfloat16)
                return lambda: x.float()
            add(opn, "cast", dst, f"n={n}", {"n": n}, i, s)

    for i, (R, C) in enumerate(NORM_SHAPES):
        def s(R=R, C=C):
            x, w, b = rn(R, C, dt=torch.bfloat16), rn(C, dt=torch.bfloat16), rn(C, dt=torch.bfloat16)
            return lambda: F.layer_norm(x, (C,), w, b)
        add("layer_norm", "layer_norm", "bf16", f"R={R} C={C}", {"R": R, "C": C}, i, s)
    for i, (R, C) in enumerate(NORM_SHAPES):
        def s(R=R, C=C):
            x, w = rn(R, C, dt=torch.bfloat16), rn(C, dt=torch.bfloat16)
            return lambda: F.rms_norm(x, (C,), w)
        add("rms_norm", "rms_norm", "bf16", f"R={R} C={C}", {"R": R, "C": C}, i, s)
    for i, (R, C, dt) in enumerate(SOFTMAX):
        def s(R=R, C=C, dt=dt):
            x = rn(R, C, dt=DT[dt])
            return lambda: torch.softmax(x, -1)
        add("softmax", "softmax", dt, f"R={R} C={C}", {"R": R, "C": C}, i, s)
    return inst


# ============================================================================ measurement

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa
        return f"ERROR {e!r}"


def cublas_version():
    import ctypes
    try:
        path = None
        with open("/proc/self/maps") as f:
            for line in f:
                if "libcublas.so" in line and "Lt" not in line:
                    path = line.split()[-1]
                    break
        if not path:
            return None
        lib = ctypes.CDLL(path)
        vals = []
        for t in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            v = ctypes.c_int(-1)
            lib.cublasGetProperty(t, ctypes.byref(v))
            vals.append(v.value)
        return {"version": ".".join(str(x) for x in vals), "library": path}
    except Exception as e:  # noqa
        return {"error": repr(e)}


def provenance(args):
    import torch
    p = {
        "script": "validation/measure/op_kernels.py",
        "gpu_tag": args.gpu,
        "date_utc_start": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device_name": torch.cuda.get_device_name(0),
        "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
        "l2_bytes": getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None),
        "nvidia_smi": sh("nvidia-smi --query-gpu=name,driver_version,persistence_mode,clocks.sm,clocks.max.sm,"
                         "clocks.mem,clocks.max.mem,power.limit,temperature.gpu,ecc.mode.current --format=csv"),
        "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader"),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "host_kernel": platform.release(),
    }
    try:
        p["torch_compiled_cuda"] = torch._C._cuda_getCompiledVersion()
    except Exception as e:  # noqa
        p["torch_compiled_cuda"] = repr(e)
    try:
        from importlib import metadata
        p["pip_nvidia_cublas"] = metadata.version("nvidia-cublas")
    except Exception as e:  # noqa
        p["pip_nvidia_cublas"] = repr(e)
    try:
        p["triton"] = __import__("triton").__version__
    except Exception:  # noqa
        pass
    for k in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled"):
        try:
            p["sdp_" + k] = bool(getattr(torch.backends.cuda, k)())
        except Exception:  # noqa
            pass
    try:
        p["allow_bf16_reduced_precision_reduction"] = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        p["allow_fp16_reduced_precision_reduction"] = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    except Exception:  # noqa
        pass
    return p


def set_prec(p):
    """fp32 matmul precision: 'highest' (tf32 off) or 'high' (tf32 on)."""
    import torch
    try:
        torch.set_float32_matmul_precision(p)
    except Exception:  # noqa
        torch.backends.cuda.matmul.allow_tf32 = (p != "highest")


def measure(fn, flush, trace_path):
    import torch
    from torch.profiler import profile, ProfilerActivity, record_function
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    # unprofiled wall time (CUDA events, host launch cost included)
    walls = []
    for _ in range(REPS):
        flush()
        torch.cuda.synchronize()
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        walls.append(e0.elapsed_time(e1) * 1000.0)
    # profiled repetitions
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(REPS):
            with record_function("gpusim_flush"):
                flush()
            torch.cuda.synchronize()
            with record_function("gpusim_op"):
                fn()
            torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    with open(trace_path) as f:
        tr = json.load(f)
    evs = tr["traceEvents"] if isinstance(tr, dict) else tr
    res = summarize_trace(evs)
    res["wall_us_median"] = statistics.median(walls)
    res["wall_us_all"] = walls
    return res, evs


def csv_rows(r):
    rows = []
    if "kernels" not in r:
        return rows
    for k in r["kernels"]:
        rows.append({
            "op": r["op"], "family": r["family"], "dtype": r["dtype"], "shape": r["shape"],
            "params_json": json.dumps(r["params"], separators=(",", ":"), sort_keys=True),
            "held_out": int(r["held_out"]), "kernel_index": k["index"], "kernel_name": k["name"],
            "grid": _dims(k["grid"]), "block": _dims(k["block"]),
            "regs": "" if k["regs"] is None else k["regs"], "smem": "" if k["smem"] is None else k["smem"],
            "duration_us_median": f"{k['duration_us_median']:.3f}", "duration_us_min": f"{k['duration_us_min']:.3f}",
            "duration_us_max": f"{k['duration_us_max']:.3f}",
            "op_kernel_time_us_median": f"{r['kernel_time_us_median']:.3f}",
            "op_wall_us_median": f"{r['wall_us_median']:.3f}",
            "activity": k["activity"], "aten_op": k["aten_op"],
            "blocks_per_sm": "" if k["blocks_per_sm"] is None else k["blocks_per_sm"],
            "warps_per_sm": "" if k["warps_per_sm"] is None else k["warps_per_sm"],
            "est_occupancy_pct": "" if k["est_occupancy_pct"] is None else k["est_occupancy_pct"],
            "n_reps": r["n_reps_used"], "op_gpu_span_us_median": f"{r['gpu_span_us_median']:.3f}",
        })
    return rows


def short(name, n=60):
    s = re.sub(r"<.*", "", name.replace("void ", ""))
    s = s.split("(")[0]
    return s[-n:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/op_kernels_out"))
    ap.add_argument("--held-out-only", action="store_true")
    ap.add_argument("--only", default=None, help="regex on 'op shape dtype'")
    ap.add_argument("--deadline-s", type=float, default=480.0)
    args = ap.parse_args()
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)

    import torch
    torch.manual_seed(0)
    set_prec("highest")
    insts = build_instances()
    if args.held_out_only:
        insts = [i for i in insts if i["held_out"]]
    if args.only:
        rx = re.compile(args.only)
        insts = [i for i in insts if rx.search(f"{i['op']} {i['shape']} {i['dtype']}")]

    prov = provenance(args)
    print(json.dumps(prov, indent=1, default=str), flush=True)
    method = {"warmup": WARMUP, "repetitions": REPS, "flush_bytes": FLUSH_BYTES,
              "flush": "buf.zero_() on a 256 MiB int32 CUDA tensor inside record_function('gpusim_flush'), "
                       "then torch.cuda.synchronize(), before every repetition",
              "kernel_assignment": "GPU activity whose launching runtime/driver call (correlation id) lies inside "
                                   "record_function('gpusim_op'); cross-checked with gpu_user_annotation ranges",
              "profiler": "torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True), Chrome trace parsed",
              "statistic": "median over repetitions (min/max also given)",
              "kernel_time_us": "median over repetitions of the sum of the op's GPU activity durations",
              "gpu_span_us": "median over repetitions of last activity end - first activity start",
              "wall_us": "median of CUDA-event time around the op in a separate unprofiled loop "
                         "(flush, synchronize, event, op, event): includes host launch cost; reference only",
              "data": "torch.randn inputs (never zeros); inference_mode",
              "fp32_matmul": "torch.set_float32_matmul_precision('highest') except dtype tf32 ('high')",
              "held_out_rule": "held_out = index of the shape in its op list is odd (see OP LISTS in the script)",
              "sdpa_backend": "ops sdpa, sdpa_decode, sdpa_decode_repkv: PyTorch default selection (no backend "
                              "forced); ops *_flash / *_efficient: torch.nn.attention.sdpa_kernel(SDPBackend.X) "
                              "around the call (params_json 'backend')"}
    doc = {"provenance": prov, "method": method, "ops": [], "errors": []}
    json_path = os.path.join(args.out, f"ops_{args.gpu}.json")
    csv_path = os.path.join(args.out, f"ops_{args.gpu}.csv")

    def write_json():
        doc["provenance"]["date_utc_end"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(json_path, "w") as f:
            json.dump(doc, f, indent=1, default=str)

    csvf = open(csv_path, "w", newline="")
    cw = csv.DictWriter(csvf, fieldnames=CSV_COLUMNS)
    cw.writeheader()
    csvf.flush()

    flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def flush():
        flush_buf.zero_()

    tmpdir = tempfile.mkdtemp(prefix="op_kernels_")
    print(f"{len(insts)} op instances", flush=True)
    first = True
    for n_i, ins in enumerate(insts):
        if time.time() - t_start > args.deadline_s:
            doc["errors"].append({"op": ins["op"], "shape": ins["shape"], "error": "skipped: deadline"})
            print(f"[SKIP deadline] {ins['op']} {ins['shape']}", flush=True)
            continue
        t0 = time.time()
        r = {k: ins[k] for k in ("op", "family", "dtype", "shape", "params", "list_index", "held_out",
                                 "fp32_matmul_precision")}
        try:
            set_prec(ins["fp32_matmul_precision"])
            with torch.inference_mode():
                fn = ins["setup"]()
                tp = os.path.join(tmpdir, "trace.json")
                res, evs = measure(fn, flush, tp)
            r.update(res)
            if "error" in res:
                raise RuntimeError(res["error"])
            if first:
                first = False
                try:
                    import shutil
                    shutil.copy(tp, os.path.join(args.out, f"trace_example_{args.gpu}.json"))
                except Exception:  # noqa
                    pass
                fk = flush_kernels(evs)
                print("=== assignment check on first instance:", r["op"], r["shape"], json.dumps(res["assign"]))
                print("    flush activity names:", sorted({e.get("name") for e in fk}), "count", len(fk))
                for k in res["kernels"]:
                    print(f"    op kernel {k['index']}: {k['name'][:200]} grid={k['grid']} block={k['block']} "
                          f"regs={k['regs']} smem={k['smem']} med={k['duration_us_median']:.2f}us aten={k['aten_op']}")
            elif not res["assign"]["methods_agree"]:
                print(f"[note] assignment methods disagree for {r['op']} {r['shape']}: "
                      f"{res['assign']['counts_correlation'][:4]} vs {res['assign']['counts_gpu_annotation'][:4]}")
            for row in csv_rows(r):
                cw.writerow(row)
            csvf.flush()
            print(f"[{n_i + 1}/{len(insts)}] {r['op']:<18} {r['dtype']:<10} {r['shape']:<34} n={r['n_kernels']} "
                  f"kt={r['kernel_time_us_median']:.2f}us wall={r['wall_us_median']:.2f}us reps={r['n_reps_used']} "
                  f"({time.time() - t0:.1f}s) {short(r['kernels'][0]['name'], 50)}", flush=True)
        except Exception as e:  # keep going
            r["error"] = repr(e)
            r["traceback"] = traceback.format_exc()
            doc["errors"].append({"op": ins["op"], "shape": ins["shape"], "error": repr(e)})
            print(f"[ERROR] {ins['op']} {ins['shape']}: {e!r}", flush=True)
        finally:
            fn = None
            set_prec("highest")
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        doc["ops"].append(r)
        write_json()
    csvf.close()
    doc["provenance"]["cublas"] = cublas_version()
    doc["provenance"]["nvidia_smi_end"] = sh("nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,"
                                             "power.draw --format=csv")
    write_json()

    # compact table
    print("\n=== SUMMARY (kt = median sum of kernel us; H = held out) ===")
    print(f"{'op':<16} {'dt':<4} {'shape':<30} H n {'kt_us':>9} {'wall_us':>8}")
    for r in doc["ops"]:
        if "kernels" not in r:
            print(f"{r['op'][:14]:<14} {r['dtype'][:4]:<4} {r['shape'][:30]:<30} ERROR {r.get('error', '')[:50]}")
            continue
        shp = r["shape"].replace(" ", ",")
        print(f"{r['op'][:16]:<16} {r['dtype'][:4]:<4} {shp[:30]:<30} {int(r['held_out'])} {r['n_kernels']} "
              f"{r['kernel_time_us_median']:9.2f} {r['wall_us_median']:8.1f}")
    print(f"errors: {len(doc['errors'])}; total {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
