#!/usr/bin/env python3
"""l2_reuse_probe.py: how much of a tensor one kernel writes does the next kernel find in L2?

gpusim keeps a kernel's output resident in L2 (least recently used out, hw/l2_residency.h), so an
elementwise chain over tensors of a few tens of MB reads most of its input from L2. The HF prefill
cases suggest otherwise (gpt2-medium b8 s512's GELU pieces on 33.5 MB tensors run at DRAM speed on
the H200, whose L2 holds 60 MiB). This probe times the consumer of a producer-consumer pair of
bf16 elementwise kernels (producer y = x * 2, consumer z = y + 1) for tensors of 1-96 MiB, each
after one of three states:

  cold      the 256 MiB flush (buf.zero_()), then the consumer alone: y comes from DRAM
  produced  the flush, the producer, then the consumer: y as the producer left it
  reread    the flush, a read-only pass over y (y.sum()), then the consumer: y clean in L2

Each case: 3 warm-ups, then 25 repetitions, the consumer timed by CUDA events around it alone
(the state is set up before the first event); the median is reported, with the bytes it moves.

Usage (GPU machine, repository root):
  python3 validation/measure/l2_reuse_probe.py --out $OUT
Writes $OUT/l2_reuse_<gpu>.json.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_timing import median_event_us, probe_start, write_probe_result  # noqa: E402

SIZES_MIB = (1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 96)



def main():
    out, buf = probe_start()
    dev, bf = "cuda", torch.bfloat16
    rows = []
    for mib in SIZES_MIB:
        n = mib * (1 << 20) // 2
        x = torch.randn(n, device=dev, dtype=bf)
        y = torch.empty_like(x)
        z = torch.empty_like(x)
        torch.mul(x, 2, out=y)

        def consumer():
            torch.add(y, 1, out=z)

        def cold():
            buf.zero_()

        def produced():
            buf.zero_()
            torch.mul(x, 2, out=y)

        def reread():
            buf.zero_()
            y.sum()

        row = {"mib": mib, "elements": n, "bytes_moved": 4 * n}
        for label, setup in (("cold", cold), ("produced", produced), ("reread", reread)):
            row[label + "_us"] = median_event_us(setup, consumer)
        rows.append(row)
        print(f"{mib:4d} MiB  cold {row['cold_us']:8.2f}  produced {row['produced_us']:8.2f}  "
              f"reread {row['reread_us']:8.2f} us", flush=True)
    method = ("consumer z = y + 1 (bf16) timed by CUDA events, median of 25 after 3 warm-ups; "
              "states: cold (256 MiB zero_ flush), produced (flush, then y = x * 2), reread "
              "(flush, then y.sum())")
    write_probe_result(out, "l2_reuse_probe", method, rows,
                       l2_bytes=torch.cuda.get_device_properties(0).L2_cache_size)


if __name__ == "__main__":
    main()
