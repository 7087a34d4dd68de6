#!/usr/bin/env python3
"""Compares gpusim's hf-eager kernel lists with measured ones (validation/data/hf_models_*.json).

  scripts/compare_hf_kernels.py [--data FILE] [--hw h100] [--split calibration] [--case REGEX] [--detail]

For each case: simulated vs measured kernel count and kernel_time_us, and per kernel class
(what the kernel does, from its name) the time on both sides. Development aid for calibration;
by default it only reads calibration cases, so held-out results stay unseen.
"""
import argparse, gzip, json, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kclass(name):
    rules = [("gemm", r"nvjet|xmma|cutlass.*gemm|gemmSN|gemv|sgemm|Kernel2"), ("splitk", r"splitKreduce"),
             ("grouped_gemm", r"GroupProblemShape|grouped_gemm|enable_3x_kernel"), ("attention", r"sdpa|flash|fmha|lean_reduction"),
             ("cat", r"CatArray"), ("reduce", r"reduce_kernel"), ("layernorm", r"layer_norm"), ("softmax", r"softmax"),
             ("index", r"indexSelect|gather|index_elementwise"), ("topk", r"topk|gatherTopK|bitonicSort|radixSort"),
             ("memcpy", r"Memcpy"), ("memset", r"Memset"), ("scan", r"Scan|scan"), ("histc", r"Histogram"),
             ("ew_legacy", r"elementwise_kernel<128"), ("ew_unrolled", r"unrolled_elementwise"),
             ("ew_vectorized", r"vectorized_elementwise"), ("arange", r"arange")]
    for c, rx in rules:
        if re.search(rx, name):
            return c
    return "other"


def simulate(case, hw):
    cfg = os.path.join(ROOT, "validation/data", case["hf_config"])
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(f"hf_config: {cfg}\nphase: {case['phase']}\nbatch: {case['batch']}\nseq_len: {case['seq_len']}\n"
                f"dtype: bf16\nlowering: hf-eager\n" + (f"output_len: {case['output_len']}\n" if case.get("output_len") else ""))
        path = f.name
    out = subprocess.run([os.path.join(ROOT, "build/src/gpusim"), "run", path, "--hw", hw, "--format", "json"],
                         capture_output=True, text=True)
    os.unlink(path)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "validation/data/hf_models_h100.json.gz"))
    ap.add_argument("--hw", default="h100")
    ap.add_argument("--split", default="calibration")
    ap.add_argument("--case", default=None)
    ap.add_argument("--detail", action="store_true")
    a = ap.parse_args()
    with (gzip.open if a.data.endswith(".gz") else open)(a.data, "rt") as r:  # stored gzip'd
        data = json.load(r)
    for c in data["cases"]:
        if c["split"] != a.split or (a.case and not re.search(a.case, c["id"])):
            continue
        sim = simulate(c, a.hw)
        names = c["names"]
        meas = {}
        for k in c["kernels"]:
            cl = kclass(names[k[0]])
            meas.setdefault(cl, [0, 0.0])
            meas[cl][0] += 1
            meas[cl][1] += k[6]
        simc = {}
        for k in sim["kernels"]:
            cl = kclass(k["name"])
            simc.setdefault(cl, [0, 0.0])
            simc[cl][0] += 1
            simc[cl][1] += k["duration_us"]
        mt, st = c["kernel_time_us_median"], sim["kernel_time_us"]
        print(f"{c['id']:40s} kernels {c['n_kernels']:5d} sim {len(sim['kernels']):5d}   kernel_time {mt:9.1f} sim {st:9.1f}  err {100*(st-mt)/mt:+6.1f}%")
        if a.detail:
            for cl in sorted(set(meas) | set(simc)):
                m = meas.get(cl, [0, 0]); s = simc.get(cl, [0, 0])
                print(f"    {cl:14s} n {m[0]:5d} / {s[0]:5d}   us {m[1]:9.1f} / {s[1]:9.1f}")


if __name__ == "__main__":
    main()
