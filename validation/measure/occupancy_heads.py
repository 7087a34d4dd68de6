#!/usr/bin/env python3
"""occupancy_heads.py: the real per-head latency curve behind seed 001's occupancy hypothesis.

Seed 001 times fp16 F.scaled_dot_product_attention(q, k, v) (no mask) with B=16, S=512, D=64
for H = 8..128 and claims H=96 is a sweet spot. This measures the same call on the GPU for
H = 8, 16, ..., 128 (every multiple of 8), with PyTorch's default backend (cuDNN on Hopper since
PyTorch 2.5) and with FlashAttention-2 forced (the backend PyTorch 2.4 ran for the seed), the
way op_kernels.py measures every op (3 warm-ups, 20 profiled repetitions with a 256 MiB L2
flush before each, kernel durations from the PyTorch profiler's CUPTI trace, medians).

Per row: backend, H, the attention kernel's name, grid, block, registers, shared memory, the
op's kernel time (median), per-head latency = kernel time / H, and the CUDA-event wall time.

Usage (GPU machine, repository root):
  python3 validation/measure/occupancy_heads.py --gpu h100 --out $OUT
Writes $OUT/occupancy_heads_<gpu>.csv (rewritten after every row) and .json (provenance).
"""
import argparse
import csv
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_kernels  # noqa: E402  (same folder: measure(), provenance(), trace parsing)

B, S, D = 16, 512, 64
HEADS = list(range(8, 129, 8))
COLUMNS = ["backend", "H", "B", "S", "D", "dtype", "kernel_name", "grid", "block", "regs", "smem",
           "n_kernels", "kernel_time_us_median", "per_head_us", "wall_us_median", "n_reps"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/occupancy_heads"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    doc = {"provenance": op_kernels.provenance(args), "script": "validation/measure/occupancy_heads.py",
           "method": "op_kernels.measure: 3 warm-ups, 20 profiled repetitions, 256 MiB L2 flush before each, "
                     "median of the summed kernel durations (CUPTI via torch.profiler)",
           "shape": {"B": B, "S": S, "D": D, "dtype": "fp16", "causal": False, "heads": HEADS}}
    with open(os.path.join(args.out, f"occupancy_heads_{args.gpu}.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    flush_buf = torch.empty(op_kernels.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    csv_path = os.path.join(args.out, f"occupancy_heads_{args.gpu}.csv")
    rows = []
    tmp = tempfile.mkdtemp(prefix="occupancy_heads_")
    for backend in ("default", "flash"):
        for H in HEADS:
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
            if backend == "default":
                def fn():
                    return F.scaled_dot_product_attention(q, k, v)
            else:
                def fn():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        return F.scaled_dot_product_attention(q, k, v)
            with torch.inference_mode():
                res, _ = op_kernels.measure(fn, flush_buf.zero_, os.path.join(tmp, "trace.json"))
            main_kernel = max(res["kernels"], key=lambda x: x["duration_us_median"])
            kt = res["kernel_time_us_median"]
            rows.append({"backend": backend, "H": H, "B": B, "S": S, "D": D, "dtype": "fp16",
                         "kernel_name": main_kernel["name"], "grid": op_kernels._dims(main_kernel["grid"]),
                         "block": op_kernels._dims(main_kernel["block"]), "regs": main_kernel["regs"],
                         "smem": main_kernel["smem"], "n_kernels": len(res["kernels"]),
                         "kernel_time_us_median": f"{kt:.3f}", "per_head_us": f"{kt / H:.4f}",
                         "wall_us_median": f"{res['wall_us_median']:.3f}", "n_reps": res["n_reps_used"]})
            with open(csv_path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=COLUMNS)
                w.writeheader()
                w.writerows(rows)
            print(f"{backend:8} H={H:4} kt={kt:8.2f}us per-head={kt / H:.3f}us grid={rows[-1]['grid']} "
                  f"{op_kernels.short(main_kernel['name'], 50)}", flush=True)


if __name__ == "__main__":
    main()
