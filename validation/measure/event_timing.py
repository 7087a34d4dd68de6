"""Shared pieces of the CUDA-event probes (flush_state_probe.py, l2_reuse_probe.py,
cta_pace_probe.py, ...): a timed op after a state set-up, the flush buffer, the kernels an op
launches (profiler trace), the driver version."""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import tempfile

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


def probe_start():
    """The probes' common start: the --out folder from the command line, and the flush buffer on
    the GPU (zero_() of it leaves the L2 full of its dirty lines, as the op sets' flush does)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    return ap.parse_args().out, torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")


def median_event_us(setup, op, warmup=3, reps=25):
    """The median of event_times_us: the probes' figure for `op` after `setup()`."""
    return statistics.median(event_times_us(setup, op, warmup, reps))


def profiled_kernel_events(run):
    """The CUDA kernels `run()` launches, as the PyTorch profiler's trace lists them: its kernel
    events (name, dur in microseconds, args with grid and block), in launch order."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def gpu_label(name):
    return "h200" if "H200" in name else "h100"


def driver_version():
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    return out.strip().splitlines()[0]


def write_probe_result(out_dir, tool, method, rows, **extra):
    """$OUT/<tool without _probe>_<gpu>.json: the rows with the device, date, driver, torch and
    CUDA versions, the method, and any `extra` fields (the key order of the files written so far)."""
    name = torch.cuda.get_device_name()
    result = {"tool": tool, "device": name}
    result.update({k: v for k, v in extra.items() if k == "sm_count"})
    result.update({
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "driver": driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    })
    result.update({k: v for k, v in extra.items() if k != "sm_count"})
    result.update({"method": method, "rows": rows})
    os.makedirs(out_dir, exist_ok=True)
    stem = tool[:-len("_probe")] if tool.endswith("_probe") else tool
    with open(os.path.join(out_dir, f"{stem}_{gpu_label(name)}.json"), "w") as f:
        json.dump(result, f, indent=1)
