#!/usr/bin/env python3
"""tp_steps.py: tensor-parallel transformer steps on one machine (issue 20).

One process a GPU (torchrun). Llama-3-8B- and Llama-3-70B-shaped decoder layers (random bf16
weights, `--layers` of them) split the Megatron way over the world: QKV and gate/up
column-parallel, o_proj and down row-parallel, one all-reduce after attention and one after the
MLP (torch.distributed, NCCL; NVLink multicast off). Per layer: RMSNorm, the QKV projection,
RoPE, SDPA (prefill: causal over the prompt; decode: one query token against a contiguous KV
cache of exactly the stated length, preallocated as static-cache engines keep it, so no
torch.cat), o_proj, all-reduce, residual, RMSNorm, gate/up, SiLU x up, down, all-reduce,
residual. Prefill and decode at two batch sizes each.

Per case: the step time (all layers, between CUDA events after a barrier; median of `reps`
after warm-up) on every rank, eager and (--graph) replayed from a CUDA graph, and rank 0's kernels of one step from torch.profiler (name, launches,
summed duration; the all-reduce kernels' time includes waiting for the other ranks).

Usage (GPU machine, repository root):
  torchrun --standalone --nproc_per_node=N validation/measure/tp_steps.py --gpu h100 --out $OUT [--graph]
Writes $OUT/tp_steps_<gpu>_tp<N>.json.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

MODELS = {
    "llama3-8b": dict(d=4096, heads=32, kv_heads=8, head_dim=128, d_ff=14336, eps=1e-5, theta=500000.0),
    "llama3-70b": dict(d=8192, heads=64, kv_heads=8, head_dim=128, d_ff=28672, eps=1e-5, theta=500000.0),
}
CASES = [("prefill", 1, 1024), ("prefill", 8, 1024), ("decode", 1, 2048), ("decode", 32, 2048)]


def make_layer(m, n, dev, dtype):
    import torch
    hq, hkv, hd = m["heads"] // n, m["kv_heads"] // n, m["head_dim"]
    g = torch.Generator(device=dev).manual_seed(1)
    def w(rows, cols):
        return (torch.randn(rows, cols, generator=g, device=dev, dtype=torch.float32) * 0.02).to(dtype)
    return dict(norm1=torch.ones(m["d"], device=dev, dtype=dtype), norm2=torch.ones(m["d"], device=dev, dtype=dtype),
                qkv=w((hq + 2 * hkv) * hd, m["d"]), o=w(m["d"], hq * hd),
                gate_up=w(2 * (m["d_ff"] // n), m["d"]), down=w(m["d"], m["d_ff"] // n), hq=hq, hkv=hkv, hd=hd)


def rope(x, cos, sin):
    import torch
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def layer_forward(x, p, m, cos, sin, cache, phase, world):
    import torch
    import torch.nn.functional as F
    import torch.distributed as dist
    b, s, _ = x.shape
    hq, hkv, hd = p["hq"], p["hkv"], p["hd"]
    h = F.rms_norm(x, (m["d"],), p["norm1"], m["eps"])
    qkv = F.linear(h, p["qkv"])
    q, k, v = qkv.split([hq * hd, hkv * hd, hkv * hd], dim=-1)
    q = rope(q.view(b, s, hq, hd).transpose(1, 2), cos, sin)
    k = rope(k.view(b, s, hkv, hd).transpose(1, 2), cos, sin)
    v = v.view(b, s, hkv, hd).transpose(1, 2)
    if phase == "prefill":
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    else:
        kc, vc = cache
        kc[:, :, -1:] = k
        vc[:, :, -1:] = v
        a = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
    o = F.linear(a.transpose(1, 2).reshape(b, s, hq * hd), p["o"])
    if world > 1:
        dist.all_reduce(o)
    x = x + o
    h = F.rms_norm(x, (m["d"],), p["norm2"], m["eps"])
    gate, up = F.linear(h, p["gate_up"]).chunk(2, dim=-1)
    d = F.linear(F.silu(gate) * up, p["down"])
    if world > 1:
        dist.all_reduce(d)
    return x + d


def timed_us(run, reps, world):
    """Per repetition: a barrier, then `run()` between two CUDA events; microseconds."""
    import torch
    import torch.distributed as dist
    times = []
    for _ in range(reps):
        if world > 1:
            dist.barrier()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return times


def per_rank(value, world, dev):
    """Every rank's `value`, in rank order."""
    import torch
    import torch.distributed as dist
    if world == 1:
        return [value]
    t = torch.tensor([value], device=dev, dtype=torch.float64)
    gathered = [torch.zeros_like(t) for _ in range(world)]
    dist.all_gather(gathered, t)
    return [float(g.item()) for g in gathered]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--graph", action="store_true", help="also time the step replayed from a CUDA graph")
    args = ap.parse_args()
    import torch
    import torch.distributed as dist
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    if world > 1:
        dist.init_process_group("nccl", device_id=dev)
    dtype = torch.bfloat16
    rows = []
    for name, m in MODELS.items():
        if m["kv_heads"] % world or m["heads"] % world or m["d_ff"] % world:
            continue
        layers = [make_layer(m, world, dev, dtype) for _ in range(args.layers)]
        for phase, batch, length in CASES:
            s = length if phase == "prefill" else 1
            pos = torch.arange(length - s, length, device=dev, dtype=torch.float32)
            inv = 1.0 / (m["theta"] ** (torch.arange(0, m["head_dim"], 2, device=dev, dtype=torch.float32) / m["head_dim"]))
            ang = torch.outer(pos, inv)
            cos = torch.cat((ang.cos(), ang.cos()), dim=-1).to(dtype)
            sin = torch.cat((ang.sin(), ang.sin()), dim=-1).to(dtype)
            caches = None
            if phase == "decode":
                hkv = m["kv_heads"] // world
                caches = [(torch.randn(batch, hkv, length, m["head_dim"], device=dev, dtype=dtype),
                           torch.randn(batch, hkv, length, m["head_dim"], device=dev, dtype=dtype)) for _ in layers]
            x0 = torch.randn(batch, s, m["d"], device=dev, dtype=dtype) * 0.1

            def step():
                x = x0
                for i, p in enumerate(layers):
                    x = layer_forward(x, p, m, cos, sin, caches[i] if caches else None, phase, world)
                return x

            with torch.no_grad():
                for _ in range(3):
                    step()
                torch.cuda.synchronize()
                times = timed_us(step, args.reps, world)
                kernels = {}
                from torch.profiler import profile, ProfilerActivity
                if world > 1:
                    dist.barrier()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    step()
                    torch.cuda.synchronize()
                for e in prof.events():
                    if getattr(e.device_type, "name", "") == "CUDA":
                        k = kernels.setdefault(e.name, {"launches": 0, "us": 0.0})
                        k["launches"] += 1
                        k["us"] += getattr(e, "device_time", 0.0)
                # The same step replayed from a CUDA graph (the collectives captured too): the GPU's
                # time without the host's launches, which bound the eager decode steps.
                graph_times = []
                if args.graph:
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):
                        step()
                    torch.cuda.current_stream().wait_stream(side)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        step()
                    for _ in range(3):
                        graph.replay()
                    graph_times = timed_us(graph.replay, args.reps, world)
                    del graph
            all_med = per_rank(statistics.median(times), world, dev)
            graph_med = per_rank(statistics.median(graph_times), world, dev) if graph_times else []
            row = dict(model=name, phase=phase, batch=batch, length=length, tp=world, layers=args.layers,
                       step_us_per_rank=all_med, step_us=max(all_med), step_us_reps_rank0=times,
                       graph_step_us_per_rank=graph_med, graph_step_us=max(graph_med) if graph_med else None,
                       kernel_us_rank0=sum(k["us"] for k in kernels.values()),
                       kernels_rank0=[dict(name=k, **v) for k, v in sorted(kernels.items(), key=lambda kv: -kv[1]["us"])])
            rows.append(row)
            if rank == 0:
                graph_text = f"graph {max(graph_med):9.1f} us  " if graph_med else ""
                print(f"{name:11s} {phase:7s} b={batch:3d} len={length:5d} tp={world}  step {max(all_med):9.1f} us  {graph_text}"
                      f"kernels(rank0) {row['kernel_us_rank0']:9.1f} us", flush=True)
        del layers
        torch.cuda.empty_cache()
    if rank == 0:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
        topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout
        doc = dict(provenance=dict(gpu_arg=args.gpu, device_name=torch.cuda.get_device_name(dev), gpus=world,
                                   torch=torch.__version__, cuda=torch.version.cuda,
                                   nccl=".".join(map(str, torch.cuda.nccl.version())), nvidia_smi=smi,
                                   env={k: os.environ[k] for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                                   "NVSHMEM_DISABLE_NVLS")},
                                   date_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                                   script="validation/measure/tp_steps.py"),
                   method=__doc__, topology=topo, rows=rows)
        path = os.path.join(args.out, f"tp_steps_{args.gpu}_tp{world}.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote", path)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
