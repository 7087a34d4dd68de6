#!/usr/bin/env python3
"""Compacts serve_requests.py's recordings (serve_requests<set>_<gpu>.json.gz, every step and
token kept there) into what the serve-requests validation suite reads: per run, the engine's
sizes, the requests (arrival, prompt and output tokens), the measured TTFT and TPOT percentiles,
and the measured split of the run's step time into GPU work (CUDA events around each forward)
and host time (the rest of each step). Sets 1-4 are calibration (the engine's host costs were fitted
on set 1; lazy graph capture was added after set 2 was compared, the attention kernels' first use
after set 3, their persistence on the machine after set 4), set 5 held out.

Usage: python3 validation/measure/compact_serve_requests.py validation/data/serve_requests{1,2,3,4,5}_h100.json.gz \
           > validation/data/serve_requests_h100.json
"""
import gzip
import json
import sys


def pct(xs, p):
    """numpy's default (linear) percentile, as gpusim serve computes its own."""
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    i = int(k)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (k - i)


def main():
    out = {"source": [], "runs": []}
    for path in sys.argv[1:]:
        d = json.load(gzip.open(path))
        out["source"].append({"file": path.split("/")[-1], "provenance": d["provenance"]})
        for run in d["runs"]:
            if "error" in run:
                continue
            reqs = run["requests"]
            ttft = [r["token_times"][0] - r["arrival"] for r in reqs]
            tpot = [(r["token_times"][-1] - r["token_times"][0]) / (len(r["token_times"]) - 1)
                    for r in reqs if len(r["token_times"]) > 1]
            gpu = sum(s["gpu_event_ms"] for s in run["steps"]) * 1e-3
            wall = sum(s["t_updated"] - s["t_schedule"] for s in run["steps"])
            out["runs"].append({
                "id": f"set{d['set']} {run['model']} {run['config']} {run['mix']}",
                "set": d["set"],
                "split": "holdout" if d["set"] >= 5 else "calibration",
                "protocol": d.get("protocol", "warm-pass"),
                "process": d.get("process", "shared"),
                "captures": sum(1 for s in run["steps"] if s.get("captured")),
                "model": run["model"], "config": run["config"], "mix": run["mix"],
                "num_blocks": run["engine"]["num_blocks"], "max_requests_per_batch": run["engine"]["max_requests_per_batch"],
                "steps": len(run["steps"]),
                "requests": [[r["arrival"], r["prompt_tokens"], r["output_tokens"]] for r in reqs],
                "ttft_p50_s": pct(ttft, 0.5), "ttft_p90_s": pct(ttft, 0.9),
                "tpot_p50_s": pct(tpot, 0.5), "tpot_p90_s": pct(tpot, 0.9),
                "gpu_share": gpu / wall if wall > 0 else 0,
            })
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
