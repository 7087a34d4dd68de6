#!/usr/bin/env python3
"""hf_train.py: kernel-level ground truth of Hugging Face training steps (issue 15).

For each case (a model config, batch, sequence length, precision, optimizer) this builds the
model from its config with random weights (AutoModelForCausalLM.from_config, sdpa attention, on
the GPU, train mode; nothing is downloaded) and measures one optimizer step as a training loop
runs it:

    optimizer.zero_grad(set_to_none=True)
    loss = model(input_ids=x, labels=x).loss        # forward with the loss
    loss.backward()
    optimizer.step()

Precision: `bf16` (weights, grads and AdamW state in bf16) or `fp32+autocast-bf16` (fp32 weights,
forward and loss under torch.autocast(bfloat16)). Optimizers: AdamW (PyTorch's default foreach
implementation), AdamW fused (fused=True), SGD (momentum 0.9, foreach).

Method (as op_kernels.py / hf_models.py): warm-up steps (the optimizer state exists after the
first), then REPS profiled steps. Before each the L2 is flushed (256 MiB written, outside the
ranges); each phase runs inside record_function("gpusim_<phase>") closed by a synchronize:
forward (with the loss), backward, optimizer (step); the zero_grad before them launches nothing
(set_to_none). Kernels are assigned to a step by the correlation id of their launch and to a
phase by the launch's timestamp (backward kernels are launched by the autograd thread while the
main thread is inside gpusim_backward). kernel_time_us per phase = median over kept steps of the
summed kernel durations. wall_us = median CUDA-event time of a whole unprofiled step (host
included). Memory: persistent = torch.cuda.memory_allocated() between steps after warm-up
(weights and optimizer state; grads are freed by zero_grad); peak_above_persistent_bytes =
max_memory_allocated during a step minus that; grad and state bytes counted from the tensors.

Split: cases alternate calibration / holdout in list order (index odd = holdout).

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/hf_train.py --gpu h100 --out $OUT
  options: --only REGEX, --reps N (default 5), --deadline-s N
Writes $OUT/hf_train_<gpu>.json (rewritten after every case): kernel names once in "names",
each kernel as [phase, name index, grid, block, median duration us, innermost aten op index].
"""
import argparse
import datetime
import json
import os
import re
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_kernels import assign_gpu_events, _dims, _f, _ranges  # noqa: E402
import hf_models  # noqa: E402
from hf_models import innermost_ops  # noqa: E402

WARMUP = 2
FLUSH_BYTES = 256 * 1024 * 1024
PHASES = ("forward", "backward", "optimizer")

LLAMA_1B_4L = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=4, num_attention_heads=32,
                   num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=8192,
                   rope_theta=500000.0, tie_word_embeddings=True)
LLAMA_8B_2L = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
                   num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0)
QWEN2_05B_6L = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=6, num_attention_heads=14,
                    num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768,
                    tie_word_embeddings=True)
MISTRAL_7B_2L = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
                     num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768, sliding_window=None)
GPT2_SMALL = dict(n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)
QWEN3_06B_4L = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=4, num_attention_heads=16,
                    num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
                    tie_word_embeddings=True)


def case(cid, mtype, cfg, batch, seq_len, precision="bf16", optimizer="adamw", checkpointing="none",
         accumulation_steps=1, trainer="eager"):
    return dict(id=cid, model_type=mtype, cfg=cfg, batch=batch, seq_len=seq_len, precision=precision,
                optimizer=optimizer, checkpointing=checkpointing, accumulation_steps=accumulation_steps,
                trainer=trainer)


CASES = [
    case("llama3.2-1b-4l_b4_s512", "llama", LLAMA_1B_4L, 4, 512),
    case("llama3.2-1b-4l_b8_s1024", "llama", LLAMA_1B_4L, 8, 1024),
    case("llama3-8b-2l_b2_s1024", "llama", LLAMA_8B_2L, 2, 1024),
    case("llama3-8b-2l_b1_s2048", "llama", LLAMA_8B_2L, 1, 2048),
    case("qwen2-0.5b-6l_b8_s512", "qwen2", QWEN2_05B_6L, 8, 512),
    case("qwen2-0.5b-6l_b4_s1024", "qwen2", QWEN2_05B_6L, 4, 1024),
    case("mistral-7b-2l_b4_s512", "mistral", MISTRAL_7B_2L, 4, 512),
    case("mistral-7b-2l_b2_s2048", "mistral", MISTRAL_7B_2L, 2, 2048),
    case("gpt2-small_b8_s512", "gpt2", GPT2_SMALL, 8, 512),
    case("gpt2-small_b4_s1024", "gpt2", GPT2_SMALL, 4, 1024),
    case("qwen3-0.6b-4l_b4_s1024", "qwen3", QWEN3_06B_4L, 4, 1024),
    case("qwen3-0.6b-4l_b8_s512", "qwen3", QWEN3_06B_4L, 8, 512),
    case("llama3.2-1b-4l_b4_s1024_amp", "llama", LLAMA_1B_4L, 4, 1024, "fp32+autocast-bf16"),
    case("llama3.2-1b-4l_b2_s512_amp", "llama", LLAMA_1B_4L, 2, 512, "fp32+autocast-bf16"),
    case("gpt2-small_b8_s512_amp", "gpt2", GPT2_SMALL, 8, 512, "fp32+autocast-bf16"),
    case("qwen2-0.5b-6l_b4_s512_amp", "qwen2", QWEN2_05B_6L, 4, 512, "fp32+autocast-bf16"),
    case("llama3.2-1b-4l_b4_s512_fused", "llama", LLAMA_1B_4L, 4, 512, optimizer="adamw-fused"),
    case("qwen2-0.5b-6l_b8_s512_fused", "qwen2", QWEN2_05B_6L, 8, 512, optimizer="adamw-fused"),
    case("llama3.2-1b-4l_b4_s512_sgd", "llama", LLAMA_1B_4L, 4, 512, optimizer="sgd"),
    case("gpt2-small_b4_s1024_sgd", "gpt2", GPT2_SMALL, 4, 1024, optimizer="sgd"),
]
for i, c in enumerate(CASES):
    c["split"] = "holdout" if i % 2 else "calibration"


def provenance(gpu):
    import torch
    p = hf_models.provenance(gpu)
    p.update(cudnn=torch.backends.cudnn.version(), script="validation/measure/hf_train.py")
    return p


def build(c):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(c["model_type"], **c["cfg"])
    dtype = torch.bfloat16 if c["precision"] == "bf16" else torch.float32
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    if c["checkpointing"] == "full":
        model.gradient_checkpointing_enable()  # transformers' defaults (it also turns use_cache off)
    model.train()
    model.config.architectures = [model.__class__.__name__]
    params = [p for p in model.parameters() if p.requires_grad]
    if c.get("trainer", "eager") == "compiled":
        # A tuned trainer's step: the model (forward with its loss, hence the backward too)
        # compiled by TorchInductor with its defaults; the optimizer is not compiled.
        model = torch.compile(model)
    if c["optimizer"] == "adamw":
        opt = torch.optim.AdamW(params, lr=1e-5)
    elif c["optimizer"] == "adamw-fused":
        opt = torch.optim.AdamW(params, lr=1e-5, fused=True)
    elif c["optimizer"] == "sgd":
        opt = torch.optim.SGD(params, lr=1e-5, momentum=0.9)
    elif c["optimizer"] == "none":
        opt = None  # forward and backward only, as benchmark scripts time a step
    else:
        raise ValueError(c["optimizer"])
    return model, opt


def measure_case(c, reps, names):
    import contextlib
    import torch
    from torch.profiler import profile, ProfilerActivity, record_function
    model, opt = build(c)
    n_params = sum(p.numel() for p in model.parameters())
    weights_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    x = torch.randint(0, model.config.vocab_size, (c["batch"], c["seq_len"]), device="cuda")
    amp = "autocast" in c["precision"]

    micro = c["accumulation_steps"]

    def fwd():
        ctx = torch.autocast("cuda", dtype=torch.bfloat16) if amp else contextlib.nullcontext()
        with ctx:
            loss = model(input_ids=x, labels=x).loss
        # Gradient accumulation: each micro-batch's loss is divided by their number.
        return loss / micro if micro > 1 else loss

    def zero_grad():
        if opt is not None:
            opt.zero_grad(set_to_none=True)
        else:
            model.zero_grad(set_to_none=True)

    def update():
        if opt is not None:
            opt.step()

    def step(mark):
        zero_grad()
        for _ in range(micro):
            with mark("gpusim_forward"):
                loss = fwd()
                torch.cuda.synchronize()
            with mark("gpusim_backward"):
                loss.backward()
                torch.cuda.synchronize()
        with mark("gpusim_optimizer"):
            update()
            torch.cuda.synchronize()

    plain = lambda name: contextlib.nullcontext()  # noqa: E731
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    for _ in range(WARMUP):
        step(plain)
    torch.cuda.synchronize()
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    state_bytes = sum(t.numel() * t.element_size() for s in (opt.state.values() if opt else []) for t in s.values()
                      if torch.is_tensor(t) and t.is_cuda)
    zero_grad()
    torch.cuda.synchronize()
    persistent = torch.cuda.memory_allocated()
    walls, peaks = [], []
    for _ in range(reps):
        flush.zero_()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        zero_grad()
        for _ in range(micro):
            loss = fwd()
            loss.backward()
        update()
        e1.record()
        torch.cuda.synchronize()
        walls.append(e0.elapsed_time(e1) * 1000.0)
        peaks.append(torch.cuda.max_memory_allocated() - persistent)
        del loss
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            with record_function("gpusim_flush"):
                flush.zero_()
            torch.cuda.synchronize()
            with record_function("gpusim_op"):
                step(record_function)
            torch.cuda.synchronize()
    evs = hf_models.trace_events(prof)
    res = summarize(evs, names)
    res.update(n_params=n_params, weights_bytes=weights_bytes, grad_bytes=grad_bytes,
               optimizer_state_bytes=state_bytes, persistent_bytes=persistent,
               peak_above_persistent_bytes=max(peaks), peak_above_persistent_all=peaks,
               wall_us_median=statistics.median(walls), wall_us_all=walls,
               hf_config_json=model.config.to_json_string(use_diff=True))
    del model, opt, flush, x
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return res


def summarize(evs, names):
    per_rep, corr2launch, method, info = assign_gpu_events(evs)
    X = [e for e in evs if e.get("ph") == "X" and "ts" in e]
    ranges = {p: _ranges(X, "user_annotation", "gpusim_" + p) for p in PHASES}

    def phase_of(launch):
        if launch is None:
            return "?"
        ts = _f(launch["ts"])
        for p, rs in ranges.items():
            if any(s <= ts <= e for s, e, _ in rs):
                return p
        return "?"

    reps = [r for r in per_rep if r]
    seqs = [tuple(e.get("name", "") for e in r) for r in reps]
    modal = max(set(seqs), key=lambda s: (seqs.count(s), len(s)))
    keep = [r for r, s in zip(reps, seqs) if s == modal]
    cpu_ops = sorted((e for e in X if e.get("cat") == "cpu_op"), key=lambda e: _f(e["ts"]))
    first = keep[0]
    launches = [corr2launch.get(e.get("args", {}).get("correlation")) for e in first]
    aten_of = innermost_ops(cpu_ops, launches)
    phase = [phase_of(l) for l in launches]
    sums = {p: [] for p in PHASES + ("?",)}
    for r in keep:
        tot = {p: 0.0 for p in sums}
        for i, e in enumerate(r):
            tot[phase[i]] += _f(e.get("dur", 0))
        for p in sums:
            sums[p].append(tot[p])

    def idx(name):
        if name not in names:
            names[name] = len(names)
        return names[name]

    kernels = []
    for i, e in enumerate(first):
        a = e.get("args", {})
        durs = [_f(r[i].get("dur", 0)) for r in keep]
        kernels.append([phase[i], idx(e.get("name", "")), _dims(a.get("grid")), _dims(a.get("block")),
                        round(statistics.median(durs), 3), idx(aten_of[i])])
    phases = {p: {"kernel_time_us": statistics.median(sums[p]), "n_kernels": sum(1 for q in phase if q == p)}
              for p in PHASES}
    return {"assign_method": method, "n_reps_used": len(keep), "n_kernels": len(modal),
            "kernel_time_us_median": statistics.median([sum(v[i] for v in sums.values()) for i in range(len(keep))]),
            "unattributed_kernels": sum(1 for q in phase if q == "?"),
            "phases": phases, "kernels": kernels}


def main(cases=None, prefix="hf_train"):
    cases = CASES if cases is None else cases
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--deadline-s", type=float, default=1e9)
    a = ap.parse_args()
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    names = {}
    result = {"provenance": provenance(a.gpu), "method": __doc__, "names": [], "cases": [], "errors": []}
    path = os.path.join(a.out, f"{prefix}_{a.gpu}.json")
    for c in cases:
        if a.only and not re.search(a.only, c["id"]):
            continue
        if time.time() - t0 > a.deadline_s:
            result["errors"].append({"id": c["id"], "error": "deadline"})
            continue
        try:
            r = measure_case(c, a.reps, names)
            r.update({k: c[k] for k in ("id", "split", "model_type", "batch", "seq_len", "precision", "optimizer",
                                        "checkpointing", "accumulation_steps")})
            r["trainer"] = c.get("trainer", "eager")
            result["cases"].append(r)
            ph = r["phases"]
            if c["split"] == "holdout":  # held-out figures stay unseen until they are compared
                print(f"{c['id']:36s} holdout     measured ({r['n_kernels']} kernels)", flush=True)
            else:
                print(f"{c['id']:36s} {c['split']:11s} fwd {ph['forward']['kernel_time_us']:9.1f} us "
                      f"({ph['forward']['n_kernels']}) bwd {ph['backward']['kernel_time_us']:9.1f} "
                      f"({ph['backward']['n_kernels']}) opt {ph['optimizer']['kernel_time_us']:8.1f} "
                      f"({ph['optimizer']['n_kernels']}) ?={r['unattributed_kernels']} wall {r['wall_us_median']:9.1f} "
                      f"peak {r['peak_above_persistent_bytes'] / 2**20:8.1f} MiB", flush=True)
        except Exception as e:  # noqa
            traceback.print_exc()
            result["errors"].append({"id": c["id"], "error": repr(e)})
            import torch
            torch.cuda.empty_cache()
        result["names"] = sorted(names, key=names.get)
        result["provenance"]["date_utc_end"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(path, "w") as f:
            json.dump(result, f)
    print(f"done: {len(result['cases'])} cases, {len(result['errors'])} errors, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
