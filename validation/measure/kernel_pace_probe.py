#!/usr/bin/env python3
"""kernel_pace_probe.py: how fast do the eager-mode kernels of many short CTAs go, by kind?

cta_pace_probe.py found contiguous bf16 adds pacing at 86-90 ns a CTA an SM with their operands
in L2, the block scheduler's own pace. gpusim was fitted with a 160 ns pace, which also stood in
for kernels whose CTAs cost more than that: ATen's legacy elementwise loop (a broadcast operand:
offsets computed an element at a time), torch.cat's copies and functors with long arithmetic
(silu's exp and division). This probe times each kind at 1-32 MiB an operand, warm (the same op
just before, then a GPU sleep, so its operands are in L2 and the host's launch gap is outside the
timing) and cold (a 256 MiB zero_() before), by CUDA events, median of 25 after 3 warm-ups:

  add_bf16        z = x + y, contiguous bf16 (vectorized_elementwise_kernel<8>: 1,024 elements a CTA)
  silu_bf16       silu(x), contiguous bf16 (the same kernel shape)
  bcast_mul_fp32  x * r, x [rows, 4096] fp32, r [rows, 1] (elementwise_kernel<128, 2>: 256 a CTA)
  bcast_mul_bf16  x * w, x [rows, 4096] bf16, w [4096] (elementwise_kernel<128, 4>: 512 a CTA)
  rope_cat_bf16   cat((-x2, x1), -1) of x [rows / 32, 32, 128] bf16's halves (CatArrayBatchedCopy)
  kv_cat_bf16     cat((past, new), 2), past [8, 8, L, 128] bf16, new one position
                  (CatArrayBatchedCopy_vectorized)

Usage (GPU machine, repository root):
  python3 validation/measure/kernel_pace_probe.py --out $OUT
Writes $OUT/kernel_pace_<gpu>.json.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_timing import median_event_us, probe_start, profiled_kernel_events, write_probe_result  # noqa: E402,E501

SLEEP_CYCLES = 200_000  # about 0.1 ms
SIZES_MIB = (1, 2, 4, 8, 16, 32)
WIDTH = 4096



def kernels(mib, dev):
    """name -> the op on tensors of `mib` MiB an operand."""
    bf, f32 = torch.bfloat16, torch.float32
    n_bf = mib * (1 << 20) // 2
    x_bf = torch.randn(n_bf // WIDTH, WIDTH, device=dev, dtype=bf)
    y_bf = torch.randn_like(x_bf)
    z_bf = torch.empty_like(x_bf)
    w_bf = torch.randn(WIDTH, device=dev, dtype=bf)
    x_f = torch.randn(mib * (1 << 20) // 4 // WIDTH, WIDTH, device=dev, dtype=f32)
    r_f = torch.randn(x_f.shape[0], 1, device=dev, dtype=f32)
    z_f = torch.empty_like(x_f)
    heads = x_bf.view(-1, 32, 128)
    x1, x2 = heads[..., :64], heads[..., 64:]
    past = torch.randn(8, 8, n_bf // (8 * 8 * 128), 128, device=dev, dtype=bf)
    new = torch.randn(8, 8, 1, 128, device=dev, dtype=bf)
    return {
        "add_bf16": lambda: torch.add(x_bf, y_bf, out=z_bf),
        "silu_bf16": lambda: torch.nn.functional.silu(x_bf),
        "bcast_mul_fp32": lambda: torch.mul(x_f, r_f, out=z_f),
        "bcast_mul_bf16": lambda: torch.mul(x_bf, w_bf, out=z_bf),
        "rope_cat_bf16": lambda: torch.cat((-x2, x1), dim=-1),
        "kv_cat_bf16": lambda: torch.cat((past, new), dim=2),
    }


def launched(op):
    """The kernels `op` launches: name, grid and block, from one profiled run."""
    return [{"name": e["name"], "grid": e["args"].get("grid"), "block": e["args"].get("block")}
            for e in profiled_kernel_events(op)]


def main():
    out, buf = probe_start()
    dev = "cuda"

    def cold():
        buf.zero_()

    rows = []
    for mib in SIZES_MIB:
        row = {"mib": mib}
        for name, op in kernels(mib, dev).items():
            def warm(op=op):
                op()
                torch.cuda._sleep(SLEEP_CYCLES)
            row[name + "_warm_us"] = median_event_us(warm, op)
            row[name + "_cold_us"] = median_event_us(cold, op)
        if mib == 4:
            row["kernels"] = {name: launched(op) for name, op in kernels(mib, dev).items()}
        rows.append(row)
        print(f"{mib:3d} MiB  " + "  ".join(f"{k[:-3]} {v:.2f}" for k, v in row.items() if k.endswith("_us")),
              flush=True)
    method = ("each op on operands of the given MiB, timed by CUDA events around it alone, median of "
              "25 after 3 warm-ups; warm: the same op just before, then a 0.1 ms GPU sleep; cold: a "
              "256 MiB zero_() before (see the module docstring for the ops)")
    write_probe_result(out, "kernel_pace_probe", method, rows,
                       sm_count=torch.cuda.get_device_properties(0).multi_processor_count)


if __name__ == "__main__":
    main()
