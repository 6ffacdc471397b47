"""How deploys look: phase lines while they run, a per-host summary table at the end (PLAY RECAP style).

On a terminal a transient live view sits under the phase lines: one row per host with a spinner, the phase and
the last journal line, and a bar while a big push is sent. Anywhere else (CI, pipes, log files) only lines are
written, so logs stay free of control codes and greppable.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from specops.cli.output import stderr_console, stdout_console, unprefixed
from specops.events import DONE_PHASE

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.spinner import Spinner
    from rich.table import Table

    from specops.deploy.execute import HostOutcome
    from specops.events import Event

_COLORS = {
    "deployed": "green",
    "unchanged": "green",
    "started": "green",
    "restarted": "green",
    "rolled-back": "yellow",
    "locked": "yellow",
    "skipped": "dim",
}
BAR_MIN_BYTES = 8 * 2**20  # smaller pushes finish before a bar would tell anything; the row's message is enough
_SPEED_WINDOW_S = 5.0


class LiveReporter:
    """Renders the core's events on stderr: lines (journal lines only with -v), plus live rows on a terminal.

    Events arrive from several worker threads at once (fleet deploys run hosts in parallel), so printing and
    starting/stopping the live view happen under one lock. Use it as a context manager, or call `close()`:
    the live view must be gone before the summary is printed or an error is reported.
    """

    def __init__(self, verbose: int, console: Console | None = None) -> None:
        self.verbose = verbose
        self.console = console if console is not None else stderr_console()
        self._lock = threading.Lock()
        self._rows = _HostRows() if self.console.is_terminal else None
        self._live: Live | None = None
        self._closed = False

    def __enter__(self) -> LiveReporter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def event(self, event: Event) -> None:
        byte_event = _is_byte_event(event)
        with self._lock:
            if self._rows is not None and not self._closed:
                self._update_rows(self._rows, event, byte_event)
            if event.level == "progress" and (byte_event or self.verbose == 0):
                return
            self.console.print(_line(event))

    def close(self) -> None:
        """Stop the live view (erasing its rows; the phase lines stay). Idempotent; later events print as lines."""
        with self._lock:
            self._closed = True
            live, self._live = self._live, None
            if live is not None:
                live.stop()

    def _update_rows(self, rows: _HostRows, event: Event, byte_event: bool) -> None:
        """Started at the first event, not before: a command that fails while connecting leaves no empty view."""
        layout_changed = rows.update(event, byte_event)
        if self._live is None:
            from rich.live import Live

            # stdout stays untouched (the summary goes there); stray stderr writes land above the rows
            self._live = Live(rows, console=self.console, transient=True, refresh_per_second=10,
                              redirect_stdout=False)  # fmt: skip
            self._live.start(refresh=True)
        elif layout_changed:
            self._live.refresh()  # a new row or a bar appearing/going is shown now, not at the next tick


def _is_byte_event(event: Event) -> bool:
    return "sent_bytes" in event.data and "total_bytes" in event.data


def _line(event: Event) -> str:
    from rich.markup import escape

    style = {"warn": "yellow", "error": "red", "progress": "dim"}.get(event.level, "cyan")
    return f"[bold]{escape(event.host)}[/] [{style}]{event.phase}[/] {escape(unprefixed(event.host, event.message))}"


@dataclass
class _Row:
    """What one host's live row shows; `total` > 0 while a big push's bar is up."""

    phase: str
    message: str
    spinner: Spinner
    sent: int = 0
    total: int = 0
    samples: deque[tuple[float, int]] = field(default_factory=deque)

    def track_bytes(self, sent: int, total: int) -> None:
        """Show the bar only while a big push is under way; a finished or small one leaves just the message."""
        if sent >= total or total < BAR_MIN_BYTES:
            self.total, self.sent = 0, 0
            self.samples.clear()
            return
        now = time.monotonic()
        self.sent, self.total = sent, total
        self.samples.append((now, sent))
        while len(self.samples) > 2 and now - self.samples[0][0] > _SPEED_WINDOW_S:
            self.samples.popleft()

    def speed(self) -> float | None:
        """Bytes per second over the last few seconds (None until two samples): a stall shows within seconds."""
        if len(self.samples) < 2:
            return None
        (first_at, first_sent), (last_at, last_sent) = self.samples[0], self.samples[-1]
        return (last_sent - first_sent) / (last_at - first_at) if last_at > first_at else None


class _HostRows:
    """The live view's state and rendering. rich renders it from its refresh thread while workers update it,
    so both sides hold `_lock`, and nothing else is locked while it is held (no lock-order deadlock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] = {}

    def update(self, event: Event, byte_event: bool) -> bool:
        """Record the event in its host's row; True when the layout changed (a new row, a bar shown or hidden)."""
        from rich.spinner import Spinner

        message = event.message.splitlines()[0] if event.message.strip() else ""
        with self._lock:
            if event.phase == DONE_PHASE:  # the host is finished: its line was printed, its row goes
                return self._rows.pop(event.host, None) is not None
            row = self._rows.get(event.host)
            created = row is None
            if row is None:
                row = self._rows[event.host] = _Row(event.phase, message, Spinner("dots", style="cyan"))
            had_bar = row.total > 0
            row.phase, row.message = event.phase, message
            if byte_event:
                row.track_bytes(int(event.data["sent_bytes"]), int(event.data["total_bytes"]))
            elif had_bar and event.phase != "push":
                row.track_bytes(0, 0)  # the push ended without a final count (it failed): no stale bar
            return created or had_bar != (row.total > 0)

    def __rich__(self) -> Table:
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            cells = [(host, row.phase, row.spinner, _bar(row) if row.total else Text(row.message, style="dim"))
                     for host, row in self._rows.items()]  # fmt: skip
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(no_wrap=True)
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(style="cyan", no_wrap=True)
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        for host, phase, spinner, last in cells:
            grid.add_row(spinner, Text(host), Text(phase), last)
        return grid


def _bar(row: _Row) -> RenderableType:
    """Bar, percentage, MiB sent of total, speed: enough to tell a slow link from a stuck push."""
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    speed = row.speed()
    grid = Table.grid(padding=(0, 1))
    grid.add_row(
        ProgressBar(total=row.total, completed=row.sent, width=30),
        f"{row.sent / row.total:>4.0%}",
        f"{row.sent / 2**20:,.1f}/{row.total / 2**20:,.1f} MiB",
        "?" if speed is None else f"{speed / 2**20:,.1f} MiB/s",
    )
    return grid


def print_summary(results: dict[str, HostOutcome], rows: dict[str, HostOutcome] | None = None) -> None:
    """A row per host (per member of a group holding engines: `rows`), then each host's notes (each rank's)."""
    from rich.markup import escape
    from rich.table import Table

    console = stdout_console()
    table = Table(box=None, pad_edge=False)
    for column in ("HOST", "OUTCOME", "SERVING", "ATTEMPTED", "TOK/S", "ACCEPT", "TTFT P50/P99", "SECONDS"):
        table.add_column(column)
    for name, outcome in (results if rows is None else rows).items():
        figures = outcome.gates.smoke.figures if outcome.gates and outcome.gates.smoke else {}
        color = _COLORS.get(outcome.outcome, "red")
        table.add_row(
            name,
            f"[{color}]{outcome.outcome}[/]",
            outcome.release or "-",
            outcome.attempted or "-",
            _figure(figures.get("tokens_per_s")),
            _figure(figures.get("accept_length")),
            _ttft(figures.get("ttft_p50_s"), figures.get("ttft_p99_s")),
            f"{sum(outcome.phases.values()):.1f}",
        )
    console.print(table)
    for name, outcome in results.items():
        if outcome.lock_taken_over:
            console.print(f"[bold]{escape(name)}[/]: {escape(unprefixed(name, outcome.lock_taken_over))}")
        for line in outcome.passed_checks():
            console.print(f"[bold]{escape(name)}[/]: [yellow]{escape(line)}[/]")
        if outcome.cause and outcome.outcome not in ("deployed",):
            console.print(f"[bold]{escape(name)}[/]: {escape(unprefixed(name, outcome.cause))}")
        if outcome.blame:
            console.print(f"[bold]{escape(name)}[/]: {escape(outcome.blame)}")
        for line in _stop_lines(outcome):
            console.print(f"[bold]{escape(name)}[/]: {escape(unprefixed(name, line))}")
        if outcome.rollback is not None:
            console.print(f"[bold]{escape(name)}[/]: {escape(unprefixed(name, outcome.rollback.summary))}")
        if outcome.watch_s:
            console.print(f"[bold]{escape(name)}[/]: the guard watches {escape(outcome.release or '-')} for "
                          f"{outcome.watch_s} s on the host (`specops status {escape(name)}`)")  # fmt: skip
        if outcome.hint and not outcome.ok:
            console.print(f"  [cyan]hint:[/] {escape(outcome.hint)}")
        if final := outcome.final_line():  # last: what serves now, as read from the host at the end
            console.print(f"[bold]{escape(name)}[/]: {_serving_markup(unprefixed(name, final))}", soft_wrap=True)


def _serving_markup(line: str) -> str:
    """What serves, in green when a verified release serves, red when nothing (verified) does, else yellow."""
    from rich.markup import escape

    if line.startswith("NOTHING") or " unverified" in line or "NOT verified" in line:
        return f"[red]{escape(line)}[/]"
    return f"[green]{escape(line)}[/]" if line.startswith("serving ") else f"[yellow]{escape(line)}[/]"


def _stop_lines(outcome: HostOutcome) -> list[str]:
    """The drain when it cut requests or waited for some, and every orphan --reap stopped."""
    if outcome.stop is None:
        return []
    drain, lines = outcome.stop.drain, []
    waited = drain.at_start is not None and drain.at_start.in_flight > 0
    if drain.killed or waited:
        lines.append(drain.summary())
    lines += [f"reaped {holder.describe()}" for holder in outcome.stop.gpus.reaped]
    return lines


def _figure(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "-"


def _ttft(p50: object, p99: object) -> str:
    """The sampled requests' time to first token, in ms: what users feel first."""
    if not isinstance(p50, int | float) or not isinstance(p99, int | float):
        return "-"
    return f"{p50 * 1000:.0f}/{p99 * 1000:.0f} ms"
