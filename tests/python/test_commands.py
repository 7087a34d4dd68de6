import json
import os
import struct

import pytest

import gpusim

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) of a PNG, after checking its signature and header chunk."""
    data = open(path, "rb").read()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


SERVE = {
    "model": "llama3.2-1b",
    "engine": "vllm-v1",
    "requests": {"count": 12, "arrival": "poisson", "rate": 20, "prompt_tokens": {"uniform": [64, 256]},
                 "output_tokens": 8, "seed": 3},
    "slo": {"ttft": "500ms", "tpot": "50ms"},
}


def test_serve_from_a_dict_and_its_records(tmp_path):
    r = gpusim.serve(SERVE, hw="h100", out=tmp_path / "s")
    assert r.summary["requests"] == 12 == len(r.requests)
    assert all(q.ttft_s > 0 and len(q.token_times_s) == 8 for q in r.requests)
    assert len(r.steps) == r.summary["steps"] > 0
    assert png_size(tmp_path / "s" / "serve.png")[0] > 100
    faster = gpusim.serve(SERVE, hw="h100", overrides={"workload.requests.rate": 2})
    assert faster.summary["duration_s"] > r.summary["duration_s"]  # arrivals spread out
    pd = pytest.importorskip("pandas")
    assert len(r.to_pandas()) == 12 and "ttft_s" in r.to_pandas().columns
    assert len(r.to_pandas("steps")) == len(r.steps)


def test_serve_errors_name_the_key():
    with pytest.raises(gpusim.ConfigError) as e:
        gpusim.serve({**SERVE, "engine": "no-such-engine"}, hw="h100")
    assert e.value.key == "engine" and e.value.file == "<serve dict>"


def study(configs):
    return {"name": "tiny", "workload": os.path.join(configs, "workloads", "decode.yaml"), "hw": "h100",
            "grid": {"hw.sm_count": [66, 132], "workload.batch": [1, 8]},
            "metrics": ["total_us", "tokens_per_s"], "plot": {"metric": "total_us", "x": "hw.sm_count",
                                                             "series": "workload.batch"}}


def test_sweep_rows_csv_and_plot(configs, tmp_path):
    s = gpusim.sweep(study(configs), out=tmp_path / "sw", threads=2)
    assert len(s) == s.points == 4 and s.simulated == 4 and s.reused == 0
    rows = {(r["hw.sm_count"], r["workload.batch"]): r.total_us for r in s}
    assert rows[(66, 8)] > rows[(132, 8)] and rows[(132, 8)] > rows[(132, 1)]
    assert os.path.exists(s.csv) and png_size(s.plot)[0] > 100
    again = gpusim.sweep(study(configs), out=tmp_path / "sw")
    assert again.reused == 4 and [dict(r) for r in again] == [dict(r) for r in s]
    in_temp = gpusim.sweep(study(configs))
    assert in_temp.csv is None and [dict(r) for r in in_temp] == [dict(r) for r in s]
    pd = pytest.importorskip("pandas")
    assert list(s.to_pandas()["total_us"]) == [r.total_us for r in s]


def test_sweep_bad_study_raises(configs):
    bad = {**study(configs), "metrics": ["no_such_metric"]}
    with pytest.raises(gpusim.ConfigError) as e:
        gpusim.sweep(bad)
    assert e.value.key.startswith("metrics") and e.value.file == "<study dict>"


def test_report_writes_markdown_and_a_roofline(tmp_path):
    workload = {"name": "small-decode", "model": "llama3.2-1b", "phase": "decode", "batch": 4, "seq_len": 256,
                "dtype": "bf16", "lowering": "hf-eager"}
    r = gpusim.report(workload, hw="h100", out=tmp_path / "rep", batches=[1, 4], seq_lens=[256, 512])
    assert r.markdown.startswith("#") and "roofline.png" in r.markdown
    assert r.roofline and png_size(r.roofline)[0] > 100
    assert len(r.kernels) > 10 and (tmp_path / "rep" / "workload.yaml").exists()


def test_occupancy_and_hardware():
    o = gpusim.occupancy(hw="h100", threads=256, regs=128)
    assert o.ctas_per_sm == 2 and o.theoretical_occupancy == 0.25 and o.limited_by == ["registers"]
    assert "h100-sxm5" in gpusim.hw.list() and "rtx5090" in gpusim.hw.list()
    spec = gpusim.hw.show("h100")
    bigger = gpusim.hw.show("h100", overrides={"hw.l2.size": "128MiB"})
    assert json.dumps(spec) != json.dumps(bigger)
    with pytest.raises(gpusim.ConfigError):
        gpusim.occupancy(hw="h100", threads=0)


def test_replay_a_profiler_trace(repo):
    trace = os.path.join(repo, "tests", "replay", "data", "replay_h200_streams_gemm_elementwise.json.gz")
    r = gpusim.replay(trace, hw="h100", recorded_on="h200")
    assert r.total_us > 0 and len(r.kernels) > 0 and 0 < r.replay["coverage_pct"] <= 100
    assert r.replay["target"] == "h100-sxm5" and {f["family"] for f in r.replay["families"]} >= {"gemm", "elementwise"}


def test_progress_lines_go_to_python_stderr(configs, capsys):
    gpusim.sweep(study(configs), threads=2, progress=True)
    gpusim.serve(SERVE, hw="h100", progress=True)
    err = capsys.readouterr().err
    assert "study tiny" in err and "4/4 (100%)" in err
    assert "serving requests" in err and "12/12 (100%)" in err
    gpusim.sweep(study(configs), progress=False)
    assert capsys.readouterr().err == ""
