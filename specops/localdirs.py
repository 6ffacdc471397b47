"""Where specops keeps its files on the operator's machine: caches (built bundles, file hashes, doctor plans)
and state (the local audit log), by the XDG base-directory rule that other command-line tools follow."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/specops, else ~/.cache/specops."""
    return _xdg_root("XDG_CACHE_HOME", (".cache",), os.environ if environ is None else environ)


def state_root(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME/specops, else ~/.local/state/specops."""
    return _xdg_root("XDG_STATE_HOME", (".local", "state"), os.environ if environ is None else environ)


def _xdg_root(variable: str, default: tuple[str, ...], environ: Mapping[str, str]) -> Path:
    """The XDG spec says a relative path is invalid and must be ignored: a relative one would put the files
    wherever the command happens to run."""
    base = environ.get(variable, "")
    if os.path.isabs(base):
        return Path(base) / "specops"
    home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    return home.joinpath(*default) / "specops"
