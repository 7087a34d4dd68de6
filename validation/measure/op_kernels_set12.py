#!/usr/bin/env python3
"""op_kernels_set12.py: a ninth fresh random op set for issue 16's final evaluation.

Set 11 (seed 24) was compared once after issue 16's seventh round; set 12 is drawn the same way
(op_kernels_set3.draw) with seed 25, every instance held out. It is measured before issue 16's
eighth round (2026-11-26, 22:10 UTC) changes anything, stored unread, and compared once, after that round's
last change.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set12.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops12_<gpu>.json and $OUT/ops12_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(25, "ops12", "holdout12", "calibration12_unused", "validation/measure/op_kernels_set12.py")
