#!/usr/bin/env python3
"""align1_split_probe.py: how cuBLAS splits K for bf16 products of single-element rows.

Calibration data for issue 16's next leads (the twenty-fourth round's note): on cutlass_75's
align1 kernels gpusim splits K more ways than cuBLAS in about 300 launches a chip of the op sets
(and fewer in 60), the largest bucket of per-op error left. A grid of bf16 matmuls whose N is odd
and F.linear products whose K is odd (single-element loads), rows 8-3000, columns 17-5001 and K
33-8101, so that the split counts (the grids' z) and the reduce kernels can be read against rows,
columns, tiles and depth. Every instance in one calibration split (none held out); measured as
op_kernels_set2.py measures (3 warm-ups, 20 profiled repetitions, L2 flushed before each,
median), writing $OUT/align1_split_<gpu>.json and .csv with the kernels' names, grids and blocks.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/align1_split_probe.py --gpu h200 --out $OUT
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


SPLIT = "probe_align1_split"

ROWS = (8, 24, 64, 150, 400, 1000, 3000)
COLS = (17, 101, 401, 1501, 5001)
DEPTHS = (33, 97, 301, 901, 2701, 8101)
MATMUL = [(m, n, k, "bf16") for m in ROWS for n in COLS for k in DEPTHS]
LINEAR = [(m, n, k, 0) for m in ROWS for n in COLS for k in DEPTHS]


def groups():
    return [(SPLIT, ("matmul",), {"MATMUL": MATMUL}),
            (SPLIT, ("linear",), {"LINEAR": LINEAR})]


def main():
    import op_kernels_set2 as s2  # the measuring loop (op_kernels.py's, through set 2's groups)
    s2.run_probe(SPLIT, "align1_split", "validation/measure/align1_split_probe.py", groups(),
                 "a fixed grid of bf16 single-element-row products of K 33-8101")


if __name__ == "__main__":
    main()
