#!/usr/bin/env python3
"""op_kernels_set5.py: a second fresh random op set for issue 16's final evaluation.

Set 4 (op_kernels_set4.py, seed 17) was evaluated once and then looked at: its worst rows led to
model changes (docs/validation.md says which), so it is no longer a clean test. This set is drawn
the same way (op_kernels_set3.draw) with seed 18, every instance held out, measured after the
last model change and compared once.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set5.py --gpu h100 --out $OUT
  options as op_kernels_set2.py: --only REGEX, --deadline-s N, --show-fresh, --list
Writes $OUT/ops5_<gpu>.json and $OUT/ops5_<gpu>.csv.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels_set4", os.path.join(_HERE, "op_kernels_set4.py"))
s4 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s4)

if __name__ == "__main__":
    s4.run(18, "ops5", "holdout5", "calibration5_unused", "validation/measure/op_kernels_set5.py")
