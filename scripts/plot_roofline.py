#!/usr/bin/env python3
"""Roofline plot for `gpusim report`: every simulated kernel at (arithmetic intensity,
achieved FLOP/s), coloured by bound class, under the DRAM roof and the compute roofs.

Reads the kernels CSV that gpusim writes (columns arithmetic_intensity, flops_per_s, bound)
and writes a PNG. Kernels without FLOPs (copies, memsets) have no place on a log-log roofline
and are left out. Standard library and matplotlib only (Agg backend: no display needed).

  plot_roofline.py --csv kernels.csv --out roofline.png --dram-bw 3.0e12 \
      --tensor-peak 7.9e14 --tensor-label "bf16 tensor" --fp32-peak 6.7e13 --title "..."
"""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

# Fixed colours per class, so plots compare across reports.
COLOURS = {
    "memory": "#1f77b4",
    "compute": "#d62728",
    "balanced": "#2ca02c",
    "latency": "#9467bd",
}


def read_points(path):
    points = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            ai = float(row["arithmetic_intensity"])
            fps = float(row["flops_per_s"])
            if ai > 0 and fps > 0:
                points.setdefault(row["bound"], []).append((ai, fps))
    return points


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dram-bw", type=float, required=True, help="bytes/s")
    p.add_argument("--tensor-peak", type=float, default=0.0, help="FLOP/s; 0 draws no tensor roof")
    p.add_argument("--tensor-label", default="tensor")
    p.add_argument("--fp32-peak", type=float, required=True, help="FLOP/s")
    p.add_argument("--title", default="Roofline")
    a = p.parse_args()

    points = read_points(a.csv)
    all_ai = [ai for pts in points.values() for ai, _ in pts]
    all_fps = [fps for pts in points.values() for _, fps in pts]
    top = max([a.tensor_peak, a.fp32_peak] + all_fps)
    lo_x = min([0.1] + [x / 2 for x in all_ai])
    hi_x = max([1e4] + [x * 2 for x in all_ai])
    lo_y = min([top / 1e5] + [y / 2 for y in all_fps])

    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = [lo_x * (hi_x / lo_x) ** (i / 200) for i in range(201)]
    roofs = [(a.fp32_peak, "FP32", "--")]
    if a.tensor_peak > 0:
        roofs.insert(0, (a.tensor_peak, a.tensor_label, "-"))
    for peak, label, style in roofs:
        ax.plot(xs, [min(peak, a.dram_bw * x) for x in xs], color="black", linestyle=style, linewidth=1.2,
                label=f"{label} roof: {peak / 1e12:.0f} TFLOP/s, ridge {peak / a.dram_bw:.0f} FLOP/B")
    ax.plot([], [], " ", label=f"DRAM roof: {a.dram_bw / 1e12:.2f} TB/s (achievable)")
    for bound in ["memory", "compute", "balanced", "latency"]:
        pts = points.get(bound, [])
        name = bound if bound == "balanced" else f"{bound}-bound"
        if pts:
            ax.scatter([x for x, _ in pts], [y for _, y in pts], s=14, alpha=0.6, color=COLOURS[bound],
                       edgecolors="none", label=f"{name} ({len(pts)} kernel{'' if len(pts) == 1 else 's'})")
    ax.set_xlim(lo_x, hi_x)
    ax.set_ylim(lo_y, top * 2)
    ax.set_xlabel("Arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("Achieved FLOP/s")
    ax.set_title(a.title, fontsize=10)
    ax.grid(True, which="major", linestyle=":", linewidth=0.5)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    # No software/date metadata: the same input gives the same file.
    fig.savefig(a.out, format="png", metadata={"Software": None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
