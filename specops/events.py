"""How the core tells what is happening, without deciding how it looks (the CLI renders events).

The deploy and rollback paths call `reporter.event(host, phase, message, **data)`; the CLI shows a spinner or
a line, `--json` collects them, tests record them. No global state: a Reporter is passed in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Event:
    """One thing that happened on one host during a phase."""

    host: str
    phase: str
    message: str
    level: str = "info"  # info | progress | warn | error
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
