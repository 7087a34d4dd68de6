#!/usr/bin/env python3
"""flush_state_probe.py: does the state the L2 flush leaves behind change a kernel's time?

The op sets (op_kernels*.py) flush the L2 before every repetition by writing a 256 MiB buffer
(buf.zero_()), which leaves the L2 full of dirty lines. Kernels that stream their operands through
TMA (cuBLAS's skinny nvjet GEMMs) measure 15-25% slower than gpusim predicts after such a flush,
while elementwise ops match. This probe times a few ops, each right after one of four L2 states:

  dirty       buf.zero_() (as the op sets do), then the op
  dirty_idle  buf.zero_(), then a 2 ms GPU sleep (the L2 may write dirty lines back while idle)
  clean       buf.sum() over the same 256 MiB (the L2 full of clean lines of another buffer)
  warm        nothing (the op's own operands may still be resident from the previous repetition)

Each case: 5 warm-ups, then 30 repetitions, timed by CUDA events around the op alone (the state
is set up before the first event); the median is reported. The inputs are the same every time.

Usage (GPU machine, repository root):
  python3 validation/measure/flush_state_probe.py --out $OUT
Writes $OUT/flush_state_<gpu>.json.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_timing import FLUSH_BYTES, event_times_us  # noqa: E402

REPS = 30
WARMUP = 5
SLEEP_CYCLES = 4_000_000  # about 2 ms at the H100's clocks


def cases():
    dev, bf = "cuda", torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, device=dev, dtype=bf, generator=g)

    out = []
    # Skinny TMA GEMMs (nvjet), as in the op sets: weights streamed once.
    x, w = rnd(16, 1824), rnd(10720, 1824)
    out.append(("linear M=16 N=10720 K=1824", lambda: F.linear(x, w), 2 * 10720 * 1824))
    a, b = rnd(13312, 2544), rnd(2544, 16)
    out.append(("matmul M=13312 N=16 K=2544", lambda: a @ b, 2 * 13312 * 2544))
    x2, w2 = rnd(8416, 11792), rnd(16, 11792)
    out.append(("linear M=8416 N=16 K=11792", lambda: F.linear(x2, w2), 2 * 8416 * 11792))
    a3, b3 = rnd(16, 8032), rnd(8032, 2368)
    out.append(("matmul M=16 N=2368 K=8032", lambda: a3 @ b3, 2 * 8032 * 2368))
    # Streaming without TMA: elementwise, a read-only reduction, a row norm.
    p, q = rnd(20_000_000), rnd(20_000_000)
    out.append(("mul bf16 n=20M", lambda: p * q, 6 * 20_000_000))
    out.append(("sum bf16 n=20M", lambda: p.sum(), 2 * 20_000_000))
    r, rw = rnd(16384, 4096), torch.ones(4096, device=dev, dtype=bf)
    # Read-only sums of growing size: the extra time after a dirty flush should stop growing once
    # the kernel has evicted every dirty line the flush left.
    for n in (2_500_000, 5_000_000, 10_000_000, 40_000_000, 80_000_000, 160_000_000):
        t = rnd(n)
        out.append((f"sum bf16 n={n}", lambda t=t: t.sum(), 2 * n))
    out.append(("rms_norm 16384x4096", lambda: F.rms_norm(r, (4096,), rw), 4 * 16384 * 4096))
    # A compute-bound unaligned GEMM (cuBLAS's cutlass_80 align2 kernel).
    c1, c2 = rnd(3410, 5186), rnd(5186, 2246)
    out.append(("matmul M=3410 N=2246 K=5186", lambda: c1 @ c2, 2 * (3410 * 5186 + 5186 * 2246)))
    return out


def time_case(fn, setup):
    times = event_times_us(setup, fn, WARMUP, REPS)
    return statistics.median(times), min(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    name = torch.cuda.get_device_name(0)
    gpu = "h200" if "H200" in name else "h100"
    buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    states = {
        "dirty": lambda: buf.zero_(),
        "dirty_idle": lambda: (buf.zero_(), torch.cuda._sleep(SLEEP_CYCLES)),
        "clean": lambda: buf.sum(),
        "warm": lambda: None,
    }
    rows = []
    for label, fn, nbytes in cases():
        row = {"op": label, "bytes": nbytes}
        for s, setup in states.items():
            med, lo, hi = time_case(fn, setup)
            row[s] = {"median_us": med, "min_us": lo, "max_us": hi}
        rows.append(row)
        print(label, " ".join(f"{s}={row[s]['median_us']:.2f}" for s in states), flush=True)
    prov = {
        "device": name,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "script": "validation/measure/flush_state_probe.py",
        "method": f"CUDA events around the op alone, median of {REPS} after {WARMUP} warm-ups; "
                  f"flush buffer {FLUSH_BYTES} bytes; dirty_idle sleeps {SLEEP_CYCLES} cycles",
    }
    try:
        import subprocess
        prov["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    with open(os.path.join(args.out, f"flush_state_{gpu}.json"), "w") as f:
        json.dump({"provenance": prov, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
