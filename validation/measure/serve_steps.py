#!/usr/bin/env python3
"""serve_steps.py: kernel time of continuous-batching steps (issue 14, step level).

A minimal serving engine's forward step, in PyTorch, over a ragged batch: some sequences prefill a
chunk of their prompt against what they have cached, others decode one token against their cache.
What serving engines run, with what this PyTorch offers (no vLLM on the measuring machine):

  * the tokens of every sequence packed into one batch of T rows;
  * per layer: the residual add fused with RMSNorm, RoPE fused with the K/V write into the cache,
    SiLU-and-mul: each one function compiled by TorchInductor (dynamic shapes: one graph serves
    every T), so each is one or two Triton kernels, as serving engines' fused kernels are;
  * one QKV GEMM, o_proj, one gate/up GEMM, down_proj: cuBLAS through F.linear;
  * attention: FlashAttention-2's variable-length forward (torch.ops.aten._flash_attention_forward
    with cumulative sequence lengths), causal, over every sequence in one call: chunks against
    their cached context, decodes (one query) against their cache. PyTorch's flash kernel has no
    block table, so each sequence's K and V are contiguous in one packed cache (the new tokens
    written at each sequence's end); paged engines read the same bytes through a block table;
  * the final norm over all rows, the lm_head on the rows that sample (each decode, and each
    chunk that ends its prompt).

Random weights (bf16) of Llama-3.2-1B and Llama-3-8B shapes. Mixes are drawn with a fixed seed;
every other mix is held out. Method as op_kernels.py: warm-up, then REPS profiled steps, each
after an L2 flush (256 MiB written, in record_function("gpusim_flush")), the step in
record_function("gpusim_op"); kernel_time_us = median over steps of the summed kernel durations.
The kernels of one step (name, grid, block, registers, shared memory, duration) are kept.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/serve_steps.py --gpu h100 --out $OUT [--set 2]
Writes $OUT/serve_steps_<gpu>.json (set 1: seed 14, every other mix held out) or
$OUT/serve_steps2_<gpu>.json (set 2: seed 15, every mix held out).
"""
import argparse
import json
import os
import random
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models import LLAMA3_8B, LLAMA32_1B, provenance, summarize  # noqa: E402

WARMUP = 2
REPS = 5
FLUSH_BYTES = 256 * 1024 * 1024
MAX_KV = 160_000

MODELS = {
    "llama3.2-1b": LLAMA32_1B,
    "llama3-8b": LLAMA3_8B,
}


def draw_mixes(seed, n):
    """Ragged batches: (new_tokens, past_tokens) per sequence, prefill chunks first."""
    rng = random.Random(seed)
    mixes = []
    for i in range(n):
        kind = i % 4
        seqs = []
        if kind in (0, 2, 3):  # prefill chunks
            for _ in range(rng.randint(1, 3)):
                chunk = rng.choice([64, 128, 256, 512, 1024, 2048]) + rng.randint(0, 63)
                past = rng.choice([0, 0, 256, 1024, 4096]) + (rng.randint(0, 255) if rng.random() < 0.5 else 0)
                seqs.append([chunk, past])
        if kind in (1, 2, 3):  # decodes
            nd = rng.choice([1, 4, 16, 32, 64, 128])
            base = rng.choice([128, 512, 1024, 2048, 4096])
            for _ in range(nd):
                seqs.append([1, max(1, base + rng.randint(-base // 2, base // 2))])
        # At most MAX_KV cached tokens in all (the 8B model's cache must fit beside its weights).
        while sum(n + p for n, p in seqs) > MAX_KV and len(seqs) > 1:
            seqs.pop()
        mixes.append(seqs)
    return mixes


def build(cfg):
    import torch
    d, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim", d // H)
    F, V, L = cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    dev, dt = "cuda", torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)

    def w(*shape):
        return (torch.randn(*shape, device=dev, dtype=dt, generator=g) * 0.02)

    layers = [dict(qkv=w((H + 2 * Hkv) * D, d), o=w(d, H * D), gu=w(2 * F, d), down=w(d, F),
                   n1=torch.ones(d, device=dev, dtype=dt), n2=torch.ones(d, device=dev, dtype=dt)) for _ in range(L)]
    emb = w(V, d)
    head = emb if cfg.get("tie_word_embeddings") else w(V, d)
    inv = 1.0 / (cfg.get("rope_theta", 500000.0) ** (torch.arange(0, D, 2, device=dev, dtype=torch.float32) / D))
    pos = torch.arange(131072, device=dev, dtype=torch.float32)
    freqs = torch.outer(pos, inv)
    cos = torch.cat([freqs.cos(), freqs.cos()], dim=-1).to(dt)
    sin = torch.cat([freqs.sin(), freqs.sin()], dim=-1).to(dt)
    return dict(d=d, H=H, Hkv=Hkv, D=D, F=F, L=L, layers=layers, emb=emb, head=head, cos=cos, sin=sin,
                final=torch.ones(d, device=dev, dtype=dt), eps=cfg.get("rms_norm_eps", 1e-5))


def make_kernels(eps):
    import torch

    def add_rmsnorm(x, res, w):
        s = x + res
        h = s.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return w * h.to(x.dtype), s

    def rmsnorm(x, w):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return w * h.to(x.dtype)

    def rope_and_cache(qkv, cos_t, sin_t, pos, idx, kc, vc, H: int, Hkv: int, D: int):
        T = qkv.shape[0]
        q = qkv[:, : H * D].view(T, H, D)
        k = qkv[:, H * D: (H + Hkv) * D].view(T, Hkv, D)
        v = qkv[:, (H + Hkv) * D:].view(T, Hkv, D)
        c = cos_t[pos].unsqueeze(1)
        s = sin_t[pos].unsqueeze(1)

        def rot(x):
            x1, x2 = x[..., : D // 2], x[..., D // 2:]
            return torch.cat([-x2, x1], dim=-1)
        q = q * c + rot(q) * s
        k = k * c + rot(k) * s
        kc.index_copy_(0, idx, k)
        vc.index_copy_(0, idx, v)
        return q

    def silu_mul(gu):
        g, u = gu.chunk(2, dim=-1)
        return torch.nn.functional.silu(g) * u

    comp = lambda f: torch.compile(f, dynamic=True)  # noqa: E731
    return comp(add_rmsnorm), comp(rmsnorm), comp(rope_and_cache), comp(silu_mul)


def make_step(m, kernels):
    import torch
    import torch.nn.functional as Fn
    add_rmsnorm, rmsnorm, rope_and_cache, silu_mul = kernels
    H, Hkv, D = m["H"], m["Hkv"], m["D"]

    def step(ids, pos, cu_q, cu_k, max_q, max_k, idx, sample, kcs, vcs):
        x = Fn.embedding(ids, m["emb"])
        res = torch.zeros_like(x)
        for li, ly in enumerate(m["layers"]):
            h, res = add_rmsnorm(x, res, ly["n1"])
            qkv = Fn.linear(h, ly["qkv"])
            q = rope_and_cache(qkv, m["cos"], m["sin"], pos, idx, kcs[li], vcs[li], H, Hkv, D)
            o = torch.ops.aten._flash_attention_forward(q, kcs[li], vcs[li], cu_q, cu_k, max_q, max_k, 0.0, True,
                                                        False)[0]
            x = Fn.linear(o.reshape(o.shape[0], H * D), ly["o"])
            h, res = add_rmsnorm(x, res, ly["n2"])
            x = Fn.linear(silu_mul(Fn.linear(h, ly["gu"])), ly["down"])
        h = rmsnorm(x + res, m["final"])
        return Fn.linear(h.index_select(0, sample), m["head"])
    return step


def inputs(m, seqs):
    import torch
    dev = "cuda"
    T = sum(n for n, _ in seqs)
    lens_k = [n + p for n, p in seqs]
    cu_q = torch.tensor([0] + list(__import__("itertools").accumulate(n for n, _ in seqs)), device=dev, dtype=torch.int32)
    cu_k = torch.tensor([0] + list(__import__("itertools").accumulate(lens_k)), device=dev, dtype=torch.int32)
    starts = [0]
    for lk in lens_k[:-1]:
        starts.append(starts[-1] + lk)
    idx = torch.cat([torch.arange(s + p, s + p + n, device=dev) for (n, p), s in zip(seqs, starts)])
    pos = torch.cat([torch.arange(p, p + n, device=dev) for n, p in seqs])
    sample = (cu_q[1:] - 1).long()
    total_k = sum(lens_k)
    kcs = [torch.randn(total_k, m["Hkv"], m["D"], device=dev, dtype=torch.bfloat16) for _ in range(m["L"])]
    vcs = [torch.randn(total_k, m["Hkv"], m["D"], device=dev, dtype=torch.bfloat16) for _ in range(m["L"])]
    ids = torch.randint(0, m["emb"].shape[0], (T,), device=dev)
    return (ids, pos, cu_q, cu_k, max(n for n, _ in seqs), max(lens_k), idx, sample, kcs, vcs)


def measure(step, args):
    import torch
    from torch.profiler import profile, ProfilerActivity, record_function
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    with torch.no_grad():
        for _ in range(WARMUP):
            step(*args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(REPS):
                with record_function("gpusim_flush"):
                    flush.zero_()
                torch.cuda.synchronize()
                with record_function("gpusim_op"):
                    step(*args)
                torch.cuda.synchronize()
    tmp = f"/tmp/serve_steps_{os.getpid()}.json"
    prof.export_chrome_trace(tmp)
    with open(tmp) as f:
        evs = json.load(f)["traceEvents"]
    os.remove(tmp)
    return summarize(evs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mixes", type=int, default=12, help="mixes per model")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--set", type=int, default=1, help="2: the fresh set (seed 15), every case held out")
    a = ap.parse_args()
    import torch
    os.makedirs(a.out, exist_ok=True)
    if a.set == 2 and a.seed == 14:
        a.seed = 15
    out = os.path.join(a.out, f"serve_steps{'' if a.set == 1 else a.set}_{a.gpu}.json")
    doc = {"provenance": dict(provenance(a.gpu), script="validation/measure/serve_steps.py", reps=REPS, seed=a.seed,
                              attention="aten::_flash_attention_forward (FlashAttention-2 varlen), packed contiguous KV",
                              fused="TorchInductor (torch.compile dynamic=True): add+RMSNorm, RoPE+cache write, SiLU-and-mul"),
           "cases": []}
    t0 = time.time()
    for mi, (name, cfg) in enumerate(MODELS.items()):
        m = build(cfg)
        kernels = make_kernels(m["eps"])
        step = make_step(m, kernels)
        for i, seqs in enumerate(draw_mixes(a.seed + mi, a.mixes)):
            case = {"id": f"{name}_mix{i:02d}", "model": name, "config": cfg, "seqs": seqs,
                    "split": "holdout" if a.set == 2 or i % 2 == 1 else "calibration"}
            try:
                r = measure(step, inputs(m, seqs))
                case.update(r)
                print(f"{case['id']:<22} {len(seqs):>4} seqs {sum(n for n, _ in seqs):>6} tokens "
                      f"{r['n_kernels']:>5} kernels {r['kernel_time_us_median']:>10.1f} us", flush=True)
            except Exception as e:  # noqa
                traceback.print_exc()
                case["error"] = repr(e)
            doc["cases"].append(case)
            with open(out, "w") as f:
                json.dump(doc, f)
            torch.cuda.empty_cache()
        del m, step, kernels
        torch.cuda.empty_cache()
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
