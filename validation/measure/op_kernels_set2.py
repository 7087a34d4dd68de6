#!/usr/bin/env python3
"""op_kernels_set2.py: a second, fresh set of op shapes, measured exactly like op_kernels.py.

This script does not measure anything itself: it imports validation/measure/op_kernels.py as a
module and reuses its instance builder (build_instances, called with that module's OP LISTS
replaced by the lists below), its measurement (measure: 3 warm-ups, 20 profiled repetitions, L2
flushed by writing 256 MiB before each, median), its trace parsing (summarize_trace: correlation-id
assignment of kernels to the op) and its CSV row writer (csv_rows). Read op_kernels.py's docstring
for the method. Only forced-backend variants are dropped: every op runs PyTorch's default path.

Two splits (column `split`):
  calibration2   more shapes for the op families gpusim is weakest on, to calibrate against
                 (held_out = 0);
  fresh_holdout  shapes that appear neither in calibration2 nor in ops_h100.csv, measured for
                 the final accuracy report only (held_out = 1). Do not calibrate against them and
                 do not look at them before the final evaluation.

By default the console output masks fresh_holdout results (no durations, no kernel names);
the CSV and JSON hold them in full.

Usage (on the GPU machine, from the repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/op_kernels_set2.py --gpu h100 --out $OUT
  options: --split {all,calibration2,fresh_holdout}, --only REGEX, --deadline-s N,
           --show-fresh (print fresh_holdout results on the console too), --list (print the
           instance list without measuring; needs torch but no GPU work)
Writes $OUT/ops2_<gpu>.json (rewritten after every instance) and $OUT/ops2_<gpu>.csv: the
columns of ops_h100.csv plus `split`.
"""
import argparse
import csv
import datetime
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("op_kernels", os.path.join(_HERE, "op_kernels.py"))
ok = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ok)

CALIB = "calibration2"
FRESH = "fresh_holdout"
SPLITS = (CALIB, FRESH)
# Output names and the split's description; another set (op_kernels_set3.py) sets these, GROUPS,
# CALIB, FRESH and SPLITS before calling main().
FILE_PREFIX = "ops2"
SCRIPT = "validation/measure/op_kernels_set2.py"
SPLIT_TEXT = ("calibration2 (held_out = 0): shapes to calibrate against; fresh_holdout (held_out = 1): "
              "shapes in neither calibration2 nor ops_h100.csv, for the final accuracy report only")
CSV_COLUMNS = ok.CSV_COLUMNS + ["split"]

# ============================================================================ set-2 op lists
# Each entry: (split, ops kept from op_kernels.build_instances(), overrides of op_kernels' OP LISTS).
# build_instances() is run once per entry with every OP LIST empty except the overrides, so the
# op names, shape strings, params_json and setup code are op_kernels.py's own. Tuple layouts are
# op_kernels.py's: MATMUL (M, N, K, dtype); LINEAR (M, N, K, bias); SDPA (B, H, S, D, causal,
# dtype); SDPA_DECODE (B, Hq, Hkv, L, D) bf16; NAIVE_ATTN (B, H, S, D, causal) fp32;
# EW_OPS [(op, dtype)] x EW_SIZES; CAST_SIZES (both directions, filtered by `ops`);
# NORM_SHAPES (R, C) (layer_norm and rms_norm, filtered by `ops`); SOFTMAX (R, C, dtype).

GROUPS = [
    # ---------------------------------------------------------------- calibration2
    (CALIB, ("matmul",), {"MATMUL": [
        (512, 512, 512, "fp32"), (1536, 1536, 1536, "fp32"), (3072, 3072, 3072, "fp32"),
        (4096, 1024, 1024, "fp32"),
        (32, 4096, 4096, "bf16"), (4, 4096, 4096, "bf16"), (2, 8192, 8192, "bf16"),
        (256, 4096, 4096, "bf16"), (768, 768, 768, "bf16"), (6144, 6144, 6144, "bf16"),
    ]}),
    (CALIB, ("linear",), {"LINEAR": [
        (8, 4096, 4096, 0), (32, 14336, 4096, 0), (1, 6144, 4096, 0), (64, 4096, 14336, 0),
    ]}),
    (CALIB, ("cast_to_fp32",), {"CAST_SIZES": [4194304, 33554432]}),
    (CALIB, ("cast_to_bf16",), {"CAST_SIZES": [4194304]}),
    (CALIB, ("add",), {"EW_OPS": [("add", "bf16")], "EW_SIZES": [262144, 4194304]}),
    (CALIB, ("silu",), {"EW_OPS": [("silu", "bf16")], "EW_SIZES": [4194304]}),
    (CALIB, ("softmax",), {"SOFTMAX": [
        (1024, 2048, "bf16"), (4096, 8192, "bf16"), (256, 32768, "bf16"), (16384, 512, "bf16"),
        (2048, 2048, "fp32"),
    ]}),
    (CALIB, ("layer_norm",), {"NORM_SHAPES": [(1024, 8192)]}),
    (CALIB, ("rms_norm",), {"NORM_SHAPES": [(4096, 8192), (128, 4096)]}),
    (CALIB, ("sdpa_decode",), {"SDPA_DECODE": [(2, 32, 8, 2048, 128), (32, 32, 8, 512, 128)]}),
    (CALIB, ("naive_attention",), {"NAIVE_ATTN": [(2, 16, 768, 64, 0), (16, 8, 256, 64, 0)]}),
    # ---------------------------------------------------------------- fresh_holdout
    (FRESH, ("matmul",), {"MATMUL": [
        (1536, 1536, 1536, "bf16"), (24, 4096, 4096, "bf16"), (5120, 5120, 5120, "bf16"),
        (1, 14336, 4096, "bf16"), (96, 11008, 4096, "bf16"),
        (768, 768, 768, "fp32"), (3072, 3072, 3072, "tf32"),
    ]}),
    (FRESH, ("linear",), {"LINEAR": [
        (2, 4096, 4096, 0), (48, 4096, 4096, 0), (16, 11008, 4096, 0), (512, 4096, 4096, 0),
        (8, 1536, 8960, 0), (1024, 4096, 14336, 0),
    ]}),
    (FRESH, ("sdpa",), {"SDPA": [
        (4, 16, 2048, 64, 1, "bf16"), (8, 24, 512, 64, 0, "bf16"), (2, 32, 1024, 128, 1, "bf16"),
        (1, 8, 8192, 128, 1, "bf16"),
    ]}),
    (FRESH, ("sdpa_decode",), {"SDPA_DECODE": [
        (8, 32, 8, 2048, 128), (2, 32, 32, 512, 128), (16, 12, 2, 4096, 128),
    ]}),
    (FRESH, ("naive_attention",), {"NAIVE_ATTN": [(2, 12, 1024, 64, 0), (4, 8, 384, 64, 1)]}),
    (FRESH, ("add",), {"EW_OPS": [("add", "bf16")], "EW_SIZES": [2097152]}),
    (FRESH, ("mul",), {"EW_OPS": [("mul", "fp32")], "EW_SIZES": [8388608]}),
    (FRESH, ("silu",), {"EW_OPS": [("silu", "bf16")], "EW_SIZES": [33554432]}),
    (FRESH, ("gelu",), {"EW_OPS": [("gelu", "bf16")], "EW_SIZES": [262144]}),
    (FRESH, ("cast_to_bf16",), {"CAST_SIZES": [8388608]}),
    (FRESH, ("cast_to_fp32",), {"CAST_SIZES": [2097152]}),
    (FRESH, ("layer_norm",), {"NORM_SHAPES": [(1024, 2048), (32, 8192)]}),
    (FRESH, ("rms_norm",), {"NORM_SHAPES": [(512, 4096), (8192, 2048)]}),
    (FRESH, ("softmax",), {"SOFTMAX": [(8192, 2048, "bf16"), (32, 4096, "bf16"), (2048, 16384, "bf16")]}),
]

_LIST_NAMES = ("MATMUL", "LINEAR", "SDPA", "SDPA_DECODE", "NAIVE_ATTN", "EW_SIZES", "EW_OPS",
               "CAST_SIZES", "NORM_SHAPES", "SOFTMAX")


def _build_group(overrides):
    """op_kernels.build_instances() with its OP LISTS replaced (restored afterwards)."""
    saved = {n: getattr(ok, n) for n in _LIST_NAMES}
    try:
        for n in _LIST_NAMES:
            setattr(ok, n, [])
        for n, v in overrides.items():
            if n not in _LIST_NAMES:
                raise KeyError(f"unknown op list {n}")
            setattr(ok, n, list(v))
        return ok.build_instances()
    finally:
        for n, v in saved.items():
            setattr(ok, n, v)


def build_instances_set2():
    insts = []
    seen = set()
    for split, ops, overrides in GROUPS:
        got = [i for i in _build_group(overrides) if i["op"] in ops]
        for idx, ins in enumerate(got):
            key = (ins["op"], ins["dtype"], ins["shape"])
            if key in seen:
                raise ValueError(f"duplicate instance {key}")
            seen.add(key)
            ins["split"] = split
            ins["held_out"] = split == FRESH
            ins["list_index"] = idx  # position within this group (op_kernels' own index restarts per group)
            insts.append(ins)
    return insts


def run_groups(groups, calib, fresh, prefix, script, split_text):
    """Measures another set's GROUPS through main(): its split names, output file prefix, the
    script named in the provenance and the split's description."""
    global GROUPS, CALIB, FRESH, SPLITS, FILE_PREFIX, SCRIPT, SPLIT_TEXT
    GROUPS = groups
    CALIB, FRESH, SPLITS = calib, fresh, (calib, fresh)
    FILE_PREFIX, SCRIPT, SPLIT_TEXT = prefix, script, split_text
    main()


def run_probe(split, prefix, script, groups, what):
    """Measures a probe: a fixed grid, every instance in the one calibration split `split`
    (none held out), written to $OUT/<prefix>_<gpu>.json and .csv; `what` describes the grid."""
    run_groups(groups, split, f"{split}_no_holdout", prefix, script,
               f"{split} (held_out = 0): {what}, calibration data")


# ============================================================================ main (op_kernels.main's loop)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/op_kernels_set2_out"))
    ap.add_argument("--split", default="all", choices=("all",) + SPLITS)
    ap.add_argument("--only", default=None, help="regex on 'op shape dtype'")
    ap.add_argument("--deadline-s", type=float, default=450.0)
    ap.add_argument("--show-fresh", action="store_true", help="print fresh_holdout results on the console")
    ap.add_argument("--list", action="store_true", help="print the instance list and exit")
    args = ap.parse_args()
    t_start = time.time()

    insts = build_instances_set2()
    if args.split != "all":
        insts = [i for i in insts if i["split"] == args.split]
    if args.only:
        rx = re.compile(args.only)
        insts = [i for i in insts if rx.search(f"{i['op']} {i['shape']} {i['dtype']}")]
    if args.list:
        for i in insts:
            print(f"{i['split']:<14} {int(i['held_out'])} {i['op']:<16} {i['dtype']:<10} {i['shape']:<36} "
                  f"{json.dumps(i['params'], sort_keys=True)} prec={i['fp32_matmul_precision']}")
        print(f"{len(insts)} instances: " + ", ".join(
            f"{s}={sum(1 for i in insts if i['split'] == s)}" for s in SPLITS))
        return

    os.makedirs(args.out, exist_ok=True)
    import torch
    torch.manual_seed(0)
    ok.set_prec("highest")

    def masked(ins):
        return ins["split"] == FRESH and not args.show_fresh

    prov = ok.provenance(args)
    prov["script"] = SCRIPT
    prov["measurement_code"] = ("validation/measure/op_kernels.py, imported: build_instances, measure, "
                                "summarize_trace, csv_rows, provenance, set_prec")
    prov["split_selected"] = args.split
    print(json.dumps(prov, indent=1, default=str), flush=True)
    method = {"warmup": ok.WARMUP, "repetitions": ok.REPS, "flush_bytes": ok.FLUSH_BYTES,
              "flush": "buf.zero_() on a 256 MiB int32 CUDA tensor inside record_function('gpusim_flush'), "
                       "then torch.cuda.synchronize(), before every repetition",
              "kernel_assignment": "GPU activity whose launching runtime/driver call (correlation id) lies inside "
                                   "record_function('gpusim_op'); cross-checked with gpu_user_annotation ranges",
              "profiler": "torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True), Chrome trace parsed",
              "statistic": "median over repetitions (min/max also given)",
              "kernel_time_us": "median over repetitions of the sum of the op's GPU activity durations",
              "gpu_span_us": "median over repetitions of last activity end - first activity start",
              "wall_us": "median of CUDA-event time around the op in a separate unprofiled loop "
                         "(flush, synchronize, event, op, event): includes host launch cost; reference only",
              "data": "torch.randn inputs (never zeros); inference_mode",
              "fp32_matmul": "torch.set_float32_matmul_precision('highest') except dtype tf32 ('high')",
              "split": SPLIT_TEXT,
              "held_out_rule": "held_out = 1 exactly when split = fresh_holdout (not op_kernels.py's odd-index rule)",
              "list_index": "position of the instance in its group of GROUPS in op_kernels_set2.py",
              "sdpa_backend": "PyTorch default selection for sdpa and sdpa_decode (no backend forced; no "
                              "forced-backend or repeated-KV variants in this set)"}
    doc = {"provenance": prov, "method": method, "ops": [], "errors": []}
    json_path = os.path.join(args.out, f"{FILE_PREFIX}_{args.gpu}.json")
    csv_path = os.path.join(args.out, f"{FILE_PREFIX}_{args.gpu}.csv")

    def write_json():
        doc["provenance"]["date_utc_end"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(json_path, "w") as f:
            json.dump(doc, f, indent=1, default=str)

    csvf = open(csv_path, "w", newline="")
    cw = csv.DictWriter(csvf, fieldnames=CSV_COLUMNS)
    cw.writeheader()
    csvf.flush()

    flush_buf = torch.empty(ok.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def flush():
        flush_buf.zero_()

    tmpdir = tempfile.mkdtemp(prefix="op_kernels_set2_")
    print(f"{len(insts)} op instances: " + ", ".join(
        f"{s}={sum(1 for i in insts if i['split'] == s)}" for s in SPLITS), flush=True)
    first = True
    for n_i, ins in enumerate(insts):
        if time.time() - t_start > args.deadline_s:
            doc["errors"].append({"op": ins["op"], "shape": ins["shape"], "split": ins["split"],
                                  "error": "skipped: deadline"})
            print(f"[SKIP deadline] {ins['split']} {ins['op']} {ins['shape']}", flush=True)
            continue
        t0 = time.time()
        r = {k: ins[k] for k in ("op", "family", "dtype", "shape", "params", "list_index", "held_out",
                                 "fp32_matmul_precision", "split")}
        fn = None
        try:
            ok.set_prec(ins["fp32_matmul_precision"])
            with torch.inference_mode():
                fn = ins["setup"]()
                tp = os.path.join(tmpdir, "trace.json")
                res, evs = ok.measure(fn, flush, tp)
            r.update(res)
            if "error" in res:
                raise RuntimeError(res["error"])
            if first and not masked(ins):
                first = False
                fk = ok.flush_kernels(evs)
                print("=== assignment check on first instance:", r["op"], r["shape"], json.dumps(res["assign"]))
                print("    flush activity names:", sorted({e.get("name") for e in fk}), "count", len(fk))
                for k in res["kernels"]:
                    print(f"    op kernel {k['index']}: {k['name'][:200]} grid={k['grid']} block={k['block']} "
                          f"regs={k['regs']} smem={k['smem']} med={k['duration_us_median']:.2f}us aten={k['aten_op']}")
            elif not res["assign"]["methods_agree"]:
                print(f"[note] assignment methods disagree for {r['split']} {r['op']} {r['shape']}", flush=True)
            for row in ok.csv_rows(r):
                row["split"] = r["split"]
                cw.writerow(row)
            csvf.flush()
            if masked(ins):
                print(f"[{n_i + 1}/{len(insts)}] {r['split']} {r['op']:<16} {r['dtype']:<10} {r['shape']:<34} "
                      f"measured (reps={r['n_reps_used']}, {time.time() - t0:.1f}s; results masked)", flush=True)
            else:
                print(f"[{n_i + 1}/{len(insts)}] {r['op']:<16} {r['dtype']:<10} {r['shape']:<34} n={r['n_kernels']} "
                      f"kt={r['kernel_time_us_median']:.2f}us wall={r['wall_us_median']:.2f}us "
                      f"reps={r['n_reps_used']} ({time.time() - t0:.1f}s) {ok.short(r['kernels'][0]['name'], 50)}",
                      flush=True)
        except Exception as e:  # keep going
            r["error"] = repr(e)
            r["traceback"] = traceback.format_exc()
            doc["errors"].append({"op": ins["op"], "shape": ins["shape"], "split": ins["split"], "error": repr(e)})
            print(f"[ERROR] {ins['split']} {ins['op']} {ins['shape']}: {e!r}", flush=True)
        finally:
            fn = None
            ok.set_prec("highest")
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        doc["ops"].append(r)
        write_json()
    csvf.close()
    doc["provenance"]["cublas"] = ok.cublas_version()
    doc["provenance"]["nvidia_smi_end"] = ok.sh("nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,"
                                                "power.draw --format=csv")
    write_json()

    print("\n=== SUMMARY (kt = median sum of kernel us; fresh_holdout masked unless --show-fresh) ===")
    print(f"{'op':<16} {'dt':<4} {'shape':<30} split          n {'kt_us':>9} {'wall_us':>8}")
    for r in doc["ops"]:
        shp = r["shape"].replace(" ", ",")
        if "kernels" not in r:
            print(f"{r['op'][:16]:<16} {r['dtype'][:4]:<4} {shp[:30]:<30} {r['split']:<14} ERROR "
                  f"{r.get('error', '')[:50]}")
            continue
        if masked(r):
            print(f"{r['op'][:16]:<16} {r['dtype'][:4]:<4} {shp[:30]:<30} {r['split']:<14} ok")
            continue
        print(f"{r['op'][:16]:<16} {r['dtype'][:4]:<4} {shp[:30]:<30} {r['split']:<14} {r['n_kernels']} "
              f"{r['kernel_time_us_median']:9.2f} {r['wall_us_median']:8.1f}")
    n_ok = {s: sum(1 for r in doc["ops"] if r["split"] == s and "kernels" in r) for s in SPLITS}
    print(f"measured ok: {n_ok}; errors: {len(doc['errors'])}; total {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
