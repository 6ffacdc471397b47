"""How deploys look: phase lines while they run, a per-host summary table at the end (PLAY RECAP style)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from specops.cli.output import stderr_console, stdout_console

if TYPE_CHECKING:
    from specops.deploy import HostOutcome
    from specops.events import Event

_COLORS = {"deployed": "green", "unchanged": "green", "rolled-back": "yellow", "skipped": "dim"}


class LiveReporter:
    """Prints each phase as a line on stderr; progress events (journal lines) only with -v."""

    def __init__(self, verbose: int) -> None:
        self.verbose = verbose
        self.console = stderr_console()
        self._lock = threading.Lock()

    def event(self, event: Event) -> None:
        from rich.markup import escape

        if event.level == "progress" and self.verbose == 0:
            return
        style = {"warn": "yellow", "error": "red", "progress": "dim"}.get(event.level, "cyan")
        with self._lock:
            self.console.print(f"[bold]{escape(event.host)}[/] [{style}]{event.phase}[/] {escape(event.message)}")


def print_summary(results: dict[str, HostOutcome]) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = stdout_console()
    table = Table(box=None, pad_edge=False)
    for column in ("HOST", "OUTCOME", "SERVING", "ATTEMPTED", "TOK/S", "ACCEPT", "SECONDS"):
        table.add_column(column)
    for name, outcome in results.items():
        figures = outcome.gates.smoke.figures if outcome.gates and outcome.gates.smoke else {}
        color = _COLORS.get(outcome.outcome, "red")
        table.add_row(
            name,
            f"[{color}]{outcome.outcome}[/]",
            outcome.release or "-",
            outcome.attempted or "-",
            _figure(figures.get("tokens_per_s")),
            _figure(figures.get("accept_length")),
            f"{sum(outcome.phases.values()):.1f}",
        )
    console.print(table)
    for name, outcome in results.items():
        if outcome.cause and outcome.outcome not in ("deployed",):
            console.print(f"[bold]{escape(name)}[/]: {escape(outcome.cause)}")
        if outcome.rollback is not None:
            console.print(f"[bold]{escape(name)}[/]: {escape(outcome.rollback.summary)}")
        if outcome.hint and outcome.outcome not in ("deployed", "unchanged"):
            console.print(f"  [cyan]hint:[/] {escape(outcome.hint)}")


def _figure(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "-"
