#!/usr/bin/env python3
"""l2_order_probe.py: does a kernel find its producer's output in L2 whatever order it reads it in?

l2_reuse_probe.py found a bf16 consumer (z = y + 1) reading all of a freshly written y of up to
16-20 MiB from L2. HF prefills' RMSNorm reads the fp32 output of pow (32 MiB at 2048 tokens of
4096) with a row reduction (y.mean(-1): 16 rows a CTA, 64-128 CTAs) that runs at DRAM speed,
write-backs included, as if it found none of it. The two consumers read in different orders
(the elementwise kernel sweeps the tensor as the producer wrote it; the reduction's CTAs each
walk their own rows at once) and from different SMs. This probe times, for fp32 tensors y of
4-32 MiB viewed as rows of 4096, consumers of y after a 256 MiB flush (cold) and after the flush
and the producer y = x * 2 (produced):

  add      z = y + 1             (elementwise, the producer's order)
  mean     y.mean(-1)            (ATen's reduce_kernel, as HF's RMSNorm)
  sum_all  y.sum()               (one reduction over everything)
  flip     z = y.flip(0) + 1     (a copy that reads the rows in reverse order, then an add)

Each case: 3 warm-ups, then 25 repetitions timed by CUDA events around the consumer alone; the
median is reported.

Usage (GPU machine, repository root):
  python3 validation/measure/l2_order_probe.py --out $OUT
Writes $OUT/l2_order_<gpu>.json.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_timing import median_event_us, probe_start, write_probe_result  # noqa: E402

SIZES_MIB = (4, 8, 12, 16, 24, 32)
WIDTH = 4096



def main():
    out, buf = probe_start()
    dev = "cuda"
    rows = []
    for mib in SIZES_MIB:
        n = mib * (1 << 20) // 4
        x = torch.randn(n // WIDTH, WIDTH, device=dev)
        y = torch.empty_like(x)
        z = torch.empty_like(x)
        torch.mul(x, 2, out=y)
        consumers = {
            "add": lambda: torch.add(y, 1, out=z),
            "mean": lambda: y.mean(-1),
            "sum_all": lambda: y.sum(),
            "flip": lambda: y.flip(0).add_(1),
        }

        def cold():
            buf.zero_()

        def produced():
            buf.zero_()
            torch.mul(x, 2, out=y)

        row = {"mib": mib, "rows": n // WIDTH, "width": WIDTH}
        for name, op in consumers.items():
            row[name + "_cold_us"] = median_event_us(cold, op)
            row[name + "_produced_us"] = median_event_us(produced, op)
        rows.append(row)
        print(f"{mib:4d} MiB  " + "  ".join(
            f"{k} {row[k + '_cold_us']:.2f}/{row[k + '_produced_us']:.2f}" for k in consumers), flush=True)
    method = ("fp32 y of rows x 4096; consumers z = y + 1, y.mean(-1), y.sum(), y.flip(0).add_(1), timed "
              "by CUDA events, median of 25 after 3 warm-ups; states: cold (256 MiB zero_ flush), "
              "produced (flush, then y = x * 2)")
    write_probe_result(out, "l2_order_probe", method, rows,
                       l2_bytes=torch.cuda.get_device_properties(0).L2_cache_size)


if __name__ == "__main__":
    main()
