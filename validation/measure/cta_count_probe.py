#!/usr/bin/env python3
"""cta_count_probe.py: how a kernel's time grows with its CTA count inside one wave.

Issue 16's fourteenth round found the GEMM families' residuals growing with the number of CTAs in
one-wave launches (nvjet about 2.5 ns per CTA on the H100 and 4.4 on the H200, sm80_xmma, wmma,
gemmSN alike) where elementwise, norm and softmax kernels stay flat. This probe measures series of
products whose every CTA does the same work, so that only the CTA count changes:

  nvjet_k64     bf16 M = 64 c, N = 16, K = 64     (one K step per tile)
  nvjet_k1024   bf16 M = 64 c, N = 16, K = 1024   (16 steps)
  nvjet_n       bf16 M = 16, N = 64 c, K = 64     (the CTAs along N)
  xmma_fp32     fp32 M = 32 c, N = 32, K = 16     (sm80_xmma's 32x32 SIMT tile, no clusters)
  add_bf16      bf16 add of 1024 c elements       (one elementwise CTA per 1024)

c runs 1..264. Measured exactly like op_kernels.py (3 warm-ups, 20 profiled repetitions, L2
flushed before each, median), through op_kernels_set2.py's driver; writes $OUT/cta_probe_<gpu>.json
and .csv (split `probe`, held_out 0: a mechanism probe, not an accuracy set).

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/cta_count_probe.py --gpu h100 --out $OUT
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set2", os.path.join(_HERE, "op_kernels_set2.py"))
s2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s2)

COUNTS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 80, 96, 112, 128, 132, 160, 200, 264]
SPLIT = "probe"


def groups():
    mm = []
    for c in COUNTS:
        mm += [(64 * c, 16, 64, "bf16"), (64 * c, 16, 1024, "bf16"), (16, 64 * c, 64, "bf16"),
               (32 * c, 32, 16, "fp32")]
    return [
        (SPLIT, ("matmul",), {"MATMUL": mm}),
        (SPLIT, ("add",), {"EW_OPS": [("add", "bf16")], "EW_SIZES": [1024 * c for c in COUNTS]}),
    ]


def main():
    s2.run_groups(groups(), SPLIT, "probe_unused", "cta_probe", "validation/measure/cta_count_probe.py",
                  "probe (held_out = 0): series of equal-work CTAs, 1..264 of them, to see how a "
                  "kernel's time grows with its CTA count (a mechanism probe)")


if __name__ == "__main__":
    main()
