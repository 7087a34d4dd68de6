#!/usr/bin/env python3
"""capture_costs.py: where a fresh transformers continuous-batching engine spends a graph capture.

serve_requests.py's set 3 showed captures of large shapes costing far more than an eager forward
plus the host's recording (Llama-3-8B, 8192 queries: 1.57 s against 0.64 s modeled). This times
each capture's phases on a fresh engine serving one burst (ModelRunner._capture_graph wrapped):
the eager warm-up forward, the capture itself (torch.cuda.graph: its entry synchronizes, collects
and empties the cache), each ended by a synchronize; and the caching allocator's counters around
each (bytes reserved, device allocations and frees: cudaMalloc / cudaFree calls).

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/capture_costs.py --gpu h100 --out $OUT
Writes $OUT/capture_costs_<gpu>.json.
"""
import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models import LLAMA3_8B, LLAMA32_1B, provenance  # noqa: E402


def stats(torch):
    s = torch.cuda.memory_stats()
    return {"reserved": s.get("reserved_bytes.all.current", 0), "allocs": s.get("num_device_alloc", 0),
            "frees": s.get("num_device_free", 0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch
    from transformers import ContinuousBatchingConfig, GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.generation.continuous_batching import model_runner as mr
    from transformers.generation.continuous_batching.utils import WorkloadHints

    records = []
    orig = mr.ModelRunner._capture_graph

    def _capture_graph(self, forward_fn, compute_stream, *a):
        torch.cuda.synchronize()
        io = self.inputs_and_outputs
        rec = {"q": int(io.num_q_tokens), "kv": int(io.max_kv_read), "before": stats(torch)}
        t0 = time.perf_counter()
        with torch.cuda.stream(compute_stream), mr.mem_pool_ctx(self.mem_pool):
            forward_fn(*a)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        rec["after_warmup"] = stats(torch)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=compute_stream, pool=self.graph_pool_id, capture_error_mode="thread_local"):
            forward_fn(*a)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        rec["after_capture"] = stats(torch)
        io.set_graph(graph)
        rec.update(warmup_ms=(t1 - t0) * 1e3, capture_ms=(t2 - t1) * 1e3)
        records.append(rec)
        print(f"  capture q={rec['q']} kv={rec['kv']}: warm-up {rec['warmup_ms']:.1f} ms, capture "
              f"{rec['capture_ms']:.1f} ms, reserved "
              f"{(rec['after_capture']['reserved'] - rec['before']['reserved']) / 2**20:.0f} MiB, device allocs "
              f"{rec['after_capture']['allocs'] - rec['before']['allocs']}, frees "
              f"{rec['after_capture']['frees'] - rec['before']['frees']}", flush=True)

    mr.ModelRunner._capture_graph = _capture_graph
    out = {"provenance": provenance(args.gpu), "runs": []}
    for name, cfg in (("llama3-8b", LLAMA3_8B), ("llama3.2-1b", LLAMA32_1B)):
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = LlamaForCausalLM(LlamaConfig(**cfg)).to(torch.bfloat16).eval()
        model.set_attn_implementation("paged|sdpa")
        rng = random.Random(7)
        reqs = [(rng.randint(256, 1536), rng.randint(16, 48)) for _ in range(20)]
        gc = GenerationConfig(max_new_tokens=48, do_sample=False, eos_token_id=-1)
        hints = WorkloadHints(max_prompt_length=1536, max_generated_length=48, num_requests=20)
        manager = model.init_continuous_batching(generation_config=gc,
                                                 continuous_batching_config=ContinuousBatchingConfig(use_cuda_graph=True),
                                                 workload_hints=hints)
        manager.warmup()
        manager.start()
        records.clear()
        print(f"[{time.strftime('%H:%M:%S')}] {name}", flush=True)
        t0 = time.perf_counter()
        for i, (p, o) in enumerate(reqs):
            manager.add_request([rng.randrange(1000, 120000) for _ in range(p)], request_id=f"r{i}", max_new_tokens=o,
                                eos_token_id=-1)
        done = 0
        while done < len(reqs) and time.perf_counter() - t0 < 300:
            r = manager.get_result(timeout=1)
            if r is not None and r.is_finished():
                done += 1
        manager.stop(block=True, timeout=30)
        out["runs"].append({"model": name, "requests": reqs, "captures": list(records)})
        del manager, model
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, f"capture_costs_{args.gpu}.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
