"""Writes docs/python.md: a walkthrough of the Python package, each step's code run here and its
output pasted below it, as a notebook would show it. Run from the repository root after a build:

    PYTHONPATH=build/python python3 scripts/python_walkthrough.py > docs/python.md
"""

import contextlib
import io
import os
import shutil
import tempfile
import textwrap

STEPS = [
    ("""# gpusim from Python

The package `gpusim` is the command line's library calls as Python functions (pybind11): the
same simulation, the same results, no files to parse. The README's setup builds it into
`build/python`; `cmake --install` puts it beside the installed executable (README, "Installing").
Every function takes a file or a dict of the file's keys, returns the command's JSON document
wrapped as an object with records and DataFrames, raises `gpusim.ConfigError` for bad input, and
releases the GIL while it simulates. This page is written by `scripts/python_walkthrough.py`,
which runs each step and pastes its output.

```sh
PYTHONPATH=build/python python3     # or jupyter, with the same PYTHONPATH
```

## One run""", """
import gpusim
print(gpusim.__version__)   # gpusim.version() adds the commit it was built from
r = gpusim.run("configs/workloads/decode.yaml", hw="h100")
r
"""),
    ("""`str(r)` is the table `gpusim run` prints. The numbers are attributes (the JSON document's
keys, docs/results.md); `r.kernels` is one record per launch, with every metric of the JSON.""", """
print(r.total_us, r.kernel_time_us, len(r.kernels), r.bands["total_us"])
k = r.kernels[0]
print(k.name)
print(k.family, k.duration_us, k.grid, k.block, k.achieved_occupancy, k.bound)
"""),
    ("""## DataFrames

`to_pandas()` gives one row per kernel (grid and block split into `_x/_y/_z` columns, the 80%
prediction band into `band_low_us` and `band_high_us`); `to_pandas("by_category")` the time by
op category.""", """
df = r.to_pandas()
print(df.groupby("family").duration_us.agg(["count", "sum"]).sort_values("sum", ascending=False))
"""),
    ("""Joining with measurements is a merge on the op name (`op` names the module the kernel came
from, as the profiler's stack shows it). The measured column here is made up for the example.""", """
import pandas as pd
measured = pd.DataFrame({"op": ["layers[0].mlp.gate_proj", "lm_head"], "measured_us": [43.1, 352.0]})
print(df.merge(measured, on="op")[["op", "name", "duration_us", "measured_us"]].to_string(index=False))
"""),
    ("""## Dicts, overrides and threads

A dict is a workload file's keys (paths in it are relative to the working folder); `overrides`
are `--set`'s. Each call releases the GIL while it simulates, so a thread pool runs points side by
side; `kernels=False` leaves the kernel list out of the result (a model step's list is thousands of
records), which makes a call several times cheaper in a loop.""", """
import concurrent.futures
w = {"model": "llama3-8b", "phase": "decode", "batch": 16, "seq_len": 1024}   # dtype: bf16 by default

def point(p):
    batch, l2 = p
    r = gpusim.run(w, hw="h100", overrides={"workload.batch": batch, "hw.l2.size": l2}, kernels=False)
    return batch, l2, r.total_us

with concurrent.futures.ThreadPoolExecutor() as pool:
    for batch, l2, us in pool.map(point, [(b, l2) for b in (1, 16, 64) for l2 in ("50MiB", "256MiB")]):
        print(f"batch {batch:3d}  L2 {l2:>6s}  {us:9.1f} us")
"""),
    ("""## Errors

Bad input raises `gpusim.ConfigError` (a `ValueError`) naming the file (for a dict, `<workload
dict>`), the line and the key, as the command line's message does.""", """
try:
    gpusim.run({**w, "batch": 0}, hw="h100")
except gpusim.ConfigError as e:
    print(e)
    print(repr(e.file), e.line, repr(e.key), "|", e.detail)
"""),
    ("""## Studies

`sweep` runs a study (a file or a dict) with every point in parallel; `rows` are records, and the
plot is drawn when the study names one. `out=None` keeps only the rows; with a folder the sweep
can be interrupted and resumed. `progress=True` (also for `run` and `serve`) draws the command
line's progress line on `sys.stderr`, so a notebook shows it; by default it is drawn only when
stderr is a terminal. For a large study, `sweep` is the fast way: its points share the kernel
outcomes simulated before on the same chip (exact), where separate `run` calls each start cold.""", """
s = gpusim.sweep({"name": "sms", "workload": "configs/workloads/decode.yaml", "hw": "h100",
                  "grid": {"hw.sm_count": [66, 132], "workload.batch": [1, 64]},
                  "metrics": ["total_us", "tokens_per_s", "top_bound"],
                  "plot": {"metric": "total_us", "x": "hw.sm_count", "series": "workload.batch"}},
                 out=os.path.join(tmp, "sweep-sms"))
print(s)
print(s.to_pandas().to_string(index=False))
print(os.path.basename(s.plot))
"""),
    ("""## Serving

`serve` puts a stream of requests through a continuous-batching engine on the chip;
`summary` holds throughput and latency percentiles, `requests` and `steps` are records.""", """
sv = gpusim.serve("configs/serve/llama8b-poisson.yaml", hw="h100", overrides={"workload.requests.count": 50})
print(sv)
print(sv.summary["requests_per_s"], sv.summary["ttft_s"]["p50"], sv.summary["tpot_s"]["p50"])
print(sv.to_pandas()[["id", "prompt_tokens", "output_tokens", "ttft_s", "tpot_s"]].head(3).to_string(index=False))
"""),
    ("""## Reports, occupancy, hardware, traces

`report` writes the Markdown profiling report with its roofline image (and shows as Markdown in
a notebook); `occupancy` is CUDA's occupancy rules for one block shape; `hw.list` and `hw.show`
the presets; `replay` a profiler trace re-simulated on another chip.""", """
rep = gpusim.report("configs/workloads/decode.yaml", hw="h100", out=os.path.join(tmp, "report-decode"),
                    batches=[1, 16], seq_lens=[1024])
print(os.path.basename(rep.folder), os.path.basename(rep.roofline), len(rep.kernels))
print(rep.markdown.splitlines()[0])
o = gpusim.occupancy(hw="h100", threads=256, regs=128, smem="48KiB")
print(o.ctas_per_sm, o.theoretical_occupancy, o.limited_by)
print(gpusim.hw.list())
h200 = gpusim.hw.show("h200")
print(h200["fields"]["sm_count"]["value"], h200["fields"]["l2.size"]["value"], h200["fields"]["l2.size"]["source"])
t = gpusim.replay("tests/replay/data/replay_h200_streams_gemm_elementwise.json.gz", hw="h100", recorded_on="h200")
print(t, t.replay["coverage_pct"])
"""),
]


def main():
    tmp = tempfile.mkdtemp(prefix="gpusim-walkthrough-")
    scope = {"os": os, "tmp": tmp}
    out = []
    try:
        for prose, code in STEPS:
            code = textwrap.dedent(code).strip("\n")
            out.append(prose + "\n\n```python\n" + code + "\n```\n")
            lines = code.splitlines()
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                # A last line that is an expression shows its value, as a notebook cell does.
                body, last = lines[:-1], lines[-1]
                if last and not last.startswith((" ", "print(", "#")) and "=" not in last and ":" not in last:
                    exec("\n".join(body), scope)
                    print(repr(eval(last, scope)))
                else:
                    exec(code, scope)
            printed = buf.getvalue().rstrip("\n")
            if printed:
                out.append("```text\n" + printed + "\n```\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(out), end="")


if __name__ == "__main__":
    main()
