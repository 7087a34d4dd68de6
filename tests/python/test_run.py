import concurrent.futures
import json
import os
import subprocess

import pytest

import gpusim

OPS = {
    "name": "two-ops",
    "dtype": "bf16",
    "ops": [
        {"op": "matmul", "M": 2048, "N": 2048, "K": 2048},
        {"op": "rms_norm", "R": 4096, "C": 4096},
    ],
}


def test_version_matches_the_command_line():
    assert gpusim.__version__ == gpusim._gpusim.version
    assert gpusim.__version__.count(".") == 2
    binary = os.environ.get("GPUSIM_BINARY")
    if binary:
        printed = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout
        assert printed.strip() == gpusim.version()
    assert gpusim.version().startswith(f"gpusim {gpusim.__version__} (commit ")


def test_run_returns_the_same_document_as_the_command_line(configs):
    workload = os.path.join(configs, "workloads", "decode.yaml")
    r = gpusim.run(workload, hw="h100")
    binary = os.environ.get("GPUSIM_BINARY")
    if binary:  # ctest sets it: the CLI's JSON for the same run, byte for byte the same numbers
        printed = subprocess.run([binary, "run", workload, "--hw", "h100", "--format", "json"], check=True,
                                 capture_output=True, text=True).stdout
        assert json.loads(printed) == r.data
    assert r.hw == "h100-sxm5" and r.mode == "graph"
    assert r.total_us > r.kernel_time_us > 0
    assert len(r.kernels) == len(r.data["kernels"]) > 100
    k = r.kernels[0]
    assert k.name == k["name"] and k.duration_us > 0 and len(k.grid) == 3
    assert sum(g.time_us for g in r.by_category) == pytest.approx(r.kernel_time_us, rel=1e-6)
    assert "h100-sxm5" in str(r) and "RunResult" in repr(r)


def test_a_dict_runs_as_the_file_with_the_same_keys(tmp_path):
    path = tmp_path / "two-ops.yaml"
    path.write_text(json.dumps(OPS))
    from_file = gpusim.run(path, hw="h100")
    from_dict = gpusim.run(OPS, hw="h100")
    assert from_dict.data == from_file.data
    assert [k.op for k in from_dict.kernels][:1] == ["ops[0] matmul"]


def test_overrides_change_the_answer_through_the_mechanism():
    base = gpusim.run(OPS, hw="h100")
    slow_dram = gpusim.run(OPS, hw="h100", overrides={"hw.dram.bandwidth": "1TB/s"})
    few_sms = gpusim.run(OPS, hw="h100", overrides={"hw.sm_count": 33})
    assert slow_dram.total_us > base.total_us
    def gemm_us(r):
        return sum(k.duration_us for k in r.kernels if k.family == "gemm")
    assert gemm_us(few_sms) > 2 * gemm_us(base)  # a quarter of the SMs
    in_fp32 = gpusim.run(OPS, hw="h100", overrides={"workload.dtype": "fp32"})
    assert gemm_us(in_fp32) > 2 * gemm_us(base)  # no tensor cores for fp32


def test_eager_mode_and_the_cache_switch():
    decode = {"model": "llama3.2-1b", "phase": "decode", "batch": 1, "seq_len": 128, "dtype": "bf16",
              "lowering": "hf-eager"}
    graph = gpusim.run(decode, hw="h100", mode="graph")
    eager = gpusim.run(decode, hw="h100", mode="eager")
    assert eager.total_us > graph.total_us  # small kernels: launches cannot hide behind them
    assert gpusim.run(decode, hw="h100", cache=False).data == graph.data


def test_out_writes_every_format(tmp_path):
    gpusim.run(OPS, hw="h100", out=tmp_path / "r")
    for name in ("summary.txt", "result.json", "kernels.csv", "trace.json"):
        assert (tmp_path / "r" / name).stat().st_size > 0


def test_bad_input_raises_config_error_with_file_line_and_key(tmp_path):
    with pytest.raises(gpusim.ConfigError) as e:
        gpusim.run({**OPS, "ops": [{"op": "matmul", "M": 64, "N": 64}]}, hw="h100")
    assert e.value.file == "<workload dict>" and e.value.key == "ops[0].K" and e.value.line > 0
    assert "missing" in e.value.detail and isinstance(e.value, ValueError)
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: llama3-8b\nphase: decode\nbatch: -3\nseq_len: 16\ndtype: bf16\n")
    with pytest.raises(gpusim.ConfigError) as e:
        gpusim.run(bad, hw="h100")
    assert (e.value.file, e.value.line, e.value.key) == (str(bad), 3, "batch")
    with pytest.raises(gpusim.ConfigError) as e:
        gpusim.run(OPS, hw="no-such-chip")
    assert "no-such-chip" in str(e.value)
    with pytest.raises(gpusim.ConfigError) as e:
        gpusim.run(OPS, hw="h100", overrides={"hw.l2.size": "lots"})
    assert e.value.key == "hw.l2.size"
    with pytest.raises(gpusim.ConfigError):
        gpusim.run(OPS, hw="h100", mode="fast")
    with pytest.raises(TypeError):
        gpusim.run(42)


def test_threads_simulate_side_by_side_with_the_same_results():
    batches = [1, 4, 16, 64]
    def point(b):
        workload = {"model": "llama3.2-1b", "phase": "decode", "batch": b, "seq_len": 512, "dtype": "bf16",
                    "lowering": "hf-eager"}
        return gpusim.run(workload, hw="h100").data
    alone = [point(b) for b in batches]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        together = list(pool.map(point, batches))
    assert together == alone
    assert alone[0]["total_us"] < alone[-1]["total_us"]


def test_to_pandas_has_a_row_per_kernel():
    pd = pytest.importorskip("pandas")
    r = gpusim.run(OPS, hw="h100")
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(r.kernels)
    for column in ("name", "duration_us", "grid_x", "block_x", "band_low_us", "band_high_us", "achieved_occupancy"):
        assert column in df.columns
    assert df.duration_us.sum() == pytest.approx(r.kernel_time_us, rel=1e-6)
    assert (df.band_low_us <= df.band_high_us).all()
    assert set(r.to_pandas("by_category").name) == {g.name for g in r.by_category}
    with pytest.raises(ValueError):
        r.to_pandas("nothing")


def test_dtype_defaults_and_clock_overflow_are_reported():
    r = gpusim.run({"model": "llama3.2-1b", "phase": "decode", "batch": 1, "seq_len": 64})
    assert r.data["dtype"] == "bf16" and r.data["dtype_default"]
    with pytest.raises(gpusim.ConfigError) as e:
        gpusim.run({"ops": [{"op": "matmul", "M": 99999999, "N": 99999999, "K": 99999999, "dtype": "bf16"}]})
    assert e.value.key == "ops[0]" and "overflow" in e.value.detail


def test_several_gpus_take_the_parallel_keys():
    # A system preset as hw, and the pipeline's stages on the result (docs/multi-gpu.md).
    w = {"model": "llama3-8b", "phase": "decode", "batch": 8, "seq_len": 512,
         "tensor_parallel": 2, "pipeline_parallel": 2, "micro_batches": 2}
    r = gpusim.run(w, hw="dgx-h100")
    assert r.memory["gpus"] == 4
    assert r.pipeline["stages"] == 2 and r.pipeline["gpus_per_stage"] == 2
    assert sum(s["layers"] for s in r.pipeline["stage"]) == 32
    assert {k.stage for k in r.kernels} == {0, 1}
    assert any(k.family == "sendrecv" for k in r.kernels)
    with pytest.raises(gpusim.ConfigError) as bad:
        gpusim.run(dict(w, pipeline_parallel=64), hw="dgx-h100")
    assert "pipeline_parallel" in str(bad.value)
