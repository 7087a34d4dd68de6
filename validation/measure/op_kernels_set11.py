#!/usr/bin/env python3
"""op_kernels_set11.py: an eighth fresh random op set for issue 16's final evaluation.

Set 10 (seed 23) was compared once after issue 16's sixth round; set 11 is drawn the same way
(op_kernels_set3.draw) with seed 24, every instance held out. It is measured before issue 16's
seventh round (2026-11-26, 21:30 UTC) changes anything, stored unread, and compared once, after that round's
last change.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set11.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops11_<gpu>.json and $OUT/ops11_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(24, "ops11", "holdout11", "calibration11_unused", "validation/measure/op_kernels_set11.py")
