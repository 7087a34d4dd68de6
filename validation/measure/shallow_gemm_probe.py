#!/usr/bin/env python3
"""shallow_gemm_probe.py: which cuBLAS kernel runs shallow and mid-depth unaligned products.

Calibration data for issue 16's twenty-fourth round's leads on cuBLAS's kernel choice:
  * bf16 products of single-element rows and K of 2-7 (cutlass_75's align1 kernels): one kernel
    writing bf16, or the split-K variant writing fp32 partials that splitKreduce_kernel sums, for
    which rows and columns (7x721x4 and 222x897x2 ran without the reduce, 219x215x4 and
    570x263x2 with it);
  * fp16 products of single-element rows and K of 362-926 (the sm_75 wmma kernel): unsplit, or
    split 4-8 ways, by tiles and K;
  * bf16 products of 4-byte rows and K of 2-14 (the wmma kernel or cutlass_80's s16816 tiles,
    their K tile and stages: "_64x3" or "_32x3").
A fixed grid, every instance in one calibration split (none held out); measured as
op_kernels_set2.py measures (3 warm-ups, 20 profiled repetitions, L2 flushed before each,
median), writing $OUT/shallow_gemm_<gpu>.json and .csv with the kernels' names, grids and blocks.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/shallow_gemm_probe.py --gpu h200 --out $OUT
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


SPLIT = "probe_shallow_gemm"

ROWS = (7, 16, 33, 100, 145, 222, 376, 500, 1000, 2000, 4000)
ODD_COLS = (3, 9, 51, 151, 259, 419, 721, 957, 1501, 3001)
# bf16 matmuls of single-element rows (odd N) and K of 2, 4 and 7.
ALIGN1_MATMUL = [(m, n, k, "bf16") for m in ROWS for n in ODD_COLS for k in (2, 4, 7)]
# bf16 F.linear of single-element rows (odd K), no bias.
ALIGN1_LINEAR = [(m, n, k, 0) for m in ROWS for n in ODD_COLS for k in (3, 5)]
# fp16 matmuls of single-element rows and mid-depth K (the sm_75 wmma kernel).
WMMA75 = [(m, n, k, "fp16")
          for m in (3, 15, 67, 163, 448, 734, 1542, 1883, 5486)
          for n in (5, 11, 49, 173, 385)
          for k in (362, 426, 560, 673, 820, 926)]
# bf16 matmuls of 4-byte rows (N = 2 mod 4, even K): wmma or the s16816 tiles.
ALIGN2 = [(m, n, k, "bf16")
          for m in (100, 400, 1000, 3000, 9000)
          for n in (326, 1302, 3002, 9002)
          for k in (2, 6, 14)]


def groups():
    return [(SPLIT, ("matmul",), {"MATMUL": ALIGN1_MATMUL + WMMA75 + ALIGN2}),
            (SPLIT, ("linear",), {"LINEAR": ALIGN1_LINEAR})]


def main():
    import op_kernels_set2 as s2  # the measuring loop (op_kernels.py's, through set 2's groups)
    s2.run_probe(SPLIT, "shallow_gemm", "validation/measure/shallow_gemm_probe.py", groups(),
                 "a fixed grid of shallow and mid-depth unaligned products")


if __name__ == "__main__":
    main()
