"""The exceptions gpusim raises.

Bad input (a workload, hardware, study or serve file, a dict given in their place, an override or
an argument) raises ConfigError, which says where: the file (or "<workload dict>" and the like for
a dict), the 1-based line (0 when there is none) and the key path, as the command line's message
does. A model's limits (a shape a kernel model does not support) raise ModelError.
"""


class ConfigError(ValueError):
    """Bad input: `file`, `line`, `key` and `detail` say where and what."""

    def __init__(self, message, file="", line=0, key="", detail=""):
        super().__init__(message)
        self.file = file
        self.line = line
        self.key = key
        self.detail = detail


class ModelError(RuntimeError):
    """A valid input a cost model cannot handle."""


class GpusimWarning(UserWarning):
    """A note the command line prints on stderr (no prediction bands, no plot)."""
