"""Where the shipped data (unit templates, built-in profiles) lives, installed or in a checkout.

The wheel carries `units/` and `profiles/` under `specops/_data/`; a source checkout keeps them at the top
of the repository. Looking in both means an editable install and a built wheel behave the same.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # specops/


def data_dir(name: str) -> Path:
    """The folder `name` ('units' or 'profiles') of this specops, installed or from a checkout."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"specops data folder {name!r} is missing from this installation ({_PACKAGE_DIR})")


def starter_config() -> str:
    """The commented specops.toml that `specops init` writes (also the documented example)."""
    return (Path(__file__).resolve().parent / "starter.toml").read_text(encoding="utf-8")
