"""Counting the SSH channels one in-process deploy opens, with the phase each one belongs to.

Why at paramiko's level: every exec, put and get of specops's SSH host is a "session" channel and every
HTTP request to the engine rides a "direct-tcpip" channel, whichever specops function opens it, so wrapping
`paramiko.Transport.open_channel` (and `Channel.exec_command` for the command line, `SSHClient.connect` for
connections) counts exactly what reaches the host's sshd, including the lock's heartbeat thread. The
deploy's phase events come from the reporter `--json` uses (`specops.events.NullReporter`): a channel
belongs to the last event emitted before it opened. Steps without an event of their own count with the
event before them (listed by command, so the attribution can be checked).
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import paramiko

from specops import events
from specops.host import conversation

RECORD_ATTRIBUTE = "_deploy_bench_record"
BEFORE = "(before the first phase event: connect, lock, listing)"
AFTER_GATES = "(after the smoke's verdict: manifest, prune, guard to watch, unlock, listing, audit)"
_SECRETISH = re.compile(r"[0-9a-fA-F-]{20,}|[A-Za-z0-9_-]{32,}")  # lock tokens and the like: never shown


@dataclass
class Channel:
    kind: str  # "session" (an exec) or "direct-tcpip" (a tunnel, e.g. an HTTP request to the engine)
    phase: str
    at: float
    command: str = ""


@dataclass
class Request:
    """One command sent on the deploy's command conversation (a round trip, not a channel of its own)."""

    phase: str
    at: float
    seconds: float
    command: str


@dataclass
class ExecCount:
    """What one deploy opened; filled while `counting()` is active."""

    connections: int = 0
    channels: list[Channel] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    phase_events: list[tuple[float, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def execs(self) -> list[Channel]:
        return [channel for channel in self.channels if channel.kind == "session"]

    @property
    def tunnels(self) -> list[Channel]:
        return [channel for channel in self.channels if channel.kind != "session"]

    def phase_now(self) -> str:
        return self.phase_events[-1][1] if self.phase_events else BEFORE

    def by_phase(self) -> dict[str, list[Channel]]:
        """Execs grouped by phase, phases in the order they happened."""
        grouped: dict[str, list[Channel]] = {}
        for channel in self.execs:
            grouped.setdefault(channel.phase, []).append(channel)
        return grouped

    def requests_by_phase(self) -> dict[str, list[Request]]:
        """Conversation requests grouped by the phase they were sent in, phases in the order they happened."""
        grouped: dict[str, list[Request]] = {}
        for request in self.requests:
            grouped.setdefault(request.phase, []).append(request)
        return grouped

    def first_exec_after(self, phase: str) -> float | None:
        starts = [at for at, name in self.phase_events if name == phase]
        return starts[0] if starts else None


def command_label(wire: str) -> str:
    """A short, secret-free name for an exec: the command without specops's `timeout`/`env` prefix, inline
    scripts shown as <script>, long or token-like words left out."""
    try:
        words = shlex.split(wire)
    except ValueError:
        return "<unparsable command>"
    return words_label(words)


def words_label(words: list[str]) -> str:
    """command_label's name for a command already split into words (a conversation request's argv)."""
    if words[:2] == ["timeout", "-k"]:
        words = words[4:]
    if words[:1] == ["env"]:
        words = words[1:]
        while words and "=" in words[0]:
            words = words[1:]
    shown: list[str] = []
    for word in words[:5]:
        if "\n" in word or len(word) > 60:
            shown.append("<script>")
        elif _SECRETISH.fullmatch(word):
            shown.append("***")
        else:
            shown.append(word.rsplit("/", 1)[-1] if not shown and word.startswith("/") else word)
    return " ".join(shown)


@contextmanager
def counting(on_phase: Callable[[str], None] | None = None) -> Iterator[ExecCount]:
    """Count channels, connections and phase events until the block ends (patches undone afterwards).
    `on_phase(label)`: called at each phase event, with the label the counts use (cpuwindows marks its CPU)."""
    found = ExecCount()
    open_channel = paramiko.Transport.open_channel
    exec_command = paramiko.Channel.exec_command
    connect = paramiko.SSHClient.connect
    null_event = events.NullReporter.event
    exchange = conversation.ConversationHost._exchange

    def counted_open(transport: paramiko.Transport, kind: str, *args: Any, **kwargs: Any) -> paramiko.Channel:
        channel = open_channel(transport, kind, *args, **kwargs)
        with found._lock:
            found.channels.append(Channel(kind, found.phase_now(), time.time()))
            setattr(channel, RECORD_ATTRIBUTE, found.channels[-1])
        return channel

    def counted_exec(channel: paramiko.Channel, command: str | bytes) -> None:
        record = getattr(channel, RECORD_ATTRIBUTE, None)
        if isinstance(record, Channel):
            record.command = command_label(command.decode() if isinstance(command, bytes) else command)
        exec_command(channel, command)

    def counted_connect(client: paramiko.SSHClient, *args: Any, **kwargs: Any) -> None:
        with found._lock:
            found.connections += 1
        connect(client, *args, **kwargs)

    def timed_exchange(host: conversation.ConversationHost, command: Any, words: tuple[str, ...],
                       *args: Any) -> Any:  # fmt: skip
        phase, started = found.phase_now(), time.monotonic()
        try:
            return exchange(host, command, words, *args)
        finally:
            seconds, ended = time.monotonic() - started, time.time()  # before the label: the deploy's clock runs on
            # str() masks a Secret; no shlex round trip of an inline script (~100 kB: ~25 ms a request, which
            # inflated every request's time and the in-process deploy's wall time)
            label = words_label([str(word) for word in words[:24]])
            with found._lock:
                found.requests.append(Request(phase, ended, seconds, label))

    def noted_event(reporter: events.NullReporter, event: events.Event) -> None:
        if event.phase != events.DONE_PHASE:
            verdict = event.phase == "smoke" and not event.message.startswith("running")
            label = AFTER_GATES if verdict else event.phase
            with found._lock:
                found.phase_events.append((event.at, label))
            if on_phase is not None:
                on_phase(label)
        null_event(reporter, event)

    patches: list[tuple[object, str, object]] = [
        (paramiko.Transport, "open_channel", counted_open), (paramiko.Channel, "exec_command", counted_exec),
        (paramiko.SSHClient, "connect", counted_connect), (events.NullReporter, "event", noted_event),
        (conversation.ConversationHost, "_exchange", timed_exchange),
    ]  # fmt: skip
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield found
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def phase_table(found: ExecCount) -> list[tuple[str, int, str]]:
    """(phase, execs, their commands with repeats folded: `journalctl ... ×4`) in the order they happened."""
    rows = []
    for phase, channels in found.by_phase().items():
        folded: dict[str, int] = {}
        for channel in channels:
            folded[channel.command or "?"] = folded.get(channel.command or "?", 0) + 1
        shown = "; ".join(f"`{name}`" + (f" ×{count}" if count > 1 else "") for name, count in folded.items())
        rows.append((phase, len(channels), shown))
    return rows


def request_table(found: ExecCount) -> list[tuple[str, int, float, str]]:
    """(phase, requests, seconds spent in them, the slowest three) in the order the phases happened."""
    rows = []
    for phase, requests in found.requests_by_phase().items():
        slowest = sorted(requests, key=lambda request: -request.seconds)[:3]
        shown = "; ".join(f"`{request.command}` {request.seconds * 1000:.0f} ms" for request in slowest)
        rows.append((phase, len(requests), sum(request.seconds for request in requests), shown))
    return rows
