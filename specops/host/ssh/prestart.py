"""Commands started before anyone asks for them, handed over to the first caller that asks for the same one.

Why: every exec pays the host's login shell before its command runs (0.15-0.3 s where root's .bashrc runs pyenv
or conda init, common on GPU hosts). A deploy knows from its last run the two long-lived commands it will start
first (its command conversation and its push session, specops/cli/early/deploy.py), so it starts them as soon
as it is connected: those login shells then run while this machine still loads specops and stages the build.

A command is handed over only as it was asked for: the same words, no environment of its own, a host deadline
no shorter than the one asked for, and still running within its time. Anything else is started fresh, and what
nobody took is closed with the connection (both scripts end at the end of their input, having changed nothing).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specops.host.process import RunningCommand


@dataclass(frozen=True)
class Prestarted:
    words: tuple[str, ...]
    timeout: float
    command: RunningCommand


class PrestartedCommands:
    """The commands a connection started early and nobody has taken yet."""

    def __init__(self) -> None:
        self._waiting: list[Prestarted] = []
        self._lock = threading.Lock()

    def add(self, words: tuple[str, ...], timeout: float, command: RunningCommand) -> None:
        with self._lock:
            self._waiting.append(Prestarted(words, timeout, command))

    def take(self, words: tuple[str, ...], timeout: float) -> RunningCommand | None:
        """The command started early as `words`, if its deadline allows `timeout` (else None: start it anew)."""
        with self._lock:
            found = next((early for early in self._waiting if early.words == words and early.timeout >= timeout), None)
            if found is not None:
                self._waiting.remove(found)
        if found is None or time.monotonic() < found.command.deadline:
            return None if found is None else found.command
        found.command.close()  # too late to be of use
        return None

    def close_all(self) -> None:
        with self._lock:
            left, self._waiting = self._waiting, []
        for early in left:
            early.command.close()
