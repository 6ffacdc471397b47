"""The operator's hooks around a restart, run on THIS machine: `pre_stop` before the engine is stopped (take
the host out of a load balancer or router) and `post_start` once a verified engine serves again (put it back).

A hook is an argv list from specops.toml, run without a shell, with the host, the release and the phase in its
environment (SPECOPS_HOST, SPECOPS_RELEASE, SPECOPS_PHASE, SPECOPS_ACTION), and a time limit.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from specops.errors import ExitCode, SpecopsError

HOOK_TIMEOUT_S = 120.0
OUTPUT_TAIL_CHARS = 500


class HookFailed(SpecopsError):
    """A pre_stop hook failed: the deploy stopped before anything on the host changed."""

    exit_code = ExitCode.CHECKS_FAILED


@dataclass(frozen=True)
class HookRun:
    phase: str
    argv: tuple[str, ...]
    exit_code: int | None  # None: it could not start, or ran past the time limit
    seconds: float
    output: str  # the tail of its stdout+stderr, or why it did not run

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def summary(self) -> str:
        shown = " ".join(self.argv)
        if self.ok:
            return f"{self.phase} hook `{shown}` passed ({self.seconds:.1f} s)"
        status = f"exited {self.exit_code}" if self.exit_code is not None else self.output
        tail = f": {self.output.strip()}" if self.exit_code is not None and self.output.strip() else ""
        return f"{self.phase} hook `{shown}` failed ({status}){tail}"

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "argv": list(self.argv), "exit_code": self.exit_code,
                "seconds": round(self.seconds, 3), "ok": self.ok, "output": self.output}  # fmt: skip


def run_hook(phase: str, argv: list[str], *, host: str, release: str | None, action: str,
             timeout: float = HOOK_TIMEOUT_S) -> HookRun:  # fmt: skip
    env = {**os.environ, "SPECOPS_HOST": host, "SPECOPS_RELEASE": release or "", "SPECOPS_PHASE": phase,
           "SPECOPS_ACTION": action}  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return HookRun(phase, tuple(argv), None, time.monotonic() - started, f"ran past its {timeout:g} s limit")
    except OSError as error:
        return HookRun(phase, tuple(argv), None, time.monotonic() - started, f"could not start: {error.strerror}")
    output = (done.stdout + done.stderr).decode("utf-8", "replace")[-OUTPUT_TAIL_CHARS:]
    return HookRun(phase, tuple(argv), done.returncode, time.monotonic() - started, output)
