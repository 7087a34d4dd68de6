#!/usr/bin/env python3
"""cs336_forward.py: the cs336_basics model's forward pass measured on this GPU, to check
gpusim's cs336-basics lowering (workloads/cs336_lowering.cpp) kernel for kernel.

The cs336_basics package itself cannot be installed on the measuring machines (no network, and
it needs einx, which is missing there). This script writes the same model with the same tensor
operations in plain PyTorch and einops (written for this check, following the structure of
cs336_basics/model.py and nn_utils.py, spring 2025): einsum Linear without bias, Embedding as
weight[ids], RMSNorm as x ** 2 / mean / + eps / sqrt / divide / weight multiply, RoPE on the
rearranged heads (cos / sin gathered at the positions, cos x1 - sin x2 and sin x1 + cos x2, the
halves interleaved back by a stack: einx's '(x_half (1 + 1))'), the causal mask from two aranges
and a compare in every layer, attention written out with softmax by hand (amax, subtract, exp,
sum, divide), SwiGLU with x * sigmoid(x), lm_head on every position. fp32, no autocast, as seed
002 ran it.

Per case: the kernels of one forward (PyTorch profiler: an index into the file's "names" and the
median duration over 5 profiled forwards), their summed time, and the eager wall time of a forward (CUDA events around the call, median of
--reps) with its host issue time. The first half of the cases (by order) is calibration, the
second held out; nothing is fitted to either.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/cs336_forward.py --gpu h100 --out $OUT
Writes $OUT/cs336_forward_<gpu>.json.
"""
import argparse
import importlib.util
import json
import math
import os
import statistics
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("host_costs", os.path.join(_HERE, "host_costs.py"))
hc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hc)
hf = hc.hf

# configs/models/cs336-*.yaml (seed 002's table).
MODELS = {
    "cs336-small": dict(d_model=768, layers=12, heads=12, d_ff=3072),
    "cs336-medium": dict(d_model=1024, layers=24, heads=16, d_ff=4096),
    "cs336-large": dict(d_model=1280, layers=36, heads=20, d_ff=5120),
}
VOCAB, THETA = 10000, 10000.0
NAMES = {}  # kernel name -> index in the output's "names" (the names are long templates)
CASES = [("cs336-small", 4, 128), ("cs336-small", 4, 512), ("cs336-medium", 4, 256), ("cs336-large", 4, 128),
         ("cs336-small", 4, 256), ("cs336-small", 4, 1024), ("cs336-medium", 4, 128), ("cs336-medium", 4, 512),
         ("cs336-large", 4, 256)]


def build(name, context):
    import torch
    import torch.nn as nn
    from einops import einsum, rearrange
    cfg = MODELS[name]
    d, H, F = cfg["d_model"], cfg["heads"], cfg["d_ff"]
    dk = d // H

    class Linear(nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(o, i) * (2.0 / (i + o)) ** 0.5)

        def forward(self, x):
            return einsum(x, self.weight, "... d_in, d_out d_in -> ... d_out")

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            in_dtype = x.dtype
            x = x.to(torch.float32)
            rms = torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + 1e-5)
            x = x / rms
            return (self.weight * x).to(in_dtype)

    inv = THETA ** -(torch.arange(0, dk, 2).float() / dk)
    freqs = torch.outer(torch.arange(context).float(), inv)
    cache = torch.stack((freqs.cos(), freqs.sin()))  # [2, context, dk / 2]

    def rope(x, pos):
        x1, x2 = rearrange(x, "... (half_d xy) -> xy ... half_d", xy=2)
        cos, sin = cache_dev[:, pos, :]
        x1_rot = cos * x1 - sin * x2
        x2_rot = sin * x1 + cos * x2
        return torch.stack((x1_rot, x2_rot), dim=-1).flatten(-2)

    def softmax(x, dim=-1):
        shifted = x - torch.amax(x, dim=dim, keepdim=True)
        e = torch.exp(shifted)
        return e / torch.sum(e, dim=dim, keepdim=True)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj, self.k_proj, self.v_proj, self.output_proj = (Linear(d, d) for _ in range(4))

        def forward(self, x):
            S = x.size(-2)
            Q, K, V = self.q_proj(x), self.k_proj(x), self.v_proj(x)
            Q, K, V = (rearrange(t, "... seq (heads d) -> ... heads seq d", heads=H) for t in (Q, K, V))
            pos = torch.arange(S, device=x.device)
            Q, K = rope(Q, pos), rope(K, pos)
            seq = torch.arange(S, device=x.device)
            mask = seq[None, None, :, None] >= seq[None, None, None, :]
            scores = einsum(Q, K, "... q d, ... k d -> ... q k") / math.sqrt(dk)
            scores = torch.where(mask, scores, float("-inf"))
            out = einsum(softmax(scores), V, "... q k, ... k d -> ... q d")
            return self.output_proj(rearrange(out, "b h s d -> b s (h d)").contiguous())

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = RMSNorm(), Attention(), RMSNorm()
            self.w1, self.w2, self.w3 = Linear(d, F), Linear(F, d), Linear(d, F)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            h = self.ln2(x)
            g = self.w1(h)
            return x + self.w2(g * torch.sigmoid(g) * self.w3(h))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Parameter(torch.randn(VOCAB, d))
            self.layers = nn.ModuleList(Block() for _ in range(cfg["layers"]))
            self.ln_final, self.lm_head = RMSNorm(), Linear(d, VOCAB)

        def forward(self, ids):
            x = self.emb[ids]
            for b in self.layers:
                x = b(x)
            return self.lm_head(self.ln_final(x))

    model = LM().cuda()
    cache_dev = cache.cuda()
    return model


def measure(name, B, S, reps):
    import torch
    from torch.profiler import profile, ProfilerActivity
    model = build(name, max(S, 1024))
    ids = torch.randint(0, VOCAB, (B, S), device="cuda")
    with torch.no_grad():
        for _ in range(3):
            model(ids)
        torch.cuda.synchronize()
        _, _, hosts, walls = hc.timed_host(lambda: model(ids), reps)
        per_rep = []
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                model(ids)
                torch.cuda.synchronize()
        kernels = [e for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")]
    n = len(kernels) // 5
    reps_k = [kernels[i * n:(i + 1) * n] for i in range(5)]
    first = reps_k[0]
    rows = []  # [index into the file's names, median duration us]
    for i, k in enumerate(first):
        durs = [r[i].device_time if hasattr(r[i], "device_time") else r[i].cuda_time for r in reps_k]
        if k.name not in NAMES:
            NAMES[k.name] = len(NAMES)
        rows.append([NAMES[k.name], round(statistics.median(durs), 3)])
    sums = [sum((k.device_time if hasattr(k, "device_time") else k.cuda_time) for k in r) for r in reps_k]
    del model
    torch.cuda.empty_cache()
    return {"n_kernels": n, "kernel_time_us_median": statistics.median(sums), "wall_us": statistics.median(walls),
            "host_us": statistics.median(hosts), "wall_us_all": walls, "host_us_all": hosts, "kernels": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    prov = hf.provenance(a.gpu)
    prov.update(script="validation/measure/cs336_forward.py", python=sys.version.split()[0], torch=torch.__version__)
    result = {"provenance": prov, "method": __doc__, "cases": [], "errors": []}
    os.makedirs(a.out, exist_ok=True)
    for i, (name, B, S) in enumerate(CASES):
        try:
            r = measure(name, B, S, a.reps)
            r.update(id=f"{name}_b{B}_s{S}", model=name, batch=B, seq_len=S,
                     split="calibration" if i < len(CASES) // 2 else "holdout")
            result["cases"].append(r)
            print(f"{r['id']:24s} kernels {r['n_kernels']:5d} kernel {r['kernel_time_us_median']:10.1f} us  "
                  f"wall {r['wall_us']:10.1f} us  host {r['host_us']:10.1f} us", flush=True)
        except Exception as e:
            result["errors"].append({"case": f"{name}_b{B}_s{S}", "error": f"{type(e).__name__}: {e}"[:400]})
            print("ERROR", result["errors"][-1], flush=True)
        result["names"] = list(NAMES)
        with open(os.path.join(a.out, f"cs336_forward_{a.gpu}.json"), "w") as f:
            json.dump(result, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
