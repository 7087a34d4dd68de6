#!/usr/bin/env python3
"""host_costs.py: what eager PyTorch costs the host, for issue 21's host model.

Two parts, both on the GPU machine whose host CPU they characterize:

 1. ops: the host time per call of single eager ops on tiny tensors (the GPU keeps up, so the
    host is the bottleneck): N back-to-back calls timed with time.perf_counter, no sync inside,
    one sync after; plus ops that launch no kernel (view, transpose, ...), an empty nn.Module
    call, and a sync (.item()). Also the kernels each op launches (profiler, one call).
 2. layers: Hugging Face models (transformers 5, sdpa, bf16, random weights) built from the
    configs of the measured cases (validation/data/hf_configs/) with 1, 2 and 4 decoder layers,
    a decode step (B=1, 16 cached tokens) and a prefill (B=1, S=16): host issue time of one
    forward (perf_counter from a synced start to the return of forward, no sync), its wall time
    (CUDA events around it, synced), and its kernel count (profiler). The slope over layers is
    the host cost of a decoder layer; the intercept the forward's fixed host cost (embedding,
    masks, cache bookkeeping, lm_head).

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/host_costs.py --gpu h100 --out $OUT
  options: --only REGEX (families), --reps N (default 30), --skip-ops, --skip-layers
Writes $OUT/host_costs_<gpu>.json.
"""
import argparse
import glob
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
_spec = importlib.util.spec_from_file_location("hf_models", os.path.join(_HERE, "hf_models.py"))
hf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hf)

# One measured case's config per family (the first, by file name).
DROP_KEYS = {"architectures", "transformers_version", "dtype", "torch_dtype", "model_type", "_name_or_path"}


def family_configs(only):
    """Per model_type, the measured case's config with the smallest hidden size (the GPU work of
    a layer is then small beside its host cost)."""
    best = {}
    for path in sorted(glob.glob(os.path.join(_ROOT, "validation", "data", "hf_configs", "*.json"))):
        cfg = json.load(open(path))
        mt = cfg.get("model_type")
        base = os.path.basename(path).split("_")[0]
        if only and not re.search(only, base):
            continue
        width = cfg.get("hidden_size") or cfg.get("n_embd") or 0
        if mt not in best or width < best[mt][0]:
            best[mt] = (width, {"model_type": mt, "cfg": cfg, "source": os.path.relpath(path, _ROOT), "base": base})
    return [v[1] for _, v in sorted(best.items())]


def with_layers(cfg, n):
    out = {k: v for k, v in cfg.items() if k not in DROP_KEYS}
    key = "n_layer" if "n_layer" in out else "num_hidden_layers"
    old = out[key]
    out[key] = n
    for k, v in list(out.items()):
        if isinstance(v, list) and len(v) == old and k not in ("eos_token_id",):
            out[k] = v[:n]  # per-layer lists (layer_types, ...)
    for k in ("mlp_only_layers",):
        if isinstance(out.get(k), list):
            out[k] = [i for i in out[k] if i < n]
    if "first_k_dense_replace" in out:
        out["first_k_dense_replace"] = min(out["first_k_dense_replace"], max(0, n - 1))
    return out


def timed_host(fn, reps, after=lambda: None):
    """Host issue time (us) of fn() from a synced start, without syncing before it returns, and
    its wall time (CUDA events, synced); after() restores state between calls, untimed."""
    import torch
    hosts, walls = [], []
    for _ in range(reps):
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        e1.record()
        torch.cuda.synchronize()
        hosts.append((t1 - t0) * 1e6)
        walls.append(e0.elapsed_time(e1) * 1000.0)
        del out
        after()
    return statistics.median(hosts), statistics.median(walls), hosts, walls


def kernels_of(fn):
    import torch
    from torch.profiler import profile, ProfilerActivity
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        out = fn()
        torch.cuda.synchronize()
    del out
    evs = list(prof.events())
    kernels = [e for e in evs if str(getattr(e, "device_type", "")).endswith("CUDA")]
    launches = [e for e in prof.events() if e.name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                                                       "cuLaunchKernelEx")]
    aten = [e for e in prof.events() if e.name.startswith("aten::")]
    return {"kernels": len(kernels), "launch_calls": len(launches), "aten_calls": len(aten),
            "events": len(evs)}


def measure_ops(reps):
    import torch
    import torch.nn.functional as F
    dev = "cuda"
    x = torch.randn(8, 64, device=dev, dtype=torch.bfloat16)
    w = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    q = torch.randn(1, 4, 8, 64, device=dev, dtype=torch.bfloat16)
    ids = torch.randint(0, 100, (8,), device=dev)
    emb = torch.randn(100, 64, device=dev, dtype=torch.bfloat16)
    s = torch.ones((), device=dev)
    lin = torch.nn.Linear(64, 64, device=dev, dtype=torch.bfloat16)

    class Empty(torch.nn.Module):
        def forward(self, t):
            return t

    empty = Empty()
    ops = {
        "add": lambda: torch.add(x, x),
        "mul_scalar": lambda: x * 2.0,
        "silu": lambda: F.silu(x),
        "linear": lambda: F.linear(x, w),
        "nn_linear_module": lambda: lin(x),
        "matmul": lambda: x @ w,
        "softmax": lambda: torch.softmax(x, -1),
        "layer_norm": lambda: F.layer_norm(x, (64,)),
        "rms_norm": lambda: F.rms_norm(x, (64,)),
        "sdpa": lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True),
        "cat": lambda: torch.cat([x, x], -1),
        "embedding": lambda: F.embedding(ids, emb),
        "topk": lambda: torch.topk(x, 2, dim=-1),
        "to_fp32": lambda: x.float(),
        "view": lambda: x.view(8, 4, 16),
        "transpose": lambda: x.transpose(0, 1),
        "reshape_contiguous": lambda: x.reshape(-1),
        "empty_module_call": lambda: empty(x),
        "item_sync": lambda: s.item(),
    }
    n = 2000
    out = {}
    with torch.no_grad():
        for name, fn in ops.items():
            for _ in range(50):
                fn()
            per_call = []
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                per_call.append(((t1 - t0) * 1e6 / n, (t2 - t0) * 1e6 / n))
            host = statistics.median(p[0] for p in per_call)
            total = statistics.median(p[1] for p in per_call)
            k = kernels_of(fn)
            out[name] = {"host_us_per_call": host, "wall_us_per_call": total, **k}
            print(f"op {name:20s} host {host:7.2f} us  wall {total:7.2f} us  kernels {k['kernels']}", flush=True)
    return out


def measure_layers(only, reps):
    import torch
    res = []
    for fam in family_configs(only):
        for n in (1, 2, 4):
            cfg = with_layers(fam["cfg"], n)
            row = {"family": fam["base"], "model_type": fam["model_type"], "config": fam["source"], "layers": n}
            for phase in ("decode", "prefill"):
                c = {"model_type": fam["model_type"], "cfg": cfg, "phase": phase, "batch": 1, "seq_len": 16}
                try:
                    model = hf.build_model(c)
                    with torch.no_grad():
                        run, after, _ = hf.make_phase(model, c)
                        for _ in range(5):
                            run()
                            after()

                        host, wall, hosts, walls = timed_host(run, reps, after)
                        k = kernels_of(run)
                        after()
                    row[phase] = {"host_us": host, "wall_us": wall, "host_us_all": hosts, "wall_us_all": walls, **k}
                    print(f"{fam['base']:22s} L={n} {phase:7s} host {host:9.1f} us  wall {wall:9.1f} us  kernels {k['kernels']}",
                          flush=True)
                except Exception as e:  # a family that cannot be built this way: say so, go on
                    row[phase] = {"error": f"{type(e).__name__}: {e}"[:400]}
                    print(f"{fam['base']:22s} L={n} {phase:7s} ERROR {row[phase]['error']}", flush=True)
                finally:
                    model = None
                    torch.cuda.empty_cache()
            res.append(row)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--skip-ops", action="store_true")
    ap.add_argument("--skip-layers", action="store_true")
    a = ap.parse_args()
    import torch
    import transformers
    prov = hf.provenance(a.gpu)
    prov.update(script="validation/measure/host_costs.py", cpu=platform.processor() or platform.machine(),
                python=sys.version.split()[0], torch=torch.__version__, transformers=transformers.__version__)
    try:
        prov["cpu_model"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
        prov["cpu_count"] = os.cpu_count()
        prov["cpu_governor"] = open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read().strip()
    except Exception:
        pass
    result = {"provenance": prov, "method": __doc__}
    if not a.skip_ops:
        result["ops"] = measure_ops(a.reps)
    if not a.skip_layers:
        result["layers"] = measure_layers(a.only, a.reps)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, f"host_costs_{a.gpu}.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
