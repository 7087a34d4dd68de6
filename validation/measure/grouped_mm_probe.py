#!/usr/bin/env python3
"""grouped_mm_probe.py: how fast is torch._grouped_mm at decode, by experts hit and rows?

HF's MoE decodes (transformers 5, grouped_mm experts path) run one grouped GEMM over all E
experts with the token-expert pairs sorted by expert; experts with no rows cost nothing. In the
HF model cases gpusim's grouped kernel is 7-24% fast at one token a step, where the experts hit
are exactly top_k. This probe times the grouped kernel alone (profiler kernel time, the 256 MiB
flush before each run, as the op sets) for the expert shapes of Qwen3-MoE, DeepSeek-V2-Lite and
Mixtral, with 1 to 64 experts hit and 1 or 4 rows each (the hit experts spread evenly over E),
A [rows, K] bf16 and the experts' weights [E, N, K] bf16 passed transposed, as transformers
does. Median of 15 runs after 3 warm-ups.

Usage (GPU machine, repository root):
  python3 validation/measure/grouped_mm_probe.py --out $OUT
Writes $OUT/grouped_mm_<gpu>.json.
  GROUPED_MM_SET=2 python3 validation/measure/grouped_mm_probe.py --out $OUT
The second set (issue 16's twenty-second round, $OUT/grouped_mm2_<gpu>.json): every expert hit and
more rows an expert (8 to 64, still one 64-row tile; 100, two tiles, for contrast), where HF's
MoE prefills of a few hundred tokens and large decode batches run.
  GROUPED_MM_SET=3 ...: the third set ($OUT/grouped_mm3_<gpu>.json, the same round): 1 to 16 rows an
expert, every expert hit, to place where a stream of one row an expert becomes one of several.
  GROUPED_MM_SET=4 ...: the fourth set ($OUT/grouped_mm4_<gpu>.json, issue 16's twenty-fifth round):
every expert hit with one to three 64-row tiles of rows an expert, evenly (64, 65, 96, 128, 129,
192 rows) and as skewed routing leaves them (seeded draws around 64 and 128 rows on average, the
counts recorded), where HF's MoE prefills of a few hundred to a few thousand tokens run.
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_timing import probe_start, profiled_kernel_events, write_probe_result  # noqa: E402

# name: (N, K, E): the gate_up (N = 2 x expert width) and down products of each model's experts.
SHAPES = {
    "qwen3_moe_gate_up": (1536, 2048, 128),
    "qwen3_moe_down": (2048, 768, 128),
    "dsv2_lite_gate_up": (2816, 2048, 64),
    "dsv2_lite_down": (2048, 1408, 64),
    "mixtral_gate_up": (28672, 4096, 8),
    "mixtral_down": (4096, 14336, 8),
}
HITS = (1, 2, 4, 8, 16, 32, 64)
ROWS = (1, 4)
# The second set: (shape, hits, rows an expert).
SET2 = [("qwen3_moe_gate_up", (32, 64, 128), (1, 8, 16, 32, 64, 100)),
        ("qwen3_moe_down", (64, 128), (1, 8, 32, 64, 100)),
        ("dsv2_lite_gate_up", (64,), (1, 8, 32, 64)),
        ("mixtral_gate_up", (2, 8), (8, 32, 64, 100)),
        ("mixtral_down", (2, 8), (8, 32, 64))]
SET3 = [("qwen3_moe_gate_up", (128,), (1, 2, 3, 4, 6, 8, 12, 16)),
        ("qwen3_moe_down", (128,), (1, 2, 4, 8)),
        ("dsv2_lite_gate_up", (64,), (1, 2, 4, 8)),
        ("mixtral_gate_up", (8,), (1, 2, 3, 4, 6, 8, 16)),
        ("mixtral_down", (8,), (1, 2, 4, 8))]
# The fourth set: (shape, rows an expert given evenly); each shape also runs SKEWED draws.
SET4_EVEN = (64, 65, 96, 128, 129, 192)
# (mean rows an expert, Dirichlet concentration: lower is more skewed), drawn with a fixed seed.
SET4_SKEWED = ((64, 8.0), (64, 2.0), (128, 8.0), (128, 2.0))
SET4_SEED = 25
WARMUP, REPS = 3, 15


def skewed_counts(experts, mean, alpha, gen):
    """experts x mean token-expert pairs spread as a router's uneven shares would: multinomial
    over Dirichlet(alpha) shares."""
    shares = torch.distributions.Dirichlet(torch.full((experts,), alpha)).sample()
    return torch.multinomial(shares, experts * mean, replacement=True, generator=gen).bincount(
        minlength=experts).tolist()


def kernel_times(op, flush, runs):
    """The kernels of `runs` runs of `op`, each after `flush()` (whose own kernel is left out):
    name -> durations (us), grid and block."""
    def run():
        for _ in range(runs):
            flush()
            op()
    out = {}
    for e in profiled_kernel_events(run):
        if "zero" in e["name"].lower() or "fill" in e["name"].lower():  # the flush
            continue
        k = out.setdefault(e["name"], {"us": [], "grid": e["args"].get("grid"), "block": e["args"].get("block")})
        k["us"].append(e["dur"])
    return out


def main():
    out, buf = probe_start()
    dev, bf = "cuda", torch.bfloat16

    def flush():
        buf.zero_()

    rows = []
    which = os.environ.get("GROUPED_MM_SET", "1")
    plan = SET2 if which == "2" else SET3 if which == "3" else [(name, HITS, ROWS) for name in SHAPES]
    if which == "4":
        torch.manual_seed(SET4_SEED)
        gen = torch.Generator().manual_seed(SET4_SEED)
        plan = []
        for name, (n, k, experts) in SHAPES.items():
            cases = [("even", [per] * experts) for per in SET4_EVEN]
            cases += [(f"skewed mean {mean} alpha {alpha}", skewed_counts(experts, mean, alpha, gen))
                      for mean, alpha in SET4_SKEWED]
            plan.append((name, None, cases))
    for name, hits, per_expert in plan:
        n, k, experts = SHAPES[name]
        w = torch.randn(experts, n, k, device=dev, dtype=bf) * 0.02
        launches = []  # (hit, rows an expert or its routing's name, counts)
        for hit in ((h for h in hits if h <= experts) if hits is not None else ()):
            for per in per_expert:
                counts = [0] * experts
                for j in range(hit):  # hit experts spread evenly over E
                    counts[j * experts // hit] = per
                launches.append((hit, per, counts))
        if hits is None:
            launches = [(sum(1 for c in counts if c > 0), label, counts) for label, counts in per_expert]
        for hit, per, counts in launches:
            offs = torch.tensor(counts, device=dev, dtype=torch.int32).cumsum(0, dtype=torch.int32)
            a = torch.randn(sum(counts), k, device=dev, dtype=bf)

            def op(a=a, offs=offs):
                return torch._grouped_mm(a, w.transpose(-2, -1), offs=offs)

            for _ in range(WARMUP):
                op()
            ks = kernel_times(op, flush, REPS)
            row = {"shape": name, "N": n, "K": k, "experts": experts, "hit": hit, "rows_per_expert": per,
                   "counts": counts,
                   "kernels": [{"name": kn, "grid": v["grid"], "block": v["block"],
                                "median_us": statistics.median(v["us"]), "runs": len(v["us"])}
                               for kn, v in ks.items()]}
            rows.append(row)
            main_k = max(row["kernels"], key=lambda x: x["median_us"])
            print(f"{name:18s} hit {hit:3d} x {per} rows: {main_k['median_us']:8.2f} us "
                  f"({len(row['kernels'])} kernels)", flush=True)
        del w
        torch.cuda.empty_cache()
    method = ("torch._grouped_mm(A [hit x rows, K] bf16, W [E, N, K] bf16 transposed, offs) with `hit` "
              "experts of E given `rows_per_expert` rows each (spread evenly over E), the rest none (set 4: "
              "every expert, `counts` rows each); "
              "each run after a 256 MiB zero_() (the op sets' flush); PyTorch profiler kernel times, "
              "median of 15 runs after 3 warm-ups, per kernel")
    tool = "grouped_mm_probe" if which == "1" else f"grouped_mm{which}_probe"
    write_probe_result(out, tool, method, rows,
                       sm_count=torch.cuda.get_device_properties(0).multi_processor_count)


if __name__ == "__main__":
    main()
