#!/usr/bin/env python3
"""Plot for `gpusim sweep`: one metric against one axis of a study, one line per combination of
the other axes (--others): coloured by the --series axis, styled by the rest. Reads the study's
results.csv and writes a PNG (matplotlib, Agg backend).

An axis whose values are all plain numbers is drawn to scale; otherwise (50MiB, preset names)
its values are spaced evenly in the order the study lists them. Points without a value for the
metric (a model metric on an op workload, an empty cell) are left out.

  plot_sweep.py --csv results.csv --out plot.png --metric total_us --x hw.sm_count \
      [--series hw.l2.size] [--others hw.l2.size,workload.batch] [--title "..."]
      [--overlay FILE,XCOL,YCOL,LABEL[,COL=VALUE]]...

--overlay draws reference points from another CSV (a measurement beside the simulation), rows
filtered by an optional COL=VALUE.
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
    p.add_argument("--others", default="", help="comma-separated: every axis but x")
    p.add_argument("--title", default="")
    p.add_argument("--overlay", action="append", default=[])
    a = p.parse_args()

    with open(a.csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get(a.metric, "") != ""]
    xs = first_seen(r[a.x] for r in rows)
    numeric = bool(xs) and all(is_number(x) for x in xs)
    position = {x: (float(x) if numeric else i) for i, x in enumerate(xs)}
    others = [c for c in a.others.split(",") if c and c != a.x]
    if a.series and a.series not in others:
        others.insert(0, a.series)
    rest = [c for c in others if c != a.series]
    groups = first_seen(tuple(r[c] for c in others) for r in rows)
    colours = first_seen(r[a.series] for r in rows) if a.series else [""]
    styles = first_seen(tuple(r[c] for c in rest) for r in rows)
    line_styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v", "x"]

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for g in groups:
        values = dict(zip(others, g))
        pts = sorted((position[r[a.x]], float(r[a.metric])) for r in rows
                     if tuple(r[c] for c in others) == g)
        colour = f"C{colours.index(values[a.series]) % 10}" if a.series else "C0"
        style = styles.index(tuple(values[c] for c in rest))
        label = ", ".join(f"{c}={values[c]}" for c in others) or None
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colour,
                linestyle=line_styles[style % len(line_styles)], marker=markers[style % len(markers)],
                label=label)
    for i, spec in enumerate(a.overlay):
        path, xcol, ycol, label, *where = spec.split(",")
        with open(path, newline="") as f:
            lines = [line for line in f if not line.startswith("#")]  # provenance comments
        ref = [r for r in csv.DictReader(lines) if all(r[w.split("=")[0]] == w.split("=", 1)[1] for w in where)]
        pts = sorted((float(r[xcol]), float(r[ycol])) for r in ref)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=f"C{(i + 3) % 10}", linestyle="--",
                marker="x", label=label)
    if not numeric:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(xs, rotation=30 if max((len(x) for x in xs), default=0) > 8 else 0, ha="right")
    ax.set_xlabel(a.x)
    ax.set_ylabel(a.metric)
    ax.grid(True, alpha=0.3)
    if others or a.overlay:
        if not others:
            ax.lines[0].set_label("gpusim")
        ax.legend(fontsize=7, ncol=2 if len(groups) > 6 else 1)
    ax.set_title(a.title or f"{a.metric} vs {a.x}")
    fig.tight_layout()
    fig.savefig(a.out, format="png", metadata={"Software": None})


if __name__ == "__main__":
    main()
