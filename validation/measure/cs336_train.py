#!/usr/bin/env python3
"""cs336_train.py: forward + backward steps of the cs336_basics model measured on this GPU, to
check a cs336-basics training lowering (seed 002 times forward and forward+backward).

The model is cs336_forward.py's (plain PyTorch and einops following cs336_basics/model.py:
the package cannot be installed on the measuring machines). The loss is cs336_basics'
nn_utils.cross_entropy as the spring-2025 code writes it: log_softmax by hand (amax, subtract,
logsumexp, subtract), negated, gathered at the targets, mean. fp32, TF32 off, no autocast, no
optimizer (seed 002's benchmark times forward and forward+backward).

Method (hf_train.py's): 2 warm-up steps; then CUDA-event wall times of whole steps with the peak
memory above the persistent state (weights; gradients are freed with zero_grad(set_to_none))
and the memory allocated after the forward (before backward); then 5 profiled steps with the L2
flushed before each, the forward (with the loss) and the backward each inside
record_function("gpusim_<phase>") closed by a synchronize. Kernels are assigned to phases by
their launch time (hf_train.summarize).

Split: the first half of the cases (by order) calibration, the second held out.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/cs336_train.py --gpu h100 --out $OUT
Writes $OUT/cs336_train_<gpu>.json in hf_train.py's format.
"""
import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import statistics
import sys
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import hf_train  # noqa: E402

_spec = importlib.util.spec_from_file_location("cs336_forward", os.path.join(_HERE, "cs336_forward.py"))
cf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cf)

CASES = [("cs336-small", 4, 128), ("cs336-small", 4, 512), ("cs336-medium", 4, 256), ("cs336-large", 4, 128),
         ("cs336-small", 4, 256), ("cs336-small", 4, 1024), ("cs336-medium", 4, 128), ("cs336-medium", 4, 512),
         ("cs336-large", 4, 256)]
FLUSH_BYTES = 256 * 1024 * 1024


def log_softmax(x, dim=-1):
    import torch
    x_max = torch.amax(x, dim=dim, keepdim=True)
    x = x - x_max
    return x - torch.logsumexp(x, dim=dim, keepdim=True)


def cross_entropy(inputs, targets):
    import torch
    negative_log_softmax_logits = -log_softmax(inputs)
    return torch.mean(torch.gather(negative_log_softmax_logits, -1, targets.unsqueeze(-1)))


def measure_case(name, B, S, reps, names):
    import torch
    from torch.profiler import profile, ProfilerActivity, record_function
    model = cf.build(name, max(S, 1024))
    model.train()
    ids = torch.randint(0, cf.VOCAB, (B, S), device="cuda")
    targets = torch.randint(0, cf.VOCAB, (B, S), device="cuda")

    def step(mark, after_forward=None):
        model.zero_grad(set_to_none=True)
        with mark("gpusim_forward"):
            loss = cross_entropy(model(ids), targets)
            torch.cuda.synchronize()
        if after_forward:
            after_forward()
        with mark("gpusim_backward"):
            loss.backward()
            torch.cuda.synchronize()

    plain = lambda name: contextlib.nullcontext()  # noqa: E731
    for _ in range(2):
        step(plain)
    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    persistent = torch.cuda.memory_allocated()
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    walls, peaks, before_bwd = [], [], []
    for _ in range(reps):
        flush.zero_()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        model.zero_grad(set_to_none=True)
        loss = cross_entropy(model(ids), targets)
        loss.backward()
        e1.record()
        torch.cuda.synchronize()
        walls.append(e0.elapsed_time(e1) * 1000.0)
        peaks.append(torch.cuda.max_memory_allocated() - persistent - FLUSH_BYTES)
        del loss
    step(plain, lambda: before_bwd.append(torch.cuda.memory_allocated() - persistent - FLUSH_BYTES))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            with record_function("gpusim_flush"):
                flush.zero_()
            torch.cuda.synchronize()
            with record_function("gpusim_op"):
                step(record_function)
            torch.cuda.synchronize()
    res = hf_train.summarize(hf_train.hf_models.trace_events(prof), names)
    res.update(n_params=sum(p.numel() for p in model.parameters()), persistent_bytes=persistent,
               peak_above_persistent_bytes=max(peaks), peak_above_persistent_all=peaks,
               allocated_before_backward_bytes=before_bwd[0], wall_us_median=statistics.median(walls),
               wall_us_all=walls)
    del model, flush, ids, targets
    torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    prov = hf_train.provenance(a.gpu)
    prov.update(script="validation/measure/cs336_train.py", torch=torch.__version__)
    result = {"provenance": prov, "method": __doc__, "names": [], "cases": [], "errors": []}
    names = {}
    os.makedirs(a.out, exist_ok=True)
    for i, (name, B, S) in enumerate(CASES):
        cid = f"{name}_b{B}_s{S}"
        try:
            r = measure_case(name, B, S, a.reps, names)
            r.update(id=cid, model=name, batch=B, seq_len=S, split="calibration" if i < len(CASES) // 2 else "holdout")
            result["cases"].append(r)
            ph = r["phases"]
            print(f"{cid:24s} fwd {ph['forward']['kernel_time_us']:10.1f} us ({ph['forward']['n_kernels']}) "
                  f"bwd {ph['backward']['kernel_time_us']:10.1f} us ({ph['backward']['n_kernels']}) "
                  f"?={r['unattributed_kernels']} wall {r['wall_us_median']:10.1f} peak "
                  f"{r['peak_above_persistent_bytes'] / 2**20:8.1f} MiB", flush=True)
        except Exception as e:  # noqa
            traceback.print_exc()
            result["errors"].append({"id": cid, "error": repr(e)[:400]})
            torch.cuda.empty_cache()
        result["names"] = sorted(names, key=names.get)
        result["provenance"]["date_utc_end"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(os.path.join(a.out, f"cs336_train_{a.gpu}.json"), "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
