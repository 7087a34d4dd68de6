#!/usr/bin/env python3
"""replay_traces.py: PyTorch profiler traces for `gpusim replay` (issue 17).

Records, for each program, the Chrome trace torch.profiler exports (Kineto), with
record_shapes=True, as users record them: a few iterations after warm-up, CPU and CUDA activity.
Programs: Hugging Face models built from configs with random weights (sdpa, bf16): a prefill
forward, a decode step on a contiguous KV cache of the stated length (restored before each step,
outside the profile, as generation leaves it), a mixture-of-experts prefill, an eager training step;
and a small convolutional network (a program that is not a transformer). The L2 is flushed before
each iteration (256 MiB written, inside the trace as its own kernel, named in `meta`).

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/replay_traces.py --gpu h100 --out $OUT [--set 2|3|4|5|6|streams]
Writes $OUT/replay_<gpu>_<program>.json.gz (the trace, with `gpusim_meta` added at the top level:
provenance, program, iterations) for each program.
"""
import argparse
import gzip
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402
from hf_models import GPT2_MEDIUM, LLAMA32_1B, MIXTRAL_SMALL, QWEN2_05B, QWEN3_MOE_4L, build_model, make_phase  # noqa: E402
from hf_train import LLAMA_1B_4L, LLAMA_8B_2L, MISTRAL_7B_2L, QWEN2_05B_6L, QWEN3_06B_4L  # noqa: E402

ITERS = 3
WARMUP = 2
FLUSH_BYTES = 256 * 1024 * 1024

PROGRAMS = [
    dict(id="llama3.2-1b-4l_prefill_b2_s512", model_type="llama", cfg=LLAMA_1B_4L, phase="prefill", batch=2, seq_len=512),
    dict(id="llama3.2-1b-4l_decode_b4_l512", model_type="llama", cfg=LLAMA_1B_4L, phase="decode", batch=4, seq_len=512),
    dict(id="qwen3-0.6b-4l_decode_b8_l1024", model_type="qwen3", cfg=QWEN3_06B_4L, phase="decode", batch=8, seq_len=1024),
    dict(id="qwen3-moe-4l_prefill_b1_s512", model_type="qwen3_moe", cfg=QWEN3_MOE_4L, phase="prefill", batch=1, seq_len=512),
    dict(id="llama3.2-1b-4l_train_b2_s512", model_type="llama", cfg=LLAMA_1B_4L, phase="train", batch=2, seq_len=512),
    dict(id="convnet_b32", phase="convnet", batch=32),
]
# Set 2 (drawn up 2026-11-25 after the replay rules were written from set 1): other models and
# shapes, held out for `gpusim validate --suite replay-h100`.
PROGRAMS2 = [
    dict(id="qwen2-0.5b-6l_prefill_b4_s1024", model_type="qwen2", cfg=QWEN2_05B_6L, phase="prefill", batch=4, seq_len=1024),
    dict(id="llama3-8b-2l_decode_b16_l2048", model_type="llama", cfg=LLAMA_8B_2L, phase="decode", batch=16, seq_len=2048),
    dict(id="mistral-7b-2l_prefill_b1_s2048", model_type="mistral", cfg=MISTRAL_7B_2L, phase="prefill", batch=1, seq_len=2048),
    dict(id="gpt2-medium-6l_decode_b8_l512", model_type="gpt2", cfg=dict(GPT2_MEDIUM, n_layer=6), phase="decode", batch=8,
         seq_len=512),
    dict(id="qwen2-0.5b-6l_train_b4_s512", model_type="qwen2", cfg=QWEN2_05B_6L, phase="train", batch=4, seq_len=512),
    dict(id="qwen2-0.5b-24l_decode_b1_l4096", model_type="qwen2", cfg=QWEN2_05B, phase="decode", batch=1, seq_len=4096),
]
# Set 3 (drawn up 2026-11-25 after rules for MoE routing, grouped GEMMs, LayerNorm, gathers and the
# loss were added, which was after set 2 had been compared): held out in its place.
PROGRAMS3 = [
    dict(id="qwen3-moe-4l_decode_b8_l1024", model_type="qwen3_moe", cfg=QWEN3_MOE_4L, phase="decode", batch=8, seq_len=1024),
    dict(id="mixtral-small-4l_prefill_b2_s512", model_type="mixtral", cfg=dict(MIXTRAL_SMALL, num_hidden_layers=4),
         phase="prefill", batch=2, seq_len=512),
    dict(id="llama3.2-1b-16l_prefill_b1_s2048", model_type="llama", cfg=LLAMA32_1B, phase="prefill", batch=1, seq_len=2048),
    dict(id="qwen3-0.6b-4l_train_b8_s512", model_type="qwen3", cfg=QWEN3_06B_4L, phase="train", batch=8, seq_len=512),
    dict(id="gpt2-medium-6l_prefill_b4_s512", model_type="gpt2", cfg=dict(GPT2_MEDIUM, n_layer=6), phase="prefill", batch=4,
         seq_len=512),
    dict(id="llama3-8b-2l_prefill_b4_s1024", model_type="llama", cfg=LLAMA_8B_2L, phase="prefill", batch=4, seq_len=1024),
]
# Set 4 (drawn up 2026-11-26 after the cat rule's type inference was fixed, which was after set 3
# had been compared): held out in its place.
PROGRAMS4 = [
    dict(id="llama3-8b-2l_decode_b4_l4096", model_type="llama", cfg=LLAMA_8B_2L, phase="decode", batch=4, seq_len=4096),
    dict(id="qwen2-0.5b-6l_decode_b32_l512", model_type="qwen2", cfg=QWEN2_05B_6L, phase="decode", batch=32, seq_len=512),
    dict(id="mistral-7b-2l_decode_b8_l1024", model_type="mistral", cfg=MISTRAL_7B_2L, phase="decode", batch=8, seq_len=1024),
    dict(id="mixtral-small-4l_decode_b4_l512", model_type="mixtral", cfg=dict(MIXTRAL_SMALL, num_hidden_layers=4),
         phase="decode", batch=4, seq_len=512),
    dict(id="gpt2-medium-6l_train_b4_s512", model_type="gpt2", cfg=dict(GPT2_MEDIUM, n_layer=6), phase="train", batch=4,
         seq_len=512),
    dict(id="llama3.2-1b-4l_prefill_b8_s256", model_type="llama", cfg=LLAMA_1B_4L, phase="prefill", batch=8, seq_len=256),
]
# Set 5 (drawn up 2026-11-26 after GEMM operands' recorded strides were read, a change made after
# set 4's GPT-2 training step had been looked at): held out in its place.
PROGRAMS5 = [
    dict(id="gpt2-medium-12l_train_b2_s1024", model_type="gpt2", cfg=dict(GPT2_MEDIUM, n_layer=12), phase="train", batch=2,
         seq_len=1024),
    dict(id="qwen3-0.6b-4l_prefill_b4_s1024", model_type="qwen3", cfg=QWEN3_06B_4L, phase="prefill", batch=4, seq_len=1024),
    dict(id="llama3-8b-2l_train_b1_s1024", model_type="llama", cfg=LLAMA_8B_2L, phase="train", batch=1, seq_len=1024),
    dict(id="qwen3-moe-4l_decode_b32_l512", model_type="qwen3_moe", cfg=QWEN3_MOE_4L, phase="decode", batch=32, seq_len=512),
    dict(id="mistral-7b-2l_prefill_b2_s1024", model_type="mistral", cfg=MISTRAL_7B_2L, phase="prefill", batch=2, seq_len=1024),
    dict(id="qwen2-0.5b-6l_train_b8_s256", model_type="qwen2", cfg=QWEN2_05B_6L, phase="train", batch=8, seq_len=256),
]

# Set 6 (drawn up 2026-11-26 after rules for LayerNorm's backward and dropout were added, which was
# after set 5's coverage had been looked at): held out in its place.
PROGRAMS6 = [
    dict(id="gpt2-medium-6l_train_b8_s256", model_type="gpt2", cfg=dict(GPT2_MEDIUM, n_layer=6), phase="train", batch=8,
         seq_len=256),
    dict(id="llama3.2-1b-4l_train_b4_s256", model_type="llama", cfg=LLAMA_1B_4L, phase="train", batch=4, seq_len=256),
    dict(id="qwen2-0.5b-6l_prefill_b2_s2048", model_type="qwen2", cfg=QWEN2_05B_6L, phase="prefill", batch=2, seq_len=2048),
    dict(id="mixtral-small-4l_prefill_b1_s1024", model_type="mixtral", cfg=dict(MIXTRAL_SMALL, num_hidden_layers=4),
         phase="prefill", batch=1, seq_len=1024),
    dict(id="qwen3-0.6b-4l_decode_b16_l2048", model_type="qwen3", cfg=QWEN3_06B_4L, phase="decode", batch=16, seq_len=2048),
    dict(id="llama3-8b-2l_decode_b8_l1024", model_type="llama", cfg=LLAMA_8B_2L, phase="decode", batch=8, seq_len=1024),
]
# Streams (2026-11-26): a program on three streams joined by CUDA events (two GEMMs on one side
# stream, elementwise work on another, the main stream waiting for both), recorded with the
# profiler's CUDA synchronization events, for replay's cross-stream dependencies.
PROGRAMS_STREAMS = [
    dict(id="streams_gemm_elementwise", phase="streams", batch=1),
]


def streams_step():
    import torch
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(4096, 4096, dtype=torch.bfloat16, device="cuda")
    x = torch.randn(64 * 1024 * 1024, device="cuda")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

    def step():
        main = torch.cuda.current_stream()
        w = a * 0.5  # on the main stream, before the side streams may start
        s1.wait_stream(main)
        s2.wait_stream(main)
        with torch.cuda.stream(s1):
            c = w @ b
            c = c @ b
        with torch.cuda.stream(s2):
            y = x * 2.0
            y = y + 1.0
            y = y.sum()
        main.wait_stream(s1)
        main.wait_stream(s2)
        return c[0] + y
    return step


def program_step(p):
    """Returns (step, after): step() runs one iteration; after() restores state outside the trace."""
    import torch
    if p["phase"] == "streams":
        return streams_step(), (lambda: None)
    if p["phase"] == "convnet":
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, padding=1, stride=2), torch.nn.BatchNorm2d(128), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 1000)).cuda().eval()
        x = torch.randn(p["batch"], 3, 224, 224, device="cuda")

        def step():
            with torch.no_grad():
                return net(x)
        return step, (lambda: None)
    if p["phase"] == "train":
        import hf_train
        c = hf_train.case(p["id"], p["model_type"], p["cfg"], p["batch"], p["seq_len"])
        model, opt = hf_train.build(c)
        ids = torch.randint(0, model.config.vocab_size, (p["batch"], p["seq_len"]), device="cuda")

        def step():
            opt.zero_grad(set_to_none=True)
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
        return step, (lambda: None)
    model = build_model(dict(p, cfg=p["cfg"]))
    run, after, _ = make_phase(model, dict(p, output_len=None))

    def step():
        with torch.no_grad():
            return run()
    return step, after


def record(p, gpu, out):
    import torch
    from torch.profiler import profile, ProfilerActivity, record_function
    step, after = program_step(p)
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    for _ in range(WARMUP):
        step()
        after()
    torch.cuda.synchronize()
    # The CUDA synchronization events (cudaStreamWaitEvent and the event each waits on) give the
    # dependencies between streams.
    extra = dict(experimental_config=torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, **extra) as prof:
        for _ in range(ITERS):
            with record_function("gpusim_flush"):
                flush.zero_()
            torch.cuda.synchronize()
            with record_function("gpusim_iteration"):
                step()
                torch.cuda.synchronize()
            prof.step() if hasattr(prof, "step") else None
            after()
    tmp = os.path.join(out, f"replay_{gpu}_{p['id']}.json")
    prof.export_chrome_trace(tmp)
    with open(tmp) as f:
        trace = json.load(f)
    os.remove(tmp)
    meta = hf_models.provenance(gpu)
    meta.update(script="validation/measure/replay_traces.py", program={k: v for k, v in p.items() if k != "cfg"},
                model_config=p.get("cfg"), iterations=ITERS, flush_range="gpusim_flush",
                iteration_range="gpusim_iteration")
    trace["gpusim_meta"] = meta
    path = tmp + ".gz"
    with gzip.open(path, "wt") as f:
        json.dump(trace, f)
    kernels = [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"]
    print(f"{p['id']:36s} {len(kernels):6d} kernels  {os.path.getsize(path) / 1e6:6.2f} MB", flush=True)
    del step, after, flush
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("--set", default="1", choices=("1", "2", "3", "4", "5", "6", "streams"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    for p in {"1": PROGRAMS, "2": PROGRAMS2, "3": PROGRAMS3, "4": PROGRAMS4, "5": PROGRAMS5, "6": PROGRAMS6,
              "streams": PROGRAMS_STREAMS}[a.set]:
        if a.only and a.only not in p["id"]:
            continue
        try:
            record(p, a.gpu, a.out)
        except Exception as e:  # noqa
            import traceback
            traceback.print_exc()
            print(f"{p['id']}: failed: {e!r}", flush=True)
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
