#!/usr/bin/env python3
"""Plot for `gpusim sweep`: one metric against one axis of a study, one line per value of an
optional second axis. Reads the study's results.csv and writes a PNG (matplotlib, Agg backend).

An axis whose values are all plain numbers is drawn to scale; otherwise (50MiB, preset names)
its values are spaced evenly in the order the study lists them. Points without a value for the
metric (a model metric on an op workload, an empty cell) are left out.

  plot_sweep.py --csv results.csv --out plot.png --metric total_us --x hw.sm_count \
      [--series hw.l2.size] [--title "..."]
"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def first_seen(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--metric", required=True)
    p.add_argument("--x", required=True)
    p.add_argument("--series", default="")
    p.add_argument("--title", default="")
    a = p.parse_args()

    with open(a.csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get(a.metric, "") != ""]
    xs = first_seen(r[a.x] for r in rows)
    numeric = bool(xs) and all(is_number(x) for x in xs)
    position = {x: (float(x) if numeric else i) for i, x in enumerate(xs)}
    groups = first_seen(r[a.series] for r in rows) if a.series else [""]

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for g in groups:
        pts = sorted((position[r[a.x]], float(r[a.metric])) for r in rows if not a.series or r[a.series] == g)
        label = f"{a.series} = {g}" if a.series else None
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    if not numeric:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(xs, rotation=30 if max((len(x) for x in xs), default=0) > 8 else 0, ha="right")
    ax.set_xlabel(a.x)
    ax.set_ylabel(a.metric)
    ax.grid(True, alpha=0.3)
    if a.series:
        ax.legend(fontsize=8)
    ax.set_title(a.title or f"{a.metric} vs {a.x}")
    fig.tight_layout()
    fig.savefig(a.out, format="png", metadata={"Software": None})


if __name__ == "__main__":
    main()
