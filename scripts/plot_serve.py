#!/usr/bin/env python3
"""Plots for `gpusim serve --out DIR`: the latency CDFs (TTFT, TPOT, end to end) of the completed
requests, and the KV cache's use and the batch size over the run. Reads requests.csv and
steps.csv, writes one PNG (matplotlib, Agg backend).

  plot_serve.py --requests requests.csv --steps steps.csv --out serve.png [--title "..."]
"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def cdf(ax, values, label):
    values = sorted(v * 1e3 for v in values if v >= 0)
    if not values:
        return
    ys = [(i + 1) / len(values) for i in range(len(values))]
    ax.step(values, ys, where="post", label=label)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", required=True)
    ap.add_argument("--steps", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="gpusim serve")
    a = ap.parse_args()
    reqs = [r for r in read(a.requests) if r["rejected"] == "0"]
    steps = read(a.steps)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    fig.suptitle(a.title)
    for ax, key, name in ((axes[0][0], "ttft_s", "time to first token"), (axes[0][1], "tpot_s", "time per output token")):
        cdf(ax, [float(r[key]) for r in reqs], name)
        ax.set_xlabel("latency (ms)" if key == "ttft_s" else f"{name} (ms)")
        ax.set_ylabel("share of requests")
        ax.grid(alpha=0.3)
    cdf(axes[0][0], [float(r["e2e_s"]) for r in reqs], "end to end")
    axes[0][0].legend()
    t = [float(s["start_s"]) + float(s["duration_s"]) for s in steps]
    axes[1][0].plot(t, [100 * float(s["kv_share"]) for s in steps], linewidth=0.8)
    axes[1][0].set_xlabel("time (s)")
    axes[1][0].set_ylabel("KV cache in use (%)")
    axes[1][0].set_ylim(0, 105)
    axes[1][0].grid(alpha=0.3)
    axes[1][1].plot(t, [int(s["seqs"]) for s in steps], linewidth=0.8, label="running")
    axes[1][1].plot(t, [int(s["waiting"]) for s in steps], linewidth=0.8, label="waiting")
    axes[1][1].set_xlabel("time (s)")
    axes[1][1].set_ylabel("requests")
    axes[1][1].legend()
    axes[1][1].grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
