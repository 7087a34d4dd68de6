#!/usr/bin/env python3
"""sm_fraction.py: how kernels slow down when they may use only part of the H100's SMs.

gpusim's design studies change the SM count (configs/studies/l2-and-sms.yaml, the what-if NPUs).
On a real H100 the SMs a process may use can be limited with CUDA MPS
(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): this measures a few kernels at 25, 50, 75 and 100% of the
SMs, each percentage in its own child process under an MPS control daemon, with op_kernels.py's
method (3 warm-ups, 20 profiled repetitions after a 256 MiB L2 flush, CUPTI durations, medians).

Ops: elementwise add of 16M and 64M bf16 elements (grid set by the element count, not the SM
count: the bandwidth a fraction of the SMs can draw), F.linear M=1 N=14336 K=4096 and M=16
N=4096 K=4096 bf16 (cuBLAS, whose launch may or may not follow the SM count), and a 4096^3 bf16
matmul (compute-bound: should slow down in proportion).

Usage (GPU machine, repository root; needs root for the MPS daemon):
  python3 validation/measure/sm_fraction.py --gpu h100 --out $OUT
Writes $OUT/sm_fraction_<gpu>.csv and .json (provenance, the MPS daemon's log tail).
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PERCENTS = [25, 50, 75, 100]
COLUMNS = ["sm_percent", "op", "shape", "kernel_index", "kernel_name", "grid", "block", "regs", "smem",
           "duration_us_median", "op_kernel_time_us_median", "device_sm_count_reported"]


def child(percent, out_csv):
    sys.path.insert(0, HERE)
    import op_kernels  # noqa: E402
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    bf = torch.bfloat16
    ops = []
    for n in (16 * 2**20, 64 * 2**20):
        a, b = torch.randn(n, device="cuda", dtype=bf), torch.randn(n, device="cuda", dtype=bf)
        ops.append(("add", f"n={n}", lambda a=a, b=b: torch.add(a, b)))
    for M, N, K in ((1, 14336, 4096), (16, 4096, 4096)):
        x, w = torch.randn(M, K, device="cuda", dtype=bf), torch.randn(N, K, device="cuda", dtype=bf)
        ops.append(("linear", f"M={M} N={N} K={K}", lambda x=x, w=w: F.linear(x, w)))
    A, B = torch.randn(4096, 4096, device="cuda", dtype=bf), torch.randn(4096, 4096, device="cuda", dtype=bf)
    ops.append(("matmul", "M=4096 N=4096 K=4096", lambda: torch.matmul(A, B)))
    flush_buf = torch.empty(op_kernels.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tmp = tempfile.mkdtemp(prefix="sm_fraction_")
    rows = []
    for op, shape, fn in ops:
        with torch.inference_mode():
            res, _ = op_kernels.measure(fn, flush_buf.zero_, os.path.join(tmp, "trace.json"))
        for k in res["kernels"]:
            rows.append({"sm_percent": percent, "op": op, "shape": shape, "kernel_index": k["index"],
                         "kernel_name": k["name"], "grid": op_kernels._dims(k["grid"]),
                         "block": op_kernels._dims(k["block"]), "regs": k["regs"], "smem": k["smem"],
                         "duration_us_median": f"{k['duration_us_median']:.3f}",
                         "op_kernel_time_us_median": f"{res['kernel_time_us_median']:.3f}",
                         "device_sm_count_reported": sms})
        print(f"{percent:4}% {op:7} {shape:22} kt={res['kernel_time_us_median']:9.2f}us "
              f"grid={rows[-1]['grid']} {op_kernels.short(res['kernels'][0]['name'], 40)}", flush=True)
    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/sm_fraction"))
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-csv", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.child_csv)
        return
    os.makedirs(args.out, exist_ok=True)
    control = shutil.which("nvidia-cuda-mps-control")
    doc = {"script": "validation/measure/sm_fraction.py", "mps_control": control, "percents": PERCENTS}
    sys.path.insert(0, HERE)
    import op_kernels  # noqa: E402
    doc["provenance"] = op_kernels.provenance(args)
    if not control:
        doc["error"] = "nvidia-cuda-mps-control not found"
        print(doc["error"])
    else:
        mps = tempfile.mkdtemp(prefix="mps_")
        env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=mps, CUDA_MPS_LOG_DIRECTORY=mps)
        print(subprocess.run([control, "-d"], env=env, capture_output=True, text=True), flush=True)
        rows = []
        try:
            for p in PERCENTS:
                part = os.path.join(args.out, f"part_{p}.csv")
                r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(p), "--child-csv", part],
                                   env=dict(env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(p)), text=True,
                                   capture_output=True, timeout=240)
                print(r.stdout[-3000:], r.stderr[-1500:], flush=True)
                if os.path.exists(part):
                    with open(part) as f:
                        rows += list(csv.DictReader(f))
                    os.remove(part)
        finally:
            subprocess.run([control], input="quit\n", env=env, text=True)
            try:
                doc["mps_log_tail"] = open(os.path.join(mps, "control.log")).read()[-2000:]
            except OSError:
                pass
        with open(os.path.join(args.out, f"sm_fraction_{args.gpu}.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
    with open(os.path.join(args.out, f"sm_fraction_{args.gpu}.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)


if __name__ == "__main__":
    main()
