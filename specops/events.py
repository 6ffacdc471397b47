"""How the core tells what is happening, without deciding how it looks (the CLI renders events).

The deploy and rollback paths call `reporter.event(host, phase, message, **data)`; the CLI shows a spinner or
a line, `--json` collects them, tests record them. No global state: a Reporter is passed in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

DONE_PHASE = "done"  # the last event of a host's deploy: its outcome; the live view drops the host's row
Level = Literal["info", "progress", "warn", "error"]  # progress: journal lines and byte counts (shown with -v)


@dataclass(frozen=True)
class Event:
    """One thing that happened on one host during a phase."""

    host: str
    phase: str
    message: str
    level: Level = "info"
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


class Reporter(Protocol):
    def event(self, event: Event) -> None: ...


class Recorder:
    """A Reporter that keeps every event (for tests and for --json output)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def event(self, event: Event) -> None:
        self.events.append(event)

    def messages(self, host: str | None = None) -> list[str]:
        return [e.message for e in self.events if host is None or e.host == host]


class NullReporter:
    def event(self, event: Event) -> None:
        return None


class ByteProgress:
    """A push's byte counts as "progress" events carrying `sent_bytes`/`total_bytes` (the CLI draws a bar),
    at most one per `interval_s`, and always the last one, so a 10 GB push does not flood the reporter."""

    def __init__(self, reporter: Reporter, host: str, phase: str, interval_s: float = 0.1) -> None:
        self.reporter, self.host, self.phase, self.interval_s = reporter, host, phase, interval_s
        self._last = 0.0

    def __call__(self, sent: int, total: int) -> None:
        now = time.monotonic()
        if sent < total and now - self._last < self.interval_s:
            return
        self._last = now
        message = f"{sent / 2**20:,.1f} of {total / 2**20:,.1f} MiB sent"
        data = {"sent_bytes": sent, "total_bytes": total}
        self.reporter.event(Event(self.host, self.phase, message, level="progress", data=data))
