"""Signals as interruptions with a defined end: SIGINT, SIGTERM and SIGHUP all unwind the same way.

Ctrl-C raises KeyboardInterrupt; a `kill` (SIGTERM) or a closed terminal (SIGHUP) would otherwise end the
process at once, with the lock kept and an engine it stopped left down. The console entry installs one
handler for all three (`on_signal`; `install` in tests): each raises `Interrupted`, a KeyboardInterrupt
carrying the signal's name and exit code (128 + its number, as shells report it), so every path that already
ends a Ctrl-C cleanly (the lock released, the guard left armed, the audit line) ends these too.

While an interrupted operation puts back what served (`shielded`), a second signal does not cut that short.
What each host serves after the interruption is noted here (`note`) by the code that knows it, and printed by
the CLI's error boundary with the exit code.

Python runs a signal's handler wherever the main thread happens to be, and an exception raised inside a
finaliser is dropped: paramiko's `Channel.__del__` calls `close()` under a bare `except: pass`. A signal that
lands there would be lost and the command would go on as if none came. So the signal stays `pending` until
the CLI's error boundary has answered it, and each step boundary (`check`, called by the lock's `confirm`)
raises it again when its exception never got anywhere.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_notes: list[str] = []
_lock = threading.Lock()
_shield = {"depth": 0}
_last = {"signum": 0}  # the signal that ended this command (0: none yet)
_pending = {"signum": 0}  # a signal raised and not yet answered by the CLI (its exception may have been dropped)


class Interrupted(KeyboardInterrupt):
    """A signal that ends the command: `name` ("SIGTERM"), `code` the exit code (128 + its number)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.code = 128 + signum
        super().__init__(self.name)


def signal_name(error: BaseException) -> str:
    """The signal an interruption came from: a plain KeyboardInterrupt is Ctrl-C (SIGINT)."""
    return error.name if isinstance(error, Interrupted) else "SIGINT"


def exit_code(error: BaseException) -> int:
    """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
    return error.code if isinstance(error, Interrupted) else 128 + signal.SIGINT


def on_signal(signum: int, frame: FrameType | None) -> None:
    interruption = Interrupted(signum)
    _last["signum"] = signum
    if _shield["depth"] > 0:  # putting back what served after an interruption: that one ends the command
        return
    _pending["signum"] = signum
    raise interruption


def check() -> None:
    """Raise the pending interruption again when its exception was dropped on the way (a finaliser's bare
    `except`), so the command still ends at this step boundary. Nothing while it is being handled (an `except`,
    a `finally` or a `with` exit meeting it: `sys.exc_info`) or while what served is put back (`shielded`)."""
    signum = _pending["signum"]
    if signum and _shield["depth"] == 0 and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
        raise Interrupted(signum)


def unanswered() -> int:
    """The signal still pending once the command returned (0: none): it came after the last step boundary."""
    return _pending["signum"]


def answered() -> None:
    """The CLI's error boundary has reported the interruption: nothing is pending any more."""
    _pending["signum"] = 0


def again() -> KeyboardInterrupt:
    """The interruption for a worker thread that stops because the main thread was interrupted (a fleet's
    cancel event): the same signal, so its host's audit line names it (a plain KeyboardInterrupt: Ctrl-C)."""
    return Interrupted(_last["signum"]) if _last["signum"] else KeyboardInterrupt()


def install() -> None:
    """Make SIGINT, SIGTERM and SIGHUP raise Interrupted in the main thread (call once, from the main thread)."""
    for signum in HANDLED:
        signal.signal(signum, on_signal)


@contextmanager
def shielded() -> Iterator[None]:
    """Signals during the block are ignored, so that a restore started because of an interruption finishes
    (a host left half-restored would be dark); the interruption that started it still ends the command."""
    _shield["depth"] += 1
    try:
        yield
    finally:
        _shield["depth"] -= 1


def note(line: str) -> None:
    """What a host serves after an interruption (thread-safe: fleet workers note their own hosts)."""
    with _lock:
        _notes.append(line)


def take_notes() -> list[str]:
    """The notes so far, and none left."""
    with _lock:
        notes = list(_notes)
        _notes.clear()
    return notes
