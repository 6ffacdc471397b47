"""Pure builder for the probe's command: the host's interpreter reading the bundled probe script on stdin."""

from __future__ import annotations


def probe_argv(python: str) -> list[str]:
    """`-I` keeps the user's PYTHONPATH and site out; `-` reads the script from stdin (nothing is written)."""
    return [python, "-I", "-"]
