#!/usr/bin/env python3
"""op_kernels_set9.py: a sixth fresh random op set for issue 16's final evaluation.

Set 8 (seed 21) was compared once after issue 16's fourth round; set 9 is drawn the same way
(op_kernels_set3.draw) with seed 22, every instance held out. It is measured before issue 16's
fifth round (2026-11-26) changes anything, stored unread, and compared once, after that round's
last change.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set9.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops9_<gpu>.json and $OUT/ops9_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(22, "ops9", "holdout9", "calibration9_unused", "validation/measure/op_kernels_set9.py")
