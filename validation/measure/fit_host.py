#!/usr/bin/env python3
"""fit_host.py: the host section of a hardware preset (host.model_kernel_issue,
host.forward_fixed) from one session's host characterization (host_costs.py's output).

The model (workloads/host_issue.h): an eager forward's host issues its first launch after
forward_fixed and every launch after model_kernel_issue more, so a forward the host bounds
takes forward_fixed + kernels x model_kernel_issue of host time. This fits that line (least
squares) to the measured host issue time (host_us: a synced start to forward's return) of the
calibration half of the families: the families at even positions of the sorted family list
(validation/host_suite.h holds the odd ones out). Kernel counts are the measured ones.

Usage: python3 validation/measure/fit_host.py validation/data/host_costs_h100.json
Prints the fit, the YAML lines for the preset, and the fit's error on both halves (host time).
Standard library only.
"""
import json
import sys


def line_fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def main(path):
    doc = json.load(open(path))
    rows = []
    for entry in doc["layers"]:
        for phase in ("decode", "prefill"):
            m = entry[phase]
            rows.append((entry["family"], phase, entry["layers"], m["kernels"], m["host_us"]))
    families = sorted({r[0] for r in rows})
    calibration = set(families[::2])
    cal = [r for r in rows if r[0] in calibration]
    fixed, per_kernel = line_fit([r[3] for r in cal], [r[4] for r in cal])
    prov = doc.get("provenance", {})
    print(f"{path}: {prov.get('device_name', '?')}, {prov.get('date_utc', '?')}")
    print(f"calibration families: {', '.join(sorted(calibration))}")
    print(f"host:\n  model_kernel_issue: {per_kernel:.1f}us\n  forward_fixed: {fixed:.0f}us")
    for name, part in (("calibration", cal), ("held-out", [r for r in rows if r[0] not in calibration])):
        errs = [abs(fixed + per_kernel * r[3] - r[4]) / r[4] * 100 for r in part]
        print(f"host time MAPE, {name}: {sum(errs) / len(errs):.1f}% ({len(part)} forwards)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
