#!/usr/bin/env python3
"""nccl_collectives.py: NCCL collectives through PyTorch on one machine (issue 20).

One process a GPU (torchrun). For all-reduce, all-gather, reduce-scatter and all-to-all in bf16,
message sizes 4 KiB to 1 GiB (powers of 4): the time per call, as nccl-tests measures it (a
barrier, then `iters` calls back to back between two CUDA events, divided by `iters`; five such
repetitions, the median kept), with nccl-tests' algorithm and bus bandwidths. The size is the
all-reduce's tensor, the all-gather's output, the reduce-scatter's input and the all-to-all's
per-rank buffer. Rank 0 also records the kernels of one call at a few sizes with torch.profiler
(name, grid, block, registers, shared memory, duration; every rank runs that call), the machine's topology (nvidia-smi topo -m) and a large
peer-to-peer copy's bandwidth between GPU 0 and GPU 1. NVLink multicast stays off
(NCCL_NVLS_ENABLE=0), as the machines' documentation requires.

With --graph, each size is also timed as `iters` calls captured in one CUDA graph and replayed
(`graph_us`: a replay's time divided by `iters`, median of five replays after three warm-up
replays; a barrier before each): the GPU's time per call without Python's launch of each call,
which bounds the eager loop below a few MiB (40-70 us a call).

With --half-sizes, the sizes lie halfway between (8 KiB to 512 MiB, 2 x 4^k KiB); with
--third-sizes, at 3 x 4^k KiB (12 KiB to 768 MiB): fresh sets of shapes for held-out comparisons.

Usage (GPU machine, repository root):
  torchrun --standalone --nproc_per_node=N validation/measure/nccl_collectives.py --gpu h100 --out $OUT [--graph] [--half-sizes | --third-sizes]
Writes $OUT/nccl_<gpu>x<N>.json (nccl_<gpu>x<N>_graph.json with --graph, ..._half.json with --half-sizes).
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

SIZES = [4 ** k * 1024 for k in range(1, 11)]  # 4 KiB .. 1 GiB
HALF_SIZES = [2 * 4 ** k * 1024 for k in range(1, 10)]  # 8 KiB .. 512 MiB
THIRD_SIZES = [3 * 4 ** k * 1024 for k in range(1, 10)]  # 12 KiB .. 768 MiB
OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
PROFILED_SIZES = (64 * 1024, 1024 ** 2, 64 * 1024 ** 2, 1024 ** 3)


def bus_factor(op, n):
    if n == 1:
        return 1.0
    return 2.0 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def make_call(op, size, n, dev):
    import torch
    import torch.distributed as dist
    elems = size // 2
    if op == "all_reduce":
        t = torch.ones(elems, dtype=torch.bfloat16, device=dev)
        return lambda: dist.all_reduce(t)
    if op == "all_gather":
        out = torch.empty(elems, dtype=torch.bfloat16, device=dev)
        inp = torch.ones(max(1, elems // n), dtype=torch.bfloat16, device=dev)
        out = out[: inp.numel() * n]
        return lambda: dist.all_gather_into_tensor(out, inp)
    if op == "reduce_scatter":
        inp = torch.ones(elems - elems % n, dtype=torch.bfloat16, device=dev)
        out = torch.empty(inp.numel() // n, dtype=torch.bfloat16, device=dev)
        return lambda: dist.reduce_scatter_tensor(out, inp)
    inp = torch.ones(elems - elems % n, dtype=torch.bfloat16, device=dev)
    out = torch.empty_like(inp)
    return lambda: dist.all_to_all_single(out, inp)


def iters_for(size):
    return 50 if size <= 1024 ** 2 else 20 if size <= 64 * 1024 ** 2 else 5


def timed_reps(run, iters):
    """Five repetitions of a barrier, then `run()` between two CUDA events: us per call, median."""
    import torch
    import torch.distributed as dist
    reps = []
    for _ in range(5):
        dist.barrier()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        run()
        e1.record()
        torch.cuda.synchronize()
        reps.append(e0.elapsed_time(e1) * 1000.0 / iters)
    return statistics.median(reps), reps, iters


def time_call(call, size):
    """`iters` calls back to back from Python."""
    import torch
    iters = iters_for(size)
    for _ in range(5):
        call()
    torch.cuda.synchronize()

    def loop():
        for _ in range(iters):
            call()
    return timed_reps(loop, iters)


def time_graph(call, size):
    """`iters` calls captured in one CUDA graph (the collectives too), replayed: us per call."""
    import torch
    iters = iters_for(size)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()  # warm-up outside the capture (NCCL's communicator and buffers)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            call()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    result = timed_reps(graph.replay, iters)
    del graph
    return result


def profile_call(call, keep):
    """The kernels of one call, from the profiler's Chrome trace: name, grid, block, registers,
    shared memory and duration (us). Every rank runs it (a collective); only `keep` exports."""
    import tempfile
    import torch
    from torch.profiler import profile, ProfilerActivity
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    if not keep:
        return None
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        with open(f.name) as g:
            trace = json.load(g)
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            out.append({"name": e.get("name"), "us": e.get("dur"), "grid": a.get("grid"), "block": a.get("block"),
                        "regs": a.get("registers per thread"), "smem": a.get("shared memory")})
    return out


def topology(n):
    import torch
    info = {}
    try:
        info["nvidia_smi_topo"] = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout
    except Exception as e:  # noqa
        info["nvidia_smi_topo"] = f"failed: {e}"
    if n >= 2:
        src = torch.ones(1024 ** 3 // 2, dtype=torch.bfloat16, device="cuda:0")
        dst = torch.empty_like(src, device="cuda:1")
        for _ in range(3):
            dst.copy_(src)
        torch.cuda.synchronize("cuda:0")
        torch.cuda.synchronize("cuda:1")
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(5):
            dst.copy_(src)
        e1.record()
        torch.cuda.synchronize("cuda:0")
        torch.cuda.synchronize("cuda:1")
        info["p2p_copy_gb_per_s"] = 5 * 1024 ** 3 / (e0.elapsed_time(e1) / 1000.0) / 1e9
        del src, dst
    return info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--graph", action="store_true", help="also time each size as calls replayed from a CUDA graph")
    ap.add_argument("--half-sizes", action="store_true", help="sizes halfway between the default ones (8 KiB .. 512 MiB)")
    ap.add_argument("--third-sizes", action="store_true", help="sizes of 3 x 4^k KiB (12 KiB .. 768 MiB)")
    a = ap.parse_args()
    import torch
    import torch.distributed as dist
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    n = dist.get_world_size()
    dev = torch.device("cuda", local)
    rows = []
    for op in OPS:
        for size in HALF_SIZES if a.half_sizes else THIRD_SIZES if a.third_sizes else SIZES:
            call = make_call(op, size, n, dev)
            t, reps, iters = time_call(call, size)
            # Every rank takes part in the profiled call (it is a collective); rank 0 keeps it.
            kernels = profile_call(call, rank == 0) if size in PROFILED_SIZES else None
            row = {"op": op, "bytes": size, "ranks": n, "us": t, "us_reps": reps, "iters": iters,
                   "algbw_gb_per_s": size / (t * 1e-6) / 1e9,
                   "busbw_gb_per_s": size / (t * 1e-6) / 1e9 * bus_factor(op, n)}
            if kernels is not None:
                row["kernels"] = kernels
            if a.graph:
                g, greps, giters = time_graph(call, size)
                row.update({"graph_us": g, "graph_us_reps": greps, "graph_iters": giters,
                            "graph_busbw_gb_per_s": size / (g * 1e-6) / 1e9 * bus_factor(op, n)})
            rows.append(row)
            if rank == 0:
                graph_text = f"  graph {row['graph_us']:10.1f} us" if a.graph else ""
                print(f"{op:15s} {size:>12d} B {t:10.1f} us busbw {row['busbw_gb_per_s']:7.1f} GB/s{graph_text}", flush=True)
            del call
            torch.cuda.empty_cache()
    dist.barrier()
    if rank == 0:
        import torch.cuda.nccl as nccl
        out = {"provenance": {"gpu_arg": a.gpu, "device_name": torch.cuda.get_device_name(0), "gpus": n,
                              "torch": torch.__version__, "cuda": torch.version.cuda,
                              "nccl": ".".join(str(x) for x in nccl.version()),
                              "nvidia_smi": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                                            "--format=csv,noheader"], capture_output=True,
                                                           text=True).stdout.strip(),
                              "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                                     "NVSHMEM_DISABLE_NVLS")},
                              "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                              "script": "validation/measure/nccl_collectives.py"},
               "method": __doc__, "topology": topology(n), "rows": rows}
        os.makedirs(a.out, exist_ok=True)
        name = f"nccl_{a.gpu}x{n}{'_graph' if a.graph else ''}{'_half' if a.half_sizes else ''}{'_third' if a.third_sizes else ''}.json"
        with open(os.path.join(a.out, name), "w") as f:
            json.dump(out, f)
        print(f"wrote {name}; p2p {out['topology'].get('p2p_copy_gb_per_s')}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
