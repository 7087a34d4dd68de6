"""gpusim: a discrete-event performance simulator for GPUs running transformer workloads.

The same library calls the command line makes, from Python::

    import gpusim
    r = gpusim.run("configs/workloads/decode.yaml", hw="h100", overrides={"workload.batch": 32})
    r.total_us, r.kernels[0].name, r.to_pandas()

Every function takes a file path or a dict in its place (the file's keys; paths inside a dict are
relative to the working folder), raises gpusim.ConfigError for bad input, and releases the GIL
while it simulates, so threads run points side by side. See docs/python.md.
"""

import json
import os
import shutil
import sys
import tempfile
import warnings

from . import _gpusim, _paths, hw
from .errors import ConfigError, GpusimWarning, ModelError
from .results import (Record, ReplayResult, ReportResult, RunResult, ServeResult, SweepResult,
                      read_csv_records)

__version__ = _gpusim.version
__all__ = ["version", "run", "serve", "sweep", "report", "replay", "occupancy", "hw", "config_dir", "ConfigError",
           "ModelError", "GpusimWarning", "Record", "RunResult", "ServeResult", "SweepResult",
           "ReportResult", "ReplayResult", "__version__"]


def version():
    """What `gpusim --version` prints: the release and the commit it was built from."""
    return _gpusim.version_text()


def config_dir():
    """The configuration folder presets come from: $GPUSIM_CONFIG_DIR, else the one installed
    beside the package (share/gpusim/configs), else the source tree's."""
    env = os.environ.get("GPUSIM_CONFIG_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.normpath(os.path.join(here, _paths.CONFIG_DIR))
    if os.path.isdir(installed):
        return installed
    return _gpusim.source_config_dir


def _source(value, what):
    """(label, text): a path's (path, None), or a dict's YAML text (JSON is YAML) and a label."""
    if isinstance(value, dict):
        return f"<{what} dict>", json.dumps(value, indent=1)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value), None
    raise TypeError(f"{what}: expected a file path or a dict, not {type(value).__name__}")


def _format_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _sets(overrides):
    """{"hw.l2.size": "128MiB", "workload.batch": 32} as --set takes them."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        raise TypeError("overrides: expected a dict such as {'hw.l2.size': '128MiB', 'workload.batch': 32}")
    return [f"{key}={_format_value(value)}" for key, value in overrides.items()]


def _set_args(overrides):
    """The overrides as the command line's --set arguments."""
    return [a for s in _sets(overrides) for a in ("--set", s)]


def _warn(stderr):
    for line in stderr.splitlines():
        if line.strip():
            warnings.warn(line.removeprefix("gpusim: "), GpusimWarning, stacklevel=3)


def _path_arg(value, what):
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what}: expected a file path, not {type(value).__name__}")
    return os.fspath(value)


def _command(args):
    """Runs a command as the CLI does, in-process: its stdout; ConfigError for bad input."""
    status, out, err = _gpusim.command([str(a) for a in args], config_dir())
    if status != 0:
        raise RuntimeError(f"gpusim {args[0]} exited with status {status}: {err.strip()}")
    _warn(err)
    return out


def _progress(progress):
    """None: a progress line when stderr is a terminal, as the command line draws it."""
    if progress is None:
        return hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    return bool(progress)


def run(workload, hw="h100", overrides=None, mode="graph", cache=True, kernels=True, out=None, top=15,
        progress=None):
    """Simulates a workload (ops or a model phase) on a chip, as `gpusim run`.

    workload: a workload file or a dict of its keys. hw: a preset name or hardware file.
    overrides: {"hw.KEY": value, "workload.KEY": value} as --set. mode: "graph" or "eager".
    cache: replay kernel outcomes simulated before (the same results, faster). kernels: False
    leaves the per-kernel list out of the result (totals, groups and bands stay; a loop over
    many points runs several times faster). out: a folder to
    write summary.txt, result.json, kernels.csv and trace.json into. top: kernels the table
    (str(result)) lists. progress: a progress line on sys.stderr over a run's steps (True in a
    notebook; None: when stderr is a terminal). Returns a RunResult.
    """
    label, text = _source(workload, "workload")
    data, table, err = _gpusim.run(label, text, _path_arg(hw, "hw"), _sets(overrides), mode, bool(cache),
                                   bool(kernels), None if out is None else os.fspath(out), int(top),
                                   _progress(progress), config_dir())
    _warn(err)
    return RunResult(data, table)


def serve(serve_file, hw="h100", overrides=None, out=None, progress=None):
    """Serves a stream of requests with a continuous-batching engine, as `gpusim serve`.

    serve_file: a serve file or a dict of its keys. overrides: {"workload.requests.rate": 8,
    "hw.l2.size": "100MiB"}. out: a folder to write every output into (serve.png included).
    progress: a progress line on sys.stderr as requests finish. Returns a ServeResult.
    """
    label, text = _source(serve_file, "serve")
    data, table, err = _gpusim.serve(label, text, _path_arg(hw, "hw"), _sets(overrides),
                                     None if out is None else os.fspath(out), _progress(progress), config_dir())
    _warn(err)
    return ServeResult(data, table)


def sweep(study, out=None, threads=0, cache=True, progress=None):
    """Runs every point of a design study, as `gpusim sweep`.

    study: a study file or a dict of its keys. out: the results folder (results.csv, plot.png; an
    interrupted sweep resumes from it); None runs in a temporary folder and keeps only the rows.
    threads: simulations at once (0: all cores). progress: a progress line on sys.stderr as
    points finish. Returns a SweepResult.
    """
    label, text = _source(study, "study")
    keep = out is not None
    folder = os.fspath(out) if keep else tempfile.mkdtemp(prefix="gpusim-sweep-")
    try:
        csv_path, points, reused, simulated, drawn, plot = _gpusim.sweep(label, text, folder, int(threads),
                                                                         bool(cache), _progress(progress),
                                                                         config_dir())
        rows = read_csv_records(csv_path)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    if plot and not drawn:
        warnings.warn(f"no plot: {plot}", GpusimWarning, stacklevel=2)
    return SweepResult(rows, csv_path if keep else None, plot if (drawn and keep) else None, points, simulated, reused)


def _absolute_hf_config(workload):
    """A dict workload written into another folder keeps its hf_config path pointing where it did."""
    if "hf_config" in workload and isinstance(workload["hf_config"], str):
        return {**workload, "hf_config": os.path.abspath(workload["hf_config"])}
    return workload


def report(workload, hw="h100", out=None, overrides=None, mode="graph", batches=None, seq_lens=None,
           models=None, cache=True):
    """Writes a simulated profiling report (Markdown, a roofline image), as `gpusim report`.

    workload: a workload file or a dict (written into the folder as workload.yaml). out: the
    folder (default report-WORKLOAD-HW in the working folder). batches, seq_lens: the tables'
    rows (lists of ints); models: training workloads' grid rows (preset names). Returns a
    ReportResult.
    """
    if isinstance(workload, dict):
        folder = os.fspath(out) if out is not None else f"report-{workload.get('name', 'workload')}-{hw}"
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "workload.yaml")
        with open(path, "w") as f:
            f.write("# The workload gpusim.report() was given (JSON is YAML).\n")
            json.dump(_absolute_hf_config(workload), f, indent=1)
        workload, out = path, folder
    args = ["report", _path_arg(workload, "workload"), "--hw", _path_arg(hw, "hw"), "--mode", mode]
    args += _set_args(overrides)
    if out is not None:
        args += ["--out", os.fspath(out)]
    if batches is not None:
        args += ["--batches", ",".join(str(int(b)) for b in batches)]
    if seq_lens is not None:
        args += ["--seq-lens", ",".join(str(int(s)) for s in seq_lens)]
    if models is not None:
        args += ["--models", ",".join(models)]
    if not cache:
        args.append("--no-cache")
    printed = _command(args)
    folder = _report_folder(printed, out)
    with open(os.path.join(folder, "report.md")) as f:
        markdown = f.read()
    roofline = os.path.join(folder, "roofline.png")
    kernels_csv = os.path.join(folder, "kernels.csv")
    kernels = read_csv_records(kernels_csv) if os.path.exists(kernels_csv) else []
    return ReportResult(folder, markdown, roofline if os.path.exists(roofline) else None, kernels)


def _report_folder(printed, out):
    if out is not None:
        return os.fspath(out)
    # The command prints where it wrote the report ("... -> FOLDER/report.md").
    for word in printed.replace(",", " ").split():
        if word.endswith("report.md"):
            return os.path.dirname(word) or "."
    raise RuntimeError(f"gpusim report did not say where it wrote the report: {printed.strip()}")


def replay(trace, hw="h100", recorded_on=None, overrides=None, mode="graph", dtype=None):
    """Re-simulates a PyTorch profiler trace (.json, .json.gz) or an Nsight Systems SQLite export
    on a chip, as `gpusim replay`. recorded_on: the preset of the chip it was recorded on. mode:
    "graph", "eager" or "as-recorded". Returns a ReplayResult."""
    args = ["replay", _path_arg(trace, "trace"), "--hw", _path_arg(hw, "hw"), "--mode", mode, "--format", "json"]
    if recorded_on is not None:
        args += ["--from", recorded_on]
    if dtype is not None:
        args += ["--dtype", dtype]
    args += _set_args(overrides)
    return ReplayResult(json.loads(_command(args)))


def occupancy(hw="h100", threads=128, regs=0, smem=0, overrides=None):
    """Resident CTAs and warps per SM for one block shape, as `gpusim occupancy`: a Record with
    the theoretical occupancy and the limits that bind. smem: bytes or a size such as "48KiB"."""
    args = ["occupancy", "--hw", _path_arg(hw, "hw"), "--threads", int(threads), "--regs", int(regs),
            "--smem", smem, "--format", "json"]
    args += _set_args(overrides)
    return Record(json.loads(_command(args)))
