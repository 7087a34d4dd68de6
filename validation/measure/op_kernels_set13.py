#!/usr/bin/env python3
"""op_kernels_set13.py: a tenth fresh random op set for issue 16's final evaluation.

Set 12 (seed 25) was compared once after the cuDNN decode refit; set 13 is drawn the same way
(op_kernels_set3.draw) with seed 26, every instance held out. It is measured after issue 16's
eighth round's last change (2026-11-26, 22:20 UTC), stored unread, and compared once, with that
final model.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set13.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops13_<gpu>.json and $OUT/ops13_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(26, "ops13", "holdout13", "calibration13_unused", "validation/measure/op_kernels_set13.py")
