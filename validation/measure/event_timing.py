"""Shared pieces of the CUDA-event probes (flush_state_probe.py, l2_reuse_probe.py,
cta_pace_probe.py): a timed op after a state set-up, the flush buffer, the driver version."""
import subprocess

import torch

# The op sets' L2 flush: writing this many bytes leaves the L2 full of another buffer's lines.
FLUSH_BYTES = 256 << 20


def event_times_us(setup, op, warmup, reps):
    """`op` timed by CUDA events around it alone, each time after `setup()` (which is queued
    before the start event); the `reps` times after `warmup` untimed rounds, in microseconds."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(warmup + reps):
        setup()
        start.record()
        op()
        end.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(end) * 1e3)
    return times


def gpu_label(name):
    return "h200" if "H200" in name else "h100"


def driver_version():
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    return out.strip().splitlines()[0]
