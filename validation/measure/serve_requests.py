#!/usr/bin/env python3
"""serve_requests.py: request-level serving measurements of Hugging Face transformers' continuous
batching (issue 14, request level).

transformers 5.17's ContinuousBatchingManager (what `generate_batch` drives) serves request mixes
on a model of Llama-3.2-1B or Llama-3-8B shape with random bf16 weights, `paged|sdpa` attention
(flash-attn is not installed where we measure, so the engine's varlen path runs SDPA with a
block-diagonal additive mask over the packed batch). Requests are added from the main thread at
their arrival times (all at t=0, or a seeded Poisson stream); each records its token timestamps
(`record_timestamps=True`). The engine is configured as `generate_batch` configures it (workload
hints from the mix: request count, longest prompt plus output).

Protocols: sets 1 and 2 serve each mix once unlogged and keep the second run (warm-pass: its
graphs captured); set 3 keeps the first run on a fresh engine (fresh: graphs captured as their
shapes first appear). Steps that captured a graph are marked.

Engine configurations (`--configs`):
  eager   the engine's defaults for paged|sdpa: no CUDA graphs, no compilation (an attention
          mask is needed, so transformers turns both off); host-bound, so only the first 1B mix
          of a set runs it;
  graphs  use_cuda_graph=True: each padded (queries, keys) shape is captured once and replayed
          (queries padded to 64 tokens, keys to 16,384: the engine's default intervals). Every
          mix runs twice and the second run is kept, so the graphs of its shapes already exist,
          as on a server that has run a while.

Each engine step is logged (the engine's own methods wrapped, nothing changed): its scheduled
requests (query tokens, cached tokens), the padded sizes, host times at the start of scheduling,
after the batch's tensors are prepared, after the forward is launched, and after the new tokens
are read back; and the GPU time between CUDA events recorded on the compute stream around the
forward. A separate profiled run of the first mix of each configuration (torch.profiler) gives
each step's summed kernel time and its kernels.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/serve_requests.py --gpu h100 --out $OUT [--set 1]
Writes $OUT/serve_requests<set>_<gpu>.json.
"""
import argparse
import gzip
import json
import os
import random
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models import LLAMA3_8B, LLAMA32_1B, provenance  # noqa: E402

MODELS = {"llama3.2-1b": LLAMA32_1B, "llama3-8b": LLAMA3_8B}

# Request mixes: (name, model, count, arrival, rate, prompt range, output range, configs). Seeds
# differ by set. The eager configuration is host-bound and slow (about 25 us of host per kernel):
# it serves the first 1B mix of each set only.
MIXES = {
    1: [
        ("burst-short", "llama3.2-1b", 32, "all-at-once", 0, (64, 512), (32, 256), "eager,graphs"),
        ("burst-long", "llama3.2-1b", 16, "all-at-once", 0, (1024, 4096), (16, 128), "graphs"),
        ("poisson-8", "llama3.2-1b", 48, "poisson", 8.0, (128, 1024), (32, 192), "graphs"),
        ("burst-8b", "llama3-8b", 24, "all-at-once", 0, (128, 1024), (32, 160), "graphs"),
        ("poisson-8b", "llama3-8b", 32, "poisson", 4.0, (256, 2048), (32, 128), "graphs"),
    ],
    2: [
        ("burst-mid", "llama3.2-1b", 24, "all-at-once", 0, (256, 2048), (32, 192), "eager,graphs"),
        ("poisson-12", "llama3.2-1b", 64, "poisson", 12.0, (64, 768), (32, 160), "graphs"),
        ("burst-8b-long", "llama3-8b", 12, "all-at-once", 0, (1024, 3072), (16, 96), "graphs"),
        ("poisson-8b", "llama3-8b", 40, "poisson", 6.0, (128, 1024), (32, 128), "graphs"),
    ],
    # Set 3 runs each mix once on a fresh engine (the fresh protocol): graphs are captured as
    # their shapes first appear, as generate_batch's users get them.
    3: [
        ("burst-s3", "llama3.2-1b", 40, "all-at-once", 0, (64, 1024), (16, 192), "eager,graphs"),
        ("poisson-10", "llama3.2-1b", 60, "poisson", 10.0, (64, 1024), (32, 160), "graphs"),
        ("burst-8b-s3", "llama3-8b", 20, "all-at-once", 0, (256, 1536), (32, 128), "graphs"),
        ("poisson-5-8b", "llama3-8b", 36, "poisson", 5.0, (128, 1536), (32, 128), "graphs"),
    ],
    # Set 4: each mix in its own process (run with --mixes NAME and --out a folder of its own), so
    # each pays what a fresh generate_batch script pays (cuDNN builds its attention kernels).
    4: [
        ("burst-s4", "llama3.2-1b", 32, "all-at-once", 0, (128, 1536), (16, 160), "graphs"),
        ("poisson-s4", "llama3.2-1b", 48, "poisson", 8.0, (64, 1024), (32, 128), "graphs"),
        ("burst-8b-s4", "llama3-8b", 16, "all-at-once", 0, (256, 2048), (32, 128), "graphs"),
        ("poisson-8b-s4", "llama3-8b", 30, "poisson", 4.0, (128, 1536), (32, 128), "graphs"),
    ],
    # Set 5: as set 4, on a fresh machine, the models interleaved.
    5: [
        ("burst-8b-s5", "llama3-8b", 24, "all-at-once", 0, (128, 1024), (32, 160), "graphs"),
        ("poisson-s5", "llama3.2-1b", 40, "poisson", 6.0, (128, 1536), (32, 160), "graphs"),
        ("poisson-8b-s5", "llama3-8b", 24, "poisson", 3.0, (256, 1536), (32, 128), "graphs"),
        ("burst-s5", "llama3.2-1b", 24, "all-at-once", 0, (256, 2048), (16, 128), "graphs"),
    ],
}
# Sets measured on a fresh engine; the others serve their mix once first (the warm-pass protocol:
# its graphs captured, as on a server that has run a while).
FRESH_SETS = {3, 4, 5}
# Sets whose mixes each ran in a process of their own.
OWN_PROCESS_SETS = {4, 5}


def draw_requests(seed, count, arrival, rate, prompt_range, output_range):
    rng = random.Random(seed)
    t = 0.0
    reqs = []
    for i in range(count):
        if arrival == "poisson" and i > 0:
            t += rng.expovariate(rate)
        p = rng.randint(*prompt_range)
        o = rng.randint(*output_range)
        reqs.append({"id": f"r{i}", "arrival": round(t, 6), "prompt_tokens": p, "output_tokens": o})
    return reqs


class StepLog:
    """Wraps the engine's batch processor and IO methods to log every step."""

    def __init__(self):
        self.steps = []
        self.enabled = True
        self.marker = False
        self.pending = None

    def install(self):
        import torch
        from transformers.generation.continuous_batching import continuous_api as api
        from transformers.generation.continuous_batching import input_outputs as io

        log = self
        from transformers.generation.continuous_batching import model_runner as mr
        orig_capture = mr.ModelRunner._capture_graph

        def _capture_graph(self, *a, **k):
            if log.enabled and log.pending is not None:
                log.pending["captured"] = True
            return orig_capture(self, *a, **k)

        mr.ModelRunner._capture_graph = _capture_graph
        proc = api.ContinuousBatchProcessor
        orig_prepare = proc.prepare_next_batch
        orig_step = proc._generation_step
        orig_update = proc.update_batch

        def prepare_next_batch(self):
            t0 = time.perf_counter()
            if log.marker:
                torch.cuda._sleep(1)  # a spin kernel marks the step's start in a profile
            ok = orig_prepare(self)
            if ok and log.enabled:
                log.pending["t_schedule"] = t0
                log.pending["t_prepared"] = time.perf_counter()
            return ok

        def _generation_step(self, model):
            if not log.enabled or log.pending is None:
                return orig_step(self, model)
            stream = self.inputs_and_outputs.compute_stream or torch.cuda.current_stream()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            with torch.profiler.record_function("cb_forward"):
                orig_step(self, model)
            end.record(stream)
            log.pending["t_launched"] = time.perf_counter()
            log.pending["events"] = (start, end)
            return None

        def update_batch(self):
            orig_update(self)
            if log.enabled and log.pending is not None and "t_launched" in log.pending:
                log.pending["t_updated"] = time.perf_counter()
                log.steps.append(log.pending)
            log.pending = None

        def prepare_batch_tensors(self, requests_in_batch, logits_processors, use_decode_fast_path, num_q_tokens,
                                  max_kv_read, use_padding):
            if log.enabled:
                log.pending = {
                    "seqs": [[fs.query_length, fs.state.position_offset, int(bool(fs.has_new_token))]
                             for fs in requests_in_batch],
                    "q_padded": int(num_q_tokens),
                    "kv_padded": int(max_kv_read),
                    "decode_fast_path": bool(use_decode_fast_path),
                }
            return orig_io_prepare(self, requests_in_batch, logits_processors, use_decode_fast_path, num_q_tokens,
                                   max_kv_read, use_padding)

        orig_io_prepare = io.ContinuousBatchingIOs.prepare_batch_tensors
        io.ContinuousBatchingIOs.prepare_batch_tensors = prepare_batch_tensors
        proc.prepare_next_batch = prepare_next_batch
        proc._generation_step = _generation_step
        proc.update_batch = update_batch

    def take(self, t0):
        out = []
        for s in self.steps:
            start, end = s.pop("events")
            s["gpu_event_ms"] = round(start.elapsed_time(end), 4)
            for k in ("t_schedule", "t_prepared", "t_launched", "t_updated"):
                s[k] = round(s[k] - t0, 6)
            out.append(s)
        self.steps = []
        return out


def cb_config(kind, max_batch_tokens=None):
    from transformers import ContinuousBatchingConfig
    kw = {}
    if kind == "graphs":
        kw["use_cuda_graph"] = True
    if max_batch_tokens:
        kw["max_batch_tokens"] = max_batch_tokens
    return ContinuousBatchingConfig(**kw)


def run_mix(manager, reqs, vocab, seed):
    """Adds the requests at their arrival times; returns per-request results and t0. Each run
    draws its own prompt tokens (`seed`): the engine's prefix cache (allow_block_sharing) would
    otherwise serve a repeated prompt's full blocks from an earlier run."""
    rng = random.Random(seed)
    prompts = {r["id"]: [rng.randrange(1000, vocab - 1000) for _ in range(r["prompt_tokens"])] for r in reqs}
    results = {}
    t0 = time.perf_counter()
    for r in reqs:
        delay = t0 + r["arrival"] - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        manager.add_request(prompts[r["id"]], request_id=r["id"], max_new_tokens=r["output_tokens"],
                            record_timestamps=True, eos_token_id=-1)
    deadline = time.perf_counter() + 600
    while len(results) < len(reqs) and time.perf_counter() < deadline:
        res = manager.get_result(timeout=1)
        if res is not None and res.is_finished():
            results[res.request_id] = res
    out = []
    for r in reqs:
        res = results.get(r["id"])
        row = dict(r)
        if res is None:
            row["error"] = "no result"
        else:
            row["created"] = round(res.created_time - t0, 6)
            row["started"] = round(res.lifespan[0] - t0, 6)
            row["finished"] = round(res.lifespan[1] - t0, 6)
            row["generated"] = len(res.generated_tokens)
            row["token_times"] = [round(t - t0, 6) for t in (res.timestamps or [])]
            if res.error:
                row["error"] = str(res.error)
        out.append(row)
    return out, t0


def engine_facts(manager):
    bp = manager.batch_processor
    c = bp.cache
    cfg = bp.cb_config if hasattr(bp, "cb_config") else None
    facts = {"num_blocks": int(c.num_blocks), "block_size": int(c.block_size),
             "max_batch_tokens": int(c.max_batch_tokens)}
    if cfg is not None:
        for k in ("max_requests_per_batch", "max_blocks_per_request", "use_cuda_graph", "use_async_batching",
                  "q_padding_interval_size", "kv_padding_interval_size", "max_memory_percent", "scheduler_type",
                  "safety_margin"):
            v = getattr(cfg, k, None)
            facts[k] = list(v) if isinstance(v, tuple) else v
    sched = getattr(bp, "scheduler", None)
    if sched is not None:
        facts["scheduler_safety_margin"] = getattr(sched, "safety_margin", None)
    return facts


def profile_steps(manager, reqs, vocab, seed, out_dir, tag, log):
    """One profiled run of the mix: each step's kernels (between the spin kernels that mark each
    step's start) with their summed time; the step log of that run beside them."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    log.marker = True
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        rows, t0 = run_mix(manager, reqs, vocab, seed)
        torch.cuda.synchronize()
    log.marker = False
    steps = log.take(t0)
    path = os.path.join(out_dir, f"_prof_{tag}.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    os.remove(path)
    kernels = sorted((e["ts"], e["dur"], e["name"]) for e in trace.get("traceEvents", [])
                     if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X")
    per_step = []
    for ts, dur, name in kernels:
        if "spin_kernel" in name:
            per_step.append({"kernel_us": 0.0, "kernels": 0, "names": {}})
            continue
        if not per_step:
            continue
        cur = per_step[-1]
        cur["kernel_us"] += dur
        cur["kernels"] += 1
        short = name[:140]
        n, t = cur["names"].get(short, (0, 0.0))
        cur["names"][short] = (n + 1, t + dur)
    for i, s in enumerate(per_step):
        s["kernel_us"] = round(s["kernel_us"], 2)
        # Each kernel's count and time for the first steps and every 25th.
        s["names"] = {k: [n, round(t, 2)] for k, (n, t) in s["names"].items()} if i < 4 or i % 25 == 0 else None
    return {"steps": steps, "kernels": per_step}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", type=int, default=1)
    ap.add_argument("--configs", default="eager,graphs")
    ap.add_argument("--mixes", default="", help="comma-separated mix names (default: all of the set)")
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args()

    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.generation.continuous_batching.utils import WorkloadHints

    log = StepLog()
    log.install()
    mixes = [m for m in MIXES[args.set] if not args.mixes or m[0] in args.mixes.split(",")]
    result = {"provenance": provenance(args.gpu), "set": args.set, "attn_implementation": "paged|sdpa",
              "protocol": "fresh" if args.set in FRESH_SETS else "warm-pass",
              "process": "own" if args.set in OWN_PROCESS_SETS else "shared", "runs": []}
    out_path = os.path.join(args.out, f"serve_requests{args.set}_{args.gpu}.json.gz")

    for model_name in dict.fromkeys(m[1] for m in mixes):
        cfg_dict = MODELS[model_name]
        torch.manual_seed(0)
        config = LlamaConfig(**cfg_dict)
        with torch.device("cuda"):
            model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
        model.set_attn_implementation("paged|sdpa")
        vocab = config.vocab_size
        for kind in args.configs.split(","):
            for mi, (name, mname, count, arrival, rate, pr, orr, kinds) in enumerate(mixes):
                if mname != model_name or kind not in kinds.split(","):
                    continue
                seed = 1000 * args.set + mi
                reqs = draw_requests(seed, count, arrival, rate, pr, orr)
                hints = WorkloadHints(max_prompt_length=max(r["prompt_tokens"] for r in reqs),
                                      max_generated_length=max(r["output_tokens"] for r in reqs),
                                      num_requests=len(reqs))
                gc = GenerationConfig(max_new_tokens=max(r["output_tokens"] for r in reqs), do_sample=False,
                                      eos_token_id=-1)
                print(f"[{time.strftime('%H:%M:%S')}] {model_name} {kind} {name}: {len(reqs)} requests", flush=True)
                try:
                    manager = model.init_continuous_batching(generation_config=gc,
                                                             continuous_batching_config=cb_config(kind),
                                                             workload_hints=hints)
                    manager.warmup()
                    manager.start()
                    # A first pass of the mix (CUDA graphs captured, cuDNN plans chosen), then the kept one.
                    if args.set not in FRESH_SETS:
                        log.enabled = False
                        run_mix(manager, reqs, vocab, seed + 500_000)
                        log.enabled = True
                    rows, t0 = run_mix(manager, reqs, vocab, seed)
                    steps = log.take(t0)
                    prof = None
                    if not args.no_profile and mi == min(i for i, m in enumerate(mixes)
                                                         if m[1] == model_name and kind in m[7].split(",")):
                        prof = profile_steps(manager, reqs, vocab, seed + 900_000, args.out, f"{model_name}_{kind}", log)
                    facts = engine_facts(manager)
                    manager.stop(block=True, timeout=30)
                    del manager
                    torch.cuda.empty_cache()
                    run = {"model": model_name, "config": kind, "mix": name, "arrival": arrival, "rate": rate,
                           "prompt_range": pr, "output_range": orr, "seed": seed, "engine": facts,
                           "requests": rows, "steps": steps, "profiled_steps": prof}
                    result["runs"].append(run)
                    ttft = sorted(r["token_times"][0] - r["arrival"] for r in rows if r.get("token_times"))
                    print(f"    {len(steps)} steps, engine {facts}, TTFT p50 {ttft[len(ttft) // 2] * 1e3:.1f} ms",
                          flush=True)
                except Exception:
                    traceback.print_exc()
                    result["runs"].append({"model": model_name, "config": kind, "mix": name,
                                           "error": traceback.format_exc()[-2000:]})
                with gzip.open(out_path, "wt") as f:
                    json.dump(result, f)
        del model
        torch.cuda.empty_cache()
    print("wrote", out_path)


if __name__ == "__main__":
    main()
