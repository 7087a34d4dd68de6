#!/usr/bin/env python3
"""cta_pace_probe.py: how fast do launches of many short CTAs that touch memory go?

gpusim starts the CTAs beyond an SM's first wave at most one per `launch.cta_interval` (160 ns,
fitted on short-row norms and softmax). Empty CTAs start 81 ns apart on each SM
(validation/data/cta_dispatch_h100.json). This probe asks what CTAs that load and store a little
do: bf16 adds (z = x + y) and copies of 0.25-64 MiB, their inputs resident in L2 (warm: the same
op ran just before, then a GPU sleep that lets the host queue the timed launch) or flushed
(cold: a 256 MiB zero_() before), timed by CUDA events, median of 25 after 3 warm-ups. PyTorch's vectorized elementwise kernel runs 128 threads of 8 bf16 elements
a CTA (1,024 elements, 2 KiB an operand), so n elements make n / 1,024 CTAs; the time per CTA an
SM at large n is the pace the block scheduler and the CTAs' own latency allow together.

Usage (GPU machine, repository root):
  python3 validation/measure/cta_pace_probe.py --out $OUT
Writes $OUT/cta_pace_<gpu>.json.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_timing import median_event_us, probe_start, write_probe_result  # noqa: E402

SLEEP_CYCLES = 200_000  # about 0.1 ms at the H100's clocks
SIZES_KIB = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)



def main():
    out, buf = probe_start()
    dev, bf = "cuda", torch.bfloat16
    rows = []
    for kib in SIZES_KIB:
        n = kib * 1024 // 2
        x = torch.randn(n, device=dev, dtype=bf)
        y = torch.randn(n, device=dev, dtype=bf)
        z = torch.empty_like(x)

        def add():
            torch.add(x, y, out=z)

        def copy():
            z.copy_(x)

        # The op again, then a GPU sleep so that the timed launch is queued before its start
        # event (else the host's launch gap lands inside the timing).
        def warm_add():
            add()
            torch.cuda._sleep(SLEEP_CYCLES)

        def warm_copy():
            copy()
            torch.cuda._sleep(SLEEP_CYCLES)

        def cold():
            buf.zero_()

        row = {"kib": kib, "elements": n, "ctas": (n + 1023) // 1024}
        row["add_warm_us"] = median_event_us(warm_add, add)
        row["add_cold_us"] = median_event_us(cold, add)
        row["copy_warm_us"] = median_event_us(warm_copy, copy)
        row["copy_cold_us"] = median_event_us(cold, copy)
        rows.append(row)
        print(f"{kib:6d} KiB  {row['ctas']:6d} CTAs  add warm {row['add_warm_us']:7.2f} cold "
              f"{row['add_cold_us']:7.2f}  copy warm {row['copy_warm_us']:7.2f} cold "
              f"{row['copy_cold_us']:7.2f} us", flush=True)
    method = ("bf16 add z = x + y and copy z.copy_(x) of the given size per operand, timed by "
              "CUDA events around the op alone, median of 25 after 3 warm-ups; warm: the same op "
              "just before, then a 0.1 ms GPU sleep (operands in L2 up to its size); cold: a "
              "256 MiB zero_() before")
    write_probe_result(out, "cta_pace_probe", method, rows,
                       sm_count=torch.cuda.get_device_properties(0).multi_processor_count)


if __name__ == "__main__":
    main()
