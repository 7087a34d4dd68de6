#!/usr/bin/env python3
"""op_kernels_set7.py: a fourth fresh random op set for issue 16's final evaluation.

Set 6 (seed 19) was compared once after issue 16's third round; two more changes were made after
it (from sets 3-5, docs/engine.md says which), so it no longer measures the final model. This set
is drawn the same way (op_kernels_set3.draw) with seed 20, every instance held out, measured
before it is compared once, after the last change of the session.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set7.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops7_<gpu>.json and $OUT/ops7_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(20, "ops7", "holdout7", "calibration7_unused", "validation/measure/op_kernels_set7.py")
