"""Log lines in SGLang's console format, flushed one by one so journald shows them as they happen."""

from __future__ import annotations

import sys
import time


def log(message: str) -> None:
    """Print `[YYYY-MM-DD HH:MM:SS] message`, the prefix SGLang's logger puts on every line."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    sys.stdout.write(f"[{stamp}] {message}\n")
    sys.stdout.flush()


def uvicorn_log(message: str) -> None:
    """Print a line the way uvicorn's own logger does (`INFO:     ...`, no timestamp)."""
    sys.stdout.write(f"INFO:     {message}\n")
    sys.stdout.flush()
