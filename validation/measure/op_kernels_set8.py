#!/usr/bin/env python3
"""op_kernels_set8.py: a fifth fresh random op set for issue 16's final evaluation.

Set 7 (seed 20) was compared once after issue 16's third round; set 8 is drawn the same way
(op_kernels_set3.draw) with seed 21, every instance held out, measured after the shallow align1
rules (models/gemm_model.cpp, with_shallow_split) were written from sets 3-7 and before it is
compared, once.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set8.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops8_<gpu>.json and $OUT/ops8_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(21, "ops8", "holdout8", "calibration8_unused", "validation/measure/op_kernels_set8.py")
