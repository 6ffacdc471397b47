"""Run the real specops on a pseudo-terminal, as an operator types at it: answer each prompt, watch meanwhile.

A process that is still running at the deadline is killed (the test then fails on its exit code), and the
child is always reaped exactly once.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path


def run_on_terminal(
    argv: list[str], *, env: dict[str, str], prompt: bytes, answer: str, cwd: Path | None = None,
    timeout_s: float = 600, every_tick: Callable[[], None] | None = None,
) -> tuple[int, str]:  # fmt: skip
    """Exit code and everything the terminal showed; `answer` is typed at each new `prompt`, `every_tick` runs
    about five times a second while the process runs."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty
        if cwd is not None:
            os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    output, answered = b"", 0
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if every_tick is not None:
                every_tick()
            if not select.select([fd], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
            if output.count(prompt) > answered:
                answered += 1
                os.write(fd, answer.encode() + b"\n")
    finally:
        status = _reap(pid)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


def _reap(pid: int) -> int:
    """The child's wait status; a child still running (the deadline passed) is killed first."""
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    return status
