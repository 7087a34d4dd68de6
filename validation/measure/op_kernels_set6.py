#!/usr/bin/env python3
"""op_kernels_set6.py: a third fresh random op set for issue 16's final evaluation.

Sets 4 and 5 (seeds 17 and 18) were each compared once and then looked at: their rows led to the
third round of model changes (docs/engine.md says which), so they are no longer clean tests. This
set is drawn the same way (op_kernels_set3.draw) with seed 19, every instance held out, measured
before the third round's changes, kept unread, and compared once after them.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set6.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops6_<gpu>.json and $OUT/ops6_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(19, "ops6", "holdout6", "calibration6_unused", "validation/measure/op_kernels_set6.py")
