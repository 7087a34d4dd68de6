#!/usr/bin/env python3
"""hw_probe.py: PyTorch-level ground-truth measurements for gpusim hardware presets.

Usage: python3 hw_probe.py --gpu h100 --out $OUT
Writes $OUT/hw_probe_<gpu>.json (rewritten after every section, so partial
results survive) and prints a summary table at the end.

Timing: torch.cuda.Event, warm-up first, median of >= 20 timed repetitions,
random data (never zeros).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import traceback

import torch

RESULTS = {}
ERRORS = []
ARGS = None


def out_path():
    return os.path.join(ARGS.out, f"hw_probe_{ARGS.gpu}.json")


def flush():
    RESULTS["errors"] = ERRORS
    with open(out_path(), "w") as f:
        json.dump(RESULTS, f, indent=2, default=str)


def section(name):
    def deco(fn):
        def wrapper(*a, **k):
            t0 = time.time()
            try:
                RESULTS[name] = fn(*a, **k)
            except Exception as e:  # keep going
                ERRORS.append({"section": name, "error": repr(e), "traceback": traceback.format_exc()})
                print(f"[ERROR] {name}: {e!r}", flush=True)
            print(f"[section {name}: {time.time() - t0:.1f} s]", flush=True)
            flush()
        return wrapper
    return deco


def med(v):
    return statistics.median(v) if v else None


def pct(v, p):
    if not v:
        return None
    s = sorted(v)
    i = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[i]


def time_events(fn, reps=20, warmup=3, inner=1):
    """Returns list of ms per call (each rep times `inner` back-to-back calls)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(inner):
            fn()
        e1.record()
        e1.synchronize()
        out.append(e0.elapsed_time(e1) / inner)
    return out


# ----------------------------------------------------------------------------- NVML
class NvmlSampler:
    def __init__(self, period_s=0.02):
        self.period = period_s
        self.samples = []
        self._stop = threading.Event()
        self.ok = False
        try:
            import pynvml
            self.nv = pynvml
            pynvml.nvmlInit()
            self.h = pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("NVML_INDEX", "0")))
            self.ok = True
        except Exception as e:
            ERRORS.append({"section": "nvml_init", "error": repr(e)})

    def read(self):
        nv, h = self.nv, self.h
        d = {"t": time.time()}
        for key, fn in (
            ("sm_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            ("mem_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            ("power_w", lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
            ("temp_c", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            ("clocks_event_reasons", lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h)),
        ):
            try:
                d[key] = fn()
            except Exception:
                d[key] = None
        return d

    def _loop(self):
        while not self._stop.is_set():
            self.samples.append(self.read())
            time.sleep(self.period)

    def start(self):
        self.samples = []
        self._stop.clear()
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def stop(self):
        self._stop.set()
        self.th.join()
        return self.samples


def summarize_samples(samples, t_from, t_to):
    sel = [s for s in samples if t_from <= s["t"] <= t_to]
    def col(k):
        return [s[k] for s in sel if s.get(k) is not None]
    reasons = sorted({s["clocks_event_reasons"] for s in sel if s.get("clocks_event_reasons") is not None})
    return {
        "n_samples": len(sel),
        "sm_mhz_median": med(col("sm_mhz")),
        "sm_mhz_min": min(col("sm_mhz")) if col("sm_mhz") else None,
        "sm_mhz_max": max(col("sm_mhz")) if col("sm_mhz") else None,
        "mem_mhz_median": med(col("mem_mhz")),
        "power_w_median": med(col("power_w")),
        "power_w_max": max(col("power_w")) if col("power_w") else None,
        "temp_c_median": med(col("temp_c")),
        "temp_c_max": max(col("temp_c")) if col("temp_c") else None,
        "clocks_event_reasons_seen_hex": [hex(r) for r in reasons],
    }


SAMPLER = None


@section("nvml_static")
def nvml_static():
    if not SAMPLER or not SAMPLER.ok:
        return {"available": False}
    nv, h = SAMPLER.nv, SAMPLER.h
    r = {}
    for key, fn in (
        ("name", lambda: nv.nvmlDeviceGetName(h)),
        ("driver_version", lambda: nv.nvmlSystemGetDriverVersion()),
        ("cuda_driver_version", lambda: nv.nvmlSystemGetCudaDriverVersion()),
        ("max_sm_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
        ("max_mem_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
        ("app_sm_mhz", lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM)),
        ("app_mem_mhz", lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_MEM)),
        ("default_app_sm_mhz", lambda: nv.nvmlDeviceGetDefaultApplicationsClock(h, nv.NVML_CLOCK_SM)),
        ("power_limit_w", lambda: nv.nvmlDeviceGetPowerManagementLimit(h) / 1000.0),
        ("enforced_power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
        ("default_power_limit_w", lambda: nv.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0),
        ("memory_bus_width", lambda: nv.nvmlDeviceGetMemoryBusWidth(h)),
        ("pcie_link_gen_max", lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h)),
        ("pcie_link_width_max", lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h)),
        ("persistence_mode", lambda: nv.nvmlDeviceGetPersistenceMode(h)),
        ("compute_mode", lambda: nv.nvmlDeviceGetComputeMode(h)),
        ("ecc_mode_current", lambda: nv.nvmlDeviceGetEccMode(h)[0]),
        ("num_gpu_cores", lambda: nv.nvmlDeviceGetNumGpuCores(h)),
    ):
        try:
            v = fn()
            r[key] = v.decode() if isinstance(v, bytes) else v
        except Exception as e:
            r[key] = f"unavailable: {e!r}"
    return r


@section("idle_clock")
def idle_clock():
    if not SAMPLER or not SAMPLER.ok:
        return {"available": False}
    torch.cuda.synchronize()
    time.sleep(0.5)
    SAMPLER.start()
    t0 = time.time()
    time.sleep(1.5)
    s = SAMPLER.stop()
    return summarize_samples(s, t0, time.time())


# ----------------------------------------------------------------------------- torch props
@section("torch_device")
def torch_device():
    p = torch.cuda.get_device_properties(0)
    d = {}
    for k in dir(p):
        if k.startswith("_"):
            continue
        try:
            v = getattr(p, k)
        except Exception:
            continue
        if callable(v):
            continue
        d[k] = v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
    free, total = torch.cuda.mem_get_info()
    d["mem_get_info_free_bytes"] = free
    d["mem_get_info_total_bytes"] = total
    d["torch.cuda.get_device_capability"] = list(torch.cuda.get_device_capability(0))
    return d


# ----------------------------------------------------------------------------- DRAM
@section("dram_bandwidth")
def dram_bandwidth():
    r = {}
    GiB = 1 << 30
    n32 = 2 * GiB // 4
    x = torch.rand(n32, device="cuda", dtype=torch.float32) + 0.5
    y = torch.rand(n32, device="cuda", dtype=torch.float32) + 0.5
    nbytes = x.numel() * x.element_size()
    t = time_events(lambda: y.copy_(x), reps=25, warmup=3)
    r["copy_2GiB_fp32"] = {
        "op": "y.copy_(x), 2 GiB fp32", "bytes_counted": 2 * nbytes, "ms_median": med(t), "ms_min": min(t),
        "GBps_read_plus_write_median": 2 * nbytes / (med(t) * 1e-3) / 1e9,
        "GBps_read_plus_write_best": 2 * nbytes / (min(t) * 1e-3) / 1e9, "reps": len(t)}
    t = time_events(lambda: y.fill_(1.0), reps=25, warmup=3)
    r["fill_2GiB_fp32_write_only"] = {
        "op": "y.fill_(1.0), 2 GiB fp32", "bytes_counted": nbytes, "ms_median": med(t), "ms_min": min(t),
        "GBps_median": nbytes / (med(t) * 1e-3) / 1e9, "GBps_best": nbytes / (min(t) * 1e-3) / 1e9,
        "reps": len(t)}
    del y
    xb = torch.rand(2 * GiB // 2, device="cuda", dtype=torch.bfloat16) + 0.5  # 2 GiB bf16, non-zero
    del x
    nb = xb.numel() * xb.element_size()
    t = time_events(lambda: xb.sum(), reps=25, warmup=3)
    r["sum_2GiB_bf16_read"] = {
        "op": "x.sum(), 2 GiB bf16", "bytes_counted": nb, "ms_median": med(t), "ms_min": min(t),
        "GBps_median": nb / (med(t) * 1e-3) / 1e9, "GBps_best": nb / (min(t) * 1e-3) / 1e9, "reps": len(t)}
    t = time_events(lambda: torch.amax(xb), reps=25, warmup=3)
    r["amax_2GiB_bf16_read"] = {
        "op": "torch.amax(x), 2 GiB bf16", "bytes_counted": nb, "ms_median": med(t), "ms_min": min(t),
        "GBps_median": nb / (med(t) * 1e-3) / 1e9, "GBps_best": nb / (min(t) * 1e-3) / 1e9, "reps": len(t)}
    del xb
    torch.cuda.empty_cache()
    return r


# ----------------------------------------------------------------------------- launch costs
def _kernel_stats_from_trace(path, name_filter=None):
    with open(path) as f:
        tr = json.load(f)
    evs = tr["traceEvents"] if isinstance(tr, dict) else tr
    ks = [e for e in evs if e.get("cat") == "kernel" and e.get("ph") == "X"]
    if name_filter:
        ks = [e for e in ks if name_filter(e.get("name", ""))]
    ks.sort(key=lambda e: float(e["ts"]))
    durs = [float(e["dur"]) for e in ks]
    gaps, periods = [], []
    for a, b in zip(ks, ks[1:]):
        gaps.append(float(b["ts"]) - (float(a["ts"]) + float(a["dur"])))
        periods.append(float(b["ts"]) - float(a["ts"]))
    names = sorted({e.get("name", "") for e in ks})
    return {
        "n_kernels": len(ks),
        "kernel_names": names[:5],
        "duration_us_median": med(durs), "duration_us_p10": pct(durs, 10), "duration_us_p90": pct(durs, 90),
        "gap_us_median": med(gaps), "gap_us_p10": pct(gaps, 10), "gap_us_p90": pct(gaps, 90),
        "period_us_median": med(periods),
    }


@section("launch_costs")
def launch_costs():
    N = 2000
    r = {"n_ops": N, "op": "x.add_(1.0) on a 1-element fp32 cuda tensor"}
    x = torch.rand(1, device="cuda") + 1.0
    for _ in range(200):
        x.add_(1.0)
    torch.cuda.synchronize()
    # (i) eager wall time
    per = []
    for _ in range(7):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(N):
            x.add_(1.0)
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) / N * 1e6)
    r["eager_wall_us_per_op_median"] = med(per)
    r["eager_wall_us_per_op_min"] = min(per)
    r["eager_wall_runs"] = per
    # eager, events around the whole loop (GPU-side time span)
    ev = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(N):
            x.add_(1.0)
        e1.record()
        e1.synchronize()
        ev.append(e0.elapsed_time(e1) * 1e3 / N)
    r["eager_event_us_per_op_median"] = med(ev)
    # (ii) CUDA graph of N ops
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for _ in range(N):
            x.add_(1.0)
    torch.cuda.synchronize()
    t = time_events(lambda: g.replay(), reps=25, warmup=3)
    r["graph_replay_us_per_op_median"] = med(t) * 1e3 / N
    r["graph_replay_us_per_op_min"] = min(t) * 1e3 / N
    r["graph_replay_ms_per_replay_median"] = med(t)
    # (iii) profiler (CUPTI) kernel durations and gaps
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(N):
                x.add_(1.0)
            torch.cuda.synchronize()
        p = os.path.join("/tmp", f"trace_eager_{ARGS.gpu}.json")
        prof.export_chrome_trace(p)
        r["profiler_eager"] = _kernel_stats_from_trace(p)
    except Exception as e:
        ERRORS.append({"section": "launch_costs.profiler_eager", "error": repr(e),
                       "traceback": traceback.format_exc()})
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            g.replay()
            torch.cuda.synchronize()
        p = os.path.join("/tmp", f"trace_graph_{ARGS.gpu}.json")
        prof.export_chrome_trace(p)
        r["profiler_graph_replay"] = _kernel_stats_from_trace(p)
    except Exception as e:
        ERRORS.append({"section": "launch_costs.profiler_graph", "error": repr(e),
                       "traceback": traceback.format_exc()})
    r["note"] = ("eager_wall is host-bound (PyTorch dispatch + cudaLaunchKernel); gap = next kernel start - "
                 "previous kernel end from CUPTI timestamps (us); period = start-to-start")
    del g
    return r


# ----------------------------------------------------------------------------- matmul
def _mm_entry(label, fn, flops, inner):
    t = time_events(fn, reps=20, warmup=3, inner=inner)
    return {"label": label, "flops_per_call": flops, "inner_calls_per_timing": inner, "reps": len(t),
            "ms_median": med(t), "ms_min": min(t),
            "TFLOPs_median": flops / (med(t) * 1e-3) / 1e12, "TFLOPs_best": flops / (min(t) * 1e-3) / 1e12}


@section("matmul")
def matmul():
    r = {}
    torch.backends.cuda.matmul.allow_tf32 = False
    inner_for = {8192: 3, 4096: 10, 2048: 40, 1024: 150}

    def run(label, dtype, n, tf32=False):
        try:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device="cuda", dtype=torch.float32).to(dtype)
            b = torch.randn(n, n, device="cuda", dtype=torch.float32).to(dtype)
            c = torch.empty(n, n, device="cuda", dtype=dtype)
            r[label] = _mm_entry(label, lambda: torch.matmul(a, b, out=c), 2.0 * n ** 3, inner_for.get(n, 3))
            r[label]["allow_tf32"] = tf32
            print(f"  {label}: {r[label]['TFLOPs_median']:.1f} TFLOP/s", flush=True)
        except Exception as e:
            ERRORS.append({"section": f"matmul.{label}", "error": repr(e), "traceback": traceback.format_exc()})
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.cuda.empty_cache()

    run("bf16_8192", torch.bfloat16, 8192)
    run("fp16_8192", torch.float16, 8192)
    run("tf32_8192", torch.float32, 8192, tf32=True)
    run("fp32_notf32_4096", torch.float32, 4096, tf32=False)
    for n in (1024, 2048, 4096):
        run(f"bf16_{n}", torch.bfloat16, n)
    # fp8 e4m3 via torch._scaled_mm
    try:
        n = 8192
        a = (torch.randn(n, n, device="cuda") * 0.5).to(torch.float8_e4m3fn)  # [M,K] row-major
        bt = (torch.randn(n, n, device="cuda") * 0.5).to(torch.float8_e4m3fn)  # [N,K] row-major
        b = bt.t()  # [K,N] column-major
        sa = torch.tensor(1.0, device="cuda")
        sb = torch.tensor(1.0, device="cuda")
        fn = lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        fn()
        r["fp8_e4m3_8192"] = _mm_entry("fp8_e4m3_8192", fn, 2.0 * n ** 3, 3)
        r["fp8_e4m3_8192"]["call"] = "torch._scaled_mm(a_e4m3[M,K], b_e4m3[N,K].t(), scale=1.0, out_dtype=bf16)"
        print(f"  fp8_e4m3_8192: {r['fp8_e4m3_8192']['TFLOPs_median']:.1f} TFLOP/s", flush=True)
    except Exception as e:
        ERRORS.append({"section": "matmul.fp8", "error": repr(e), "traceback": traceback.format_exc()})
    try:
        fn2 = lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=True)
        fn2()
        r["fp8_e4m3_8192_fast_accum"] = _mm_entry("fp8_e4m3_8192_fast_accum", fn2, 2.0 * n ** 3, 3)
        r["fp8_e4m3_8192_fast_accum"]["call"] = "as fp8_e4m3_8192 with use_fast_accum=True"
        print(f"  fp8_e4m3_8192_fast_accum: {r['fp8_e4m3_8192_fast_accum']['TFLOPs_median']:.1f} TFLOP/s", flush=True)
    except Exception as e:
        ERRORS.append({"section": "matmul.fp8_fast_accum", "error": repr(e), "traceback": traceback.format_exc()})
    torch.cuda.empty_cache()
    return r


# ----------------------------------------------------------------------------- sustained clocks
def _sustained(label, step, duration_s=4.0, sync_every=5, work_per_step=None):
    if not SAMPLER or not SAMPLER.ok:
        return {"available": False}
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    SAMPLER.start()
    t0 = time.time()
    steps = 0
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    e0.record()
    while time.time() - t0 < duration_s:
        for _ in range(sync_every):
            step()
        steps += sync_every
        torch.cuda.synchronize()
    e1.record()
    e1.synchronize()
    t1 = time.time()
    samples = SAMPLER.stop()
    d = summarize_samples(samples, t1 - 3.0, t1)
    d["label"] = label
    d["duration_s"] = t1 - t0
    d["steps"] = steps
    gpu_ms = e0.elapsed_time(e1)
    d["gpu_ms"] = gpu_ms
    if work_per_step:
        name, amount = work_per_step
        d[name] = amount * steps / (gpu_ms * 1e-3)
    d["window"] = "median over NVML samples (20 ms period) in the last 3 s"
    return d


@section("sustained_clocks")
def sustained_clocks():
    r = {}
    try:
        n = 8192
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        r["bf16_matmul_8192"] = _sustained("bf16 matmul 8192^3 loop", lambda: torch.matmul(a, b, out=c),
                                           sync_every=10, work_per_step=("TFLOPs_sustained", 2.0 * n ** 3 / 1e12))
        del a, b, c
        torch.cuda.empty_cache()
        print(f"  sustained bf16 mm: {r['bf16_matmul_8192'].get('sm_mhz_median')} MHz", flush=True)
    except Exception as e:
        ERRORS.append({"section": "sustained.matmul", "error": repr(e), "traceback": traceback.format_exc()})
    try:
        n = 1 << 28  # 1 GiB fp32 each
        a = torch.rand(n, device="cuda") + 0.5
        b = torch.rand(n, device="cuda") + 0.5
        c = torch.empty_like(a)
        r["elementwise_add_1GiB"] = _sustained("torch.add(a,b,out=c) 3x1 GiB fp32 loop",
                                               lambda: torch.add(a, b, out=c), sync_every=20,
                                               work_per_step=("GBps_sustained", 3.0 * n * 4 / 1e9))
        del a, b, c
        torch.cuda.empty_cache()
        print(f"  sustained add: {r['elementwise_add_1GiB'].get('sm_mhz_median')} MHz", flush=True)
    except Exception as e:
        ERRORS.append({"section": "sustained.add", "error": repr(e), "traceback": traceback.format_exc()})
    try:
        n = 1 << 23  # 32 MiB fp32, mostly L2-resident: sin is SIMT/SFU heavy
        a = torch.rand(n, device="cuda") + 0.5
        c = torch.empty_like(a)
        r["sin_32MiB"] = _sustained("torch.sin(a,out=c) 32 MiB fp32 loop", lambda: torch.sin(a, out=c),
                                    sync_every=200, work_per_step=("Gelem_per_s", n / 1e9))
        del a, c
        torch.cuda.empty_cache()
        print(f"  sustained sin: {r['sin_32MiB'].get('sm_mhz_median')} MHz", flush=True)
    except Exception as e:
        ERRORS.append({"section": "sustained.sin", "error": repr(e), "traceback": traceback.format_exc()})
    return r


# ----------------------------------------------------------------------------- provenance
def provenance():
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
        except Exception as e:
            return f"failed: {e!r}"
    return {
        "device_name": torch.cuda.get_device_name(0),
        "nvidia_smi_query": sh("nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                               "clocks.max.mem,clocks.sm,power.limit,pci.bus_id --format=csv"),
        "driver_version": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader"),
        "torch_version": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "nvcc": sh("nvcc --version | tail -2"),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname_kernel": platform.release(),
        "script": "validation/measure/hw_probe.py",
        "driver_script": "validation/measure/run_hw_probe.sh",
    }


def summary():
    rows = []
    def g(*path):
        d = RESULTS
        for p in path:
            if not isinstance(d, dict) or p not in d:
                return None
            d = d[p]
        return d
    def add(name, v, unit):
        rows.append((name, "n/a" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v)), unit))
    add("idle SM clock", g("idle_clock", "sm_mhz_median"), "MHz")
    add("copy 2GiB (R+W)", g("dram_bandwidth", "copy_2GiB_fp32", "GBps_read_plus_write_median"), "GB/s")
    add("fill 2GiB (W)", g("dram_bandwidth", "fill_2GiB_fp32_write_only", "GBps_median"), "GB/s")
    add("sum 2GiB bf16 (R)", g("dram_bandwidth", "sum_2GiB_bf16_read", "GBps_median"), "GB/s")
    add("amax 2GiB bf16 (R)", g("dram_bandwidth", "amax_2GiB_bf16_read", "GBps_median"), "GB/s")
    add("eager wall/op", g("launch_costs", "eager_wall_us_per_op_median"), "us")
    add("graph replay/op", g("launch_costs", "graph_replay_us_per_op_median"), "us")
    add("eager kernel dur", g("launch_costs", "profiler_eager", "duration_us_median"), "us")
    add("eager gap", g("launch_costs", "profiler_eager", "gap_us_median"), "us")
    add("graph kernel dur", g("launch_costs", "profiler_graph_replay", "duration_us_median"), "us")
    add("graph gap", g("launch_costs", "profiler_graph_replay", "gap_us_median"), "us")
    for k in ("bf16_8192", "fp16_8192", "tf32_8192", "fp32_notf32_4096", "fp8_e4m3_8192",
              "fp8_e4m3_8192_fast_accum", "bf16_1024",
              "bf16_2048", "bf16_4096"):
        add(f"mm {k}", g("matmul", k, "TFLOPs_median"), "TFLOP/s")
    add("sustained mm SM clk", g("sustained_clocks", "bf16_matmul_8192", "sm_mhz_median"), "MHz")
    add("sustained mm power", g("sustained_clocks", "bf16_matmul_8192", "power_w_median"), "W")
    add("sustained mm TFLOP/s", g("sustained_clocks", "bf16_matmul_8192", "TFLOPs_sustained"), "TFLOP/s")
    add("sustained add SM clk", g("sustained_clocks", "elementwise_add_1GiB", "sm_mhz_median"), "MHz")
    add("sustained add GB/s", g("sustained_clocks", "elementwise_add_1GiB", "GBps_sustained"), "GB/s")
    add("sustained sin SM clk", g("sustained_clocks", "sin_32MiB", "sm_mhz_median"), "MHz")
    print("\n==== hw_probe summary (%s: %s) ====" % (ARGS.gpu, RESULTS.get("provenance", {}).get("device_name")))
    for n, v, u in rows:
        print(f"{n:24s} {v:>12s} {u}")
    print(f"errors: {len(ERRORS)}")
    for e in ERRORS:
        print("  ", e["section"], e["error"][:200])


def main():
    global ARGS, SAMPLER
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ARGS = ap.parse_args()
    os.makedirs(ARGS.out, exist_ok=True)
    torch.manual_seed(0)
    torch.cuda.init()
    torch.ones(1, device="cuda")
    RESULTS["provenance"] = provenance()
    flush()
    SAMPLER = NvmlSampler(0.02)
    nvml_static()
    idle_clock()
    torch_device()
    dram_bandwidth()
    launch_costs()
    matmul()
    sustained_clocks()
    flush()
    summary()


if __name__ == "__main__":
    main()
