"""`specops logs`: read the engine's journal on a host, once or following it, failing loudly.

A journal that cannot be read (no permission, journald down, a typo'd unit) is an error with the host's
own message (exit 5), never an empty screen: an operator looking for a crash must not be told "no lines".
Following polls with cursors (`--after-cursor`), so no line is shown twice or skipped between polls.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from specops.commands.journal import journal_argv, split_journal
from specops.commands.units import parse_show, show_argv
from specops.config.inventory import HostSpec
from specops.errors import CommandFailed, UsageError
from specops.host.base import Host, Result

FOLLOW_INTERVAL_S = 1.0
JOURNAL_TIMEOUT_S = 60


@dataclass(frozen=True)
class JournalQuery:
    """What to show: the last `lines` lines, or everything since `since` ('deploy' = the last start)."""

    lines: int = 100
    since: str | None = None
    grep: str | None = None

    def pattern(self) -> re.Pattern[str] | None:
        try:
            return re.compile(self.grep) if self.grep else None
        except re.error as error:
            raise UsageError(f"--grep {self.grep!r}: {error}") from None

    def keep(self, lines: list[str]) -> list[str]:
        pattern = self.pattern()
        return [line for line in lines if pattern is None or pattern.search(line)]


def start_position(host: Host, spec: HostSpec, since: str | None) -> str | None:
    """A journal position: `since` as given, or for 'deploy' the time the unit's main process last started."""
    if since != "deploy":
        return since
    result = host.run(show_argv(spec.unit_name, ["ExecMainStartTimestamp"]), timeout=30)
    _raise_unless_ok(result, spec)
    started = parse_show(result.text).get("ExecMainStartTimestamp", "").strip()
    return started or None


def read_journal(host: Host, spec: HostSpec, position: str | None, lines: int | None) -> tuple[list[str], str | None]:
    """The unit's journal lines after `position` (the last `lines` of them), and the cursor after them.

    Raises CommandFailed (exit 5, with journalctl's stderr) when the host cannot read its journal."""
    result = host.run(journal_argv(spec.unit_name, position, lines), timeout=JOURNAL_TIMEOUT_S)
    _raise_unless_ok(result, spec)
    return split_journal(result.text)


def _raise_unless_ok(result: Result, spec: HostSpec) -> None:
    if not result.ok:
        raise CommandFailed(result, host=spec.name, hint=f"check the journal on {spec.name} (journalctl -u "
                            f"{spec.unit_name}) and that the SSH user may read it (group systemd-journal)")  # fmt: skip


def first_read(host: Host, spec: HostSpec, query: JournalQuery) -> tuple[list[str], str | None]:
    """The first screen: the last N lines, or all since the given position; and where following resumes."""
    position = start_position(host, spec, query.since)
    lines, cursor = read_journal(host, spec, position, None if query.since else query.lines)
    return query.keep(lines), cursor or position


def follow(
    host: Host,
    spec: HostSpec,
    query: JournalQuery,
    position: str | None,
    *,
    stop: threading.Event | None = None,
    sleep: Callable[[float], None] = time.sleep,
    interval_s: float = FOLLOW_INTERVAL_S,
) -> Iterator[list[str]]:
    """New lines after `position`, one batch per poll (possibly empty), until `stop` is set or Ctrl-C."""
    while stop is None or not stop.is_set():
        sleep(interval_s)
        lines, cursor = read_journal(host, spec, position, None)
        position = cursor or position
        yield query.keep(lines)
