#!/usr/bin/env python3
"""small_gemm_probe.py: which cuBLAS kernel runs the products of very few rows, and how fast.

Calibration data for issue 16's leads on cuBLAS's small kernels (the twenty-third round's note):
  * 16-bit NN products of 2-6 rows whose rows allow only 2- or 4-element loads, deep K: gemmSN on
    one CTA, the wmma 32x32 kernel unsplit, or cutlass_80's split-K (5x26x6232 ran gemmSN in
    110 us, 2x12x9468 the wmma kernel in 150, 2x4x3832 split 16 ways);
  * fp32 one-row matmuls (1xNxK): which gemvx block (4x32, 8x32, 32x2, 64x2, 32x16, 64x8) for
    which N and K;
  * 16-bit one-row matmuls over W's columns (1xNxK, the strided dot kernel) for N up to 384.
A fixed grid, every instance in one calibration split (none held out); measured as
op_kernels_set2.py measures (3 warm-ups, 20 profiled repetitions, L2 flushed before each,
median), writing $OUT/small_gemm_<gpu>.json and .csv with the kernels' names, grids and blocks.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/small_gemm_probe.py --gpu h200 --out $OUT
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


SPLIT = "probe_small_gemm"

# Few-row 16-bit NN products whose N and K are even but not multiples of 8 (2- or 4-element loads).
FEW_ROWS = [(m, n, k, "bf16")
            for m in (2, 3, 4, 5, 6)
            for n in (4, 12, 26, 52, 100, 172, 228, 402)
            for k in (412, 1004, 2002, 4012, 9468)]
# fp32 one-row matmuls: gemvx's blocks.
FP32_ROWS = [(1, n, k, "fp32")
             for n in (9, 31, 63, 250, 502, 1002, 2002, 3002, 6002)
             for k in (102, 298, 502, 802, 1202, 2002, 5002)]
# 16-bit one-row matmuls over W's columns: the strided dot kernel.
DOT_ROWS = [(1, n, k, "bf16")
            for n in (16, 32, 64, 128, 256, 384)
            for k in (2048, 4096, 8192, 16384)]


def groups():
    return [(SPLIT, ("matmul",), {"MATMUL": FEW_ROWS + FP32_ROWS + DOT_ROWS})]


def main():
    import op_kernels_set2 as s2  # the measuring loop (op_kernels.py's, through set 2's groups)
    s2.run_probe(SPLIT, "small_gemm", "validation/measure/small_gemm_probe.py", groups(),
                 "a fixed grid of few-row products")


if __name__ == "__main__":
    main()
