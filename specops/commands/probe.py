"""Pure builder for the probe's command: the host's interpreter reading the bundled probe script on stdin."""

from __future__ import annotations


def probe_argv(python: str) -> list[str]:
    """`-I` keeps the user's PYTHONPATH and site out; `-S` keeps the venv's `.pth` files from running as root
    (the probe adds its site-packages itself: remote/probe/sitepath.py); `-` reads the script from stdin."""
    return [python, "-I", "-S", "-"]
