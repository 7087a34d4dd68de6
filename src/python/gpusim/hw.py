"""Hardware presets and files: gpusim.hw.list(), gpusim.hw.show(NAME_OR_FILE), gpusim.hw.keys()."""

import json


def _command(args):
    from . import _command as command  # the package's runner (errors raised as ConfigError)
    return command(args)


def list():  # noqa: A001 (the command's name)
    """The hardware presets' names, as `gpusim hw list` prints them (first word of each line)."""
    lines = _command(["hw", "list"]).splitlines()[1:]  # after the header
    return [line.split()[0] for line in lines if line.strip()]


def show(hw, overrides=None):
    """A resolved hardware spec as a dict (every value with its unit and source), as
    `gpusim hw show --format json`. overrides: {"hw.l2.size": "128MiB"}."""
    from . import _set_args
    args = ["hw", "show", str(hw), "--format", "json"] + _set_args(overrides)
    return json.loads(_command(args))


def keys():
    """Every key a hardware file may set, with units and ranges, as `gpusim hw keys` prints it."""
    return _command(["hw", "keys"])


__all__ = ["list", "show", "keys"]
