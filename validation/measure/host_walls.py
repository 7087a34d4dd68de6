#!/usr/bin/env python3
"""host_walls.py: one session's host characterization and the eager wall times it is to predict.

The host CPU of a lent machine changes from session to session (validation/data/README-host.md),
so gpusim's host model (workloads/host_issue.h) is fitted and checked on data of one session:

 1. calibration: host_costs.py's layer sweep (one config per model family, 1, 2 and 4 decoder
    layers, a decode step of B=1 with 16 cached tokens and a prefill of B=1, S=16): host issue
    time (a synced start to forward's return), wall time (CUDA events), kernel count.
    validation/measure/fit_host.py fits the preset's host section to it.
 2. held out: full-size cases of validation/data/hf_configs/ (every family; prefill, decode and
    generate, the case's batch and length from its file name) measured the same way, with the
    cache restored to its stated length before each decode step, outside the timed range.
 3. probe: one fixed forward (the first calibration family, 2 layers, decode) measured before
    the sweep, between every few cases and at the end: how much the host's speed drifts within
    the session.

Each timing is the median of --reps forwards (generate: of --generate-reps calls) after warmup.

Usage (GPU machine, repository root):
  PYTHONUNBUFFERED=1 python3 validation/measure/host_walls.py --gpu h100 --out $OUT
  options: --reps N (default 20), --generate-reps N (default 5), --only REGEX (held-out cases),
           --skip-sweep
Writes $OUT/host_walls_<gpu>.json.
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hc = _load("host_costs")
hf = hc.hf

# The held-out cases: one or more per family, prefill, decode and generate, sizes as measured
# before (file names: <model>_<phase>_b<B>_<l|s><N>[_o<O>]).
CASES = [
    "llama3-8b_decode_b1_l512", "llama3-8b_decode_b16_l1024", "llama3-8b_prefill_b1_s512",
    "llama3.2-1b_decode_b8_l2048", "llama3.2-1b_prefill_b2_s1024", "llama3.2-3b_decode_b4_l1024",
    "llama3.2-1b_generate_b8_s128_o16", "llama3-8b-4l_generate_b2_s128_o16",
    "qwen2-1.5b_decode_b8_l1024", "qwen2-0.5b_decode_b1_l2048", "qwen2-7b_prefill_b1_s1024",
    "qwen2-1.5b_generate_b4_s256_o32",
    "gpt2-small_decode_b4_l256", "gpt2-xl_decode_b8_l256", "gpt2-medium_prefill_b8_s512",
    "mistral-7b_decode_b2_l2048", "mistral-7b-sw_prefill_b1_s2048",
    "phi3-mini_decode_b4_l1024", "phi3-mini_prefill_b1_s1024", "phi4-mini_decode_b4_l1024",
    "gemma2-2b_decode_b1_l2048", "gemma2-2b_prefill_b1_s1024",
    "gemma3-1b_decode_b4_l1024", "gemma3-1b_prefill_b1_s1024",
    "qwen3-1.7b_decode_b4_l1024", "qwen3-1.7b_prefill_b1_s1024", "qwen3-4b-8l_decode_b8_l1024",
    "qwen3-moe-4l_decode_b4_l1024", "qwen3-moe-4l_prefill_b1_s512",
    "mixtral-small_decode_b2_l1024", "mixtral-4l_prefill_b1_s256",
    "deepseek-v2-lite-4l_decode_b4_l1024", "deepseek-v2-lite-4l_prefill_b1_s512",
    "moonlight-4l_decode_b4_l2048", "deepseek-v3-4l_decode_b1_l1024",
]
PROBE_EVERY = 6


def case_of(case_id):
    m = re.match(r"(.+)_(prefill|decode|generate)_b(\d+)_[ls](\d+)(?:_o(\d+))?$", case_id)
    if not m:
        raise ValueError(f"cannot read the case from {case_id}")
    cfg = json.load(open(os.path.join(_ROOT, "validation", "data", "hf_configs", case_id + ".json")))
    return {"id": case_id, "model_type": cfg["model_type"],
            "cfg": {k: v for k, v in cfg.items() if k not in hc.DROP_KEYS},
            "phase": m.group(2), "batch": int(m.group(3)), "seq_len": int(m.group(4)),
            "output_len": int(m.group(5)) if m.group(5) else None,
            "hf_config": f"hf_configs/{case_id}.json"}


def measure(c, reps):
    """Host issue time, wall time (medians and all) and kernel count of c's phase."""
    import torch
    model = hf.build_model(c)
    try:
        with torch.no_grad():
            run, after, _ = hf.make_phase(model, c)
            for _ in range(3):
                run()
                after()
            host, wall, hosts, walls = hc.timed_host(run, reps, after)
            k = hc.kernels_of(run)
            after()
        return {"host_us": host, "wall_us": wall, "host_us_all": hosts, "wall_us_all": walls, **k}
    finally:
        model = None
        torch.cuda.empty_cache()


def probe(fam, reps, log):
    c = {"model_type": fam["model_type"], "cfg": hc.with_layers(fam["cfg"], 2), "phase": "decode",
         "batch": 1, "seq_len": 16}
    r = measure(c, reps)
    r["t_s"] = time.time()
    log.append(r)
    print(f"probe {fam['base']} 2L decode: host {r['host_us']:9.1f} us  wall {r['wall_us']:9.1f} us", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--generate-reps", type=int, default=5)
    ap.add_argument("--only", default=None)
    ap.add_argument("--skip-sweep", action="store_true")
    a = ap.parse_args()
    import platform
    import torch
    import transformers
    torch.backends.cuda.matmul.allow_tf32 = False
    prov = hf.provenance(a.gpu)
    prov.update(script="validation/measure/host_walls.py", python=sys.version.split()[0], torch=torch.__version__,
                transformers=transformers.__version__, cpu=platform.processor() or platform.machine())
    try:
        prov["cpu_model"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
        prov["cpu_count"] = os.cpu_count()
    except Exception:
        pass
    result = {"provenance": prov, "method": __doc__, "probes": [], "cases": [], "errors": []}
    os.makedirs(a.out, exist_ok=True)
    out_json = os.path.join(a.out, f"host_walls_{a.gpu}.json")

    def save():  # after every step: a run cut short keeps what it measured
        with open(out_json, "w") as f:
            json.dump(result, f, indent=1)
    fams = hc.family_configs(None)
    probe(fams[0], a.reps, result["probes"])
    if not a.skip_sweep:
        result["layers"] = hc.measure_layers(None, a.reps)
    probe(fams[0], a.reps, result["probes"])
    save()
    ids = [i for i in CASES if not a.only or re.search(a.only, i)]
    for n, case_id in enumerate(ids):
        try:
            c = case_of(case_id)
            r = measure(c, a.generate_reps if c["phase"] == "generate" else a.reps)
            rec = {k: v for k, v in c.items() if k != "cfg"}
            rec.update(r)
            result["cases"].append(rec)
            print(f"{case_id:40s} host {r['host_us']:10.1f} us  wall {r['wall_us']:10.1f} us  kernels {r['kernels']}",
                  flush=True)
        except Exception as e:  # a case that cannot run here: say so, go on
            result["errors"].append({"id": case_id, "error": f"{type(e).__name__}: {e}"[:400]})
            print(f"{case_id:40s} ERROR {result['errors'][-1]['error']}", flush=True)
        if (n + 1) % PROBE_EVERY == 0:
            probe(fams[0], a.reps, result["probes"])
        save()
    probe(fams[0], a.reps, result["probes"])
    save()


if __name__ == "__main__":
    main()
