"""Result objects: the JSON documents the command line writes (docs/results.md), with the rows
users iterate over as records and, when pandas is installed, as DataFrames."""

import csv
import math


class Record(dict):
    """One row (a kernel, a request, a study point): a dict whose keys are also attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return list(self.keys()) + list(super().__dir__())


def _pandas():
    try:
        import pandas
    except ImportError as e:
        raise ImportError("to_pandas() needs pandas (Debian's python3-pandas, or pip install pandas)") from e
    return pandas


# Lists of three (grid, block) and of two (prediction bands) become columns of their own.
_SPLIT = {3: ("_x", "_y", "_z"), 2: ("_low", "_high")}


def _flat(record):
    row = {}
    for key, value in record.items():
        splits = isinstance(value, list) and len(value) in _SPLIT and all(isinstance(v, (int, float)) for v in value)
        if splits and (len(value) == 3 or key.endswith("_us")):
            stem, unit = (key[:-3], "_us") if len(value) == 2 else (key, "")
            for suffix, v in zip(_SPLIT[len(value)], value):
                row[stem + suffix + unit] = v
        else:
            row[key] = value
    return row


def _frame(records):
    return _pandas().DataFrame([_flat(r) for r in records])


class _Document:
    """A result document: `data` is the JSON as a dict; keys read as items or attributes."""

    def __init__(self, data, table=""):
        self.data = data
        self.table = table

    def __getitem__(self, key):
        return self.data[key]

    def __getattr__(self, name):
        data = self.__dict__.get("data", {})
        if name in data:
            return data[name]
        raise AttributeError(name)

    def keys(self):
        return self.data.keys()

    def __str__(self):
        return self.table or repr(self)


class RunResult(_Document):
    """`gpusim run`'s result: totals, prediction bands, time by category and bound class, and
    `kernels`, one Record per launch (name, op, family, duration_us, grid, block, occupancy,
    throughput, l2_hit_rate, bound, ...)."""

    def __init__(self, data, table=""):
        super().__init__(data, table)
        self.kernels = [Record(k) for k in data.get("kernels", [])]
        self.by_category = [Record(g) for g in data.get("by_category", [])]
        self.by_bound = [Record(g) for g in data.get("by_bound", [])]

    def to_pandas(self, what="kernels"):
        """A DataFrame of `kernels` (one row per launch; grid and block split into _x/_y/_z
        columns, band_us into band_low_us/band_high_us), `by_category` or `by_bound`."""
        if what not in ("kernels", "by_category", "by_bound"):
            raise ValueError(f"what: '{what}' is not one of: kernels, by_category, by_bound")
        return _frame(getattr(self, what))

    def __repr__(self):
        return (f"<gpusim.RunResult {self.data.get('workload')} on {self.data.get('hw')} ({self.data.get('mode')}): "
                f"{self.data.get('total_us', 0):.1f} us, {len(self.kernels)} kernels>")


class ServeResult(_Document):
    """`gpusim serve`'s result: the engine, the KV cache, `summary` (throughput, latency
    percentiles, goodput), `requests` and `steps` as Records."""

    def __init__(self, data, table=""):
        super().__init__(data, table)
        self.requests = [Record(r) for r in data.get("requests", [])]
        self.steps = [Record(s) for s in data.get("steps", [])]

    def to_pandas(self, what="requests"):
        """A DataFrame of `requests` (token_times_s kept as a list per row) or `steps`."""
        if what not in ("requests", "steps"):
            raise ValueError(f"what: '{what}' is not one of: requests, steps")
        return _frame(getattr(self, what))

    def __repr__(self):
        s = self.data.get("summary", {})
        return (f"<gpusim.ServeResult {self.data.get('serve')} on {self.data.get('hw')}: {s.get('requests')} requests, "
                f"{s.get('requests_per_s', 0):.2f} req/s>")


def _number(text):
    """A CSV cell as the number it spells (int when integral), else the text."""
    try:
        value = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return text
        if math.isnan(value):
            return text
    return value


def read_csv_records(path):
    """The rows of a CSV gpusim wrote, as Records with numbers converted."""
    with open(path, newline="") as f:
        return [Record({k: _number(v) for k, v in row.items()}) for row in csv.DictReader(f)]


class SweepResult:
    """`gpusim sweep`'s result: `rows` (one Record per point: point, name, the study's columns,
    its metrics), where the CSV and the plot are (None when not kept), and how many points were
    simulated or taken from an earlier, interrupted run."""

    def __init__(self, rows, csv_path, plot, points, simulated, reused):
        self.rows = rows
        self.csv = csv_path
        self.plot = plot
        self.points = points
        self.simulated = simulated
        self.reused = reused

    def to_pandas(self):
        return _pandas().DataFrame(list(self.rows))

    def __iter__(self):
        return iter(self.rows)

    def __len__(self):
        return len(self.rows)

    def __repr__(self):
        return f"<gpusim.SweepResult {self.points} points ({self.simulated} simulated, {self.reused} reused)>"


class ReportResult:
    """`gpusim report`'s result: the folder, the Markdown text, the roofline image's path (None
    when it could not be drawn) and the profiled kernels as Records."""

    def __init__(self, folder, markdown, roofline, kernels):
        self.folder = folder
        self.markdown = markdown
        self.roofline = roofline
        self.kernels = kernels

    def to_pandas(self):
        return _pandas().DataFrame(list(self.kernels))

    def _repr_markdown_(self):
        return self.markdown

    def __str__(self):
        return self.markdown

    def __repr__(self):
        return f"<gpusim.ReportResult {self.folder}>"


class ReplayResult(RunResult):
    """`gpusim replay`'s result: a run's document (the replayed kernels) plus `replay`: coverage,
    recorded against simulated time by family, what could not be mapped."""

    def __repr__(self):
        return f"<gpusim.ReplayResult on {self.data.get('hw')}: {self.data.get('total_us', 0):.1f} us>"
