#!/usr/bin/env python3
"""compact_hf_models.py: turns hf_models.py's full output into the small files kept in
validation/data/.

  compact_hf_models.py IN.json OUT_DIR [--merge EXISTING.json]

Writes OUT_DIR/<basename of IN> (compact JSON) and OUT_DIR/hf_configs/<case>.json (each case's
config.json as save_pretrained writes it). In the compact JSON each case keeps its summary and
its kernel list as rows of `kernel_columns` (and MoE cases their `routing`), with kernel and aten names interned in `names`.
Generate cases with more than MAX_KERNELS kernels keep per-forward totals, generate's own
(non-forward) kernels and the kernels of the first two forward calls only.
--merge: cases of EXISTING.json that IN.json does not have are kept (IN wins on the same id).
Prints no timings, so held-out results stay unseen.
"""
import argparse
import json
import os

MAX_KERNELS = 5000
COLUMNS = ["name", "aten", "grid", "block", "regs", "smem", "dur_us", "forward"]
SUMMARY = ["id", "split", "model_type", "phase", "batch", "seq_len", "output_len", "n_params",
           "weights_bytes", "kv_cache_bytes", "activation_peak_bytes", "kernel_time_us_median",
           "kernel_time_us_all", "wall_us_median", "wall_us_all", "n_kernels", "n_reps_used"]


def compact_case(c):
    out = {k: c.get(k) for k in SUMMARY}
    out["hf_config"] = f"hf_configs/{c['id']}.json"
    if c.get("routing") is not None:
        out["routing"] = c["routing"]  # MoE cases: tokens per expert, per MoE layer
    names, index = [], {}

    def intern(s):
        if s not in index:
            index[s] = len(names)
            names.append(s)
        return index[s]

    kernels = c["kernels"]
    forwards = {}
    for k in kernels:
        if k["forward"] >= 0:
            f = forwards.setdefault(k["forward"], {"forward": k["forward"], "n_kernels": 0, "kernel_time_us": 0.0})
            f["n_kernels"] += 1
            f["kernel_time_us"] += k["dur_us"]
    if forwards:
        out["forwards"] = [dict(f, kernel_time_us=round(f["kernel_time_us"], 3)) for _, f in sorted(forwards.items())]
        out["outside_forward_kernel_time_us"] = round(sum(k["dur_us"] for k in kernels if k["forward"] < 0), 3)
    if len(kernels) > MAX_KERNELS:
        kernels = [k for k in kernels if k["forward"] in (-1, 0, 1)]
        out["kernels_truncated"] = "generate's own kernels and forward calls 0 and 1 only"
    out["kernel_columns"] = COLUMNS
    out["kernels"] = [[intern(k["name"]), intern(k["aten"]), k["grid"], k["block"], k["regs"], k["smem"],
                       round(k["dur_us"], 3), k["forward"]] for k in kernels]
    out["names"] = names
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("out_dir")
    ap.add_argument("--merge", default=None)
    a = ap.parse_args()
    with open(a.input) as f:
        full = json.load(f)
    os.makedirs(os.path.join(a.out_dir, "hf_configs"), exist_ok=True)
    cases = {}
    if a.merge:
        with open(a.merge) as f:
            for c in json.load(f)["cases"]:
                cases[c["id"]] = c
    for c in full["cases"]:
        with open(os.path.join(a.out_dir, "hf_configs", c["id"] + ".json"), "w") as f:
            f.write(c["hf_config_json"])
        cases[c["id"]] = compact_case(c)
    out = {"provenance": full["provenance"], "method": full["method"], "errors":
           [{"id": e["id"], "error": e["error"]} for e in full["errors"] if e["id"] not in cases],
           "cases": list(cases.values())}
    path = os.path.join(a.out_dir, os.path.basename(a.input))
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {len(out['cases'])} cases, {len(out['errors'])} errors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
