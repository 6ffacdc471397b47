"""`specops logs`: read the engine's journal on a host, once or following it, failing loudly.

A journal that cannot be read (no permission, journald down, a typo'd unit) is an error with the host's
own message (exit 5), never an empty screen: an operator looking for a crash must not be told "no lines".
Following polls with cursors (`--after-cursor`), so no line is shown twice or skipped between polls.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

from specops.commands.journal import journal_argv, split_journal
from specops.commands.unit import parse_show, show_argv
from specops.config.inventory import HostSpec
from specops.errors import CommandFailed, SpecopsError, UsageError
from specops.host.base import Host, Result

FOLLOW_INTERVAL_S = 1.0
JOURNAL_TIMEOUT_S = 60


@dataclass(frozen=True)
class JournalQuery:
    """What to show: the last `lines` lines, or everything since `since` ('deploy' = the last start)."""

    lines: int = 100
    since: str | None = None
    grep: str | None = None
    timed: bool = False  # lines as `-o short-unix` prints them: "SECONDS.MICROS HOST IDENT[PID]: MESSAGE"

    def pattern(self) -> re.Pattern[str] | None:
        try:
            return re.compile(self.grep) if self.grep else None
        except re.error as error:
            raise UsageError(
                f"--grep {self.grep!r}: {error}",
                hint="--grep takes a Python regular expression; quote it for the shell",
            ) from None

    def keep(self, lines: list[str]) -> list[str]:
        pattern = self.pattern()
        texts = [split_timed(line)[1] for line in lines] if self.timed else lines
        return [line for line, text in zip(lines, texts, strict=True) if pattern is None or pattern.search(text)]


_TIMED = re.compile(r"^(\d+\.\d+) \S+ [^:\s]+: ?(.*)$", re.DOTALL)


def split_timed(line: str) -> tuple[float | None, str]:
    """(seconds since the epoch, message) of a `-o short-unix` line; (None, line) for a continuation line of a
    multi-line message (journalctl indents it) or anything else."""
    found = _TIMED.match(line)
    return (float(found.group(1)), found.group(2)) if found else (None, line.strip())


def start_position(host: Host, spec: HostSpec, since: str | None) -> str | None:
    """A journal position: `since` as given, or for 'deploy' the time the unit's main process last started."""
    if since != "deploy":
        return since
    result = host.run(show_argv(spec.unit_name, ["ExecMainStartTimestamp"]), timeout=30, check=False)
    _raise_unless_ok(result, spec)
    started = parse_show(result.text).get("ExecMainStartTimestamp", "").strip()
    return started or None


def read_journal(
    host: Host, spec: HostSpec, position: str | None, lines: int | None, timed: bool = False
) -> tuple[list[str], str | None]:
    """The unit's journal lines after `position` (the last `lines` of them), and the cursor after them.

    Raises CommandFailed (exit 5, with journalctl's stderr) when the host cannot read its journal."""
    result = host.run(journal_argv(spec.unit_name, position, lines, timed), timeout=JOURNAL_TIMEOUT_S, check=False)
    if no_entries(result):
        return [], None
    _raise_unless_ok(result, spec)
    return split_journal(result.text)


def no_entries(result: Result) -> bool:
    """journalctl (systemd 252) with --show-cursor exits 1 silently when no entry matches (a unit that never
    logged): an empty journal, not a failure. A real failure says why on stderr."""
    return result.exit_code == 1 and not result.stdout.strip() and not result.stderr.strip()


def _raise_unless_ok(result: Result, spec: HostSpec) -> None:
    if not result.ok:
        raise CommandFailed(result, host=spec.name, hint=f"check the journal on {spec.name} (journalctl -u "
                            f"{spec.unit_name}) and that the SSH user may read it (group systemd-journal)")  # fmt: skip


def first_read(host: Host, spec: HostSpec, query: JournalQuery) -> tuple[list[str], str | None]:
    """The first screen, and where following resumes: the last N lines, or all since the given position.

    With --grep the whole window is searched first (`--since`, else the current engine's run since its last
    start) and the last N matches are shown: a grep over only the last N lines finds nothing once health
    probes fill the journal."""
    since = query.since or ("deploy" if query.grep else None)
    position = start_position(host, spec, since)
    lines, cursor = read_journal(host, spec, position, None if since else query.lines, query.timed)
    kept = query.keep(lines)
    return kept[-query.lines :] if query.grep else kept, cursor or position


def follow(
    host: Host,
    spec: HostSpec,
    query: JournalQuery,
    position: str | None,
    *,
    stop: threading.Event | None = None,
    sleep: Callable[[float], None] = time.sleep,
    interval_s: float | None = None,
) -> Iterator[list[str]]:
    """New lines after `position`, one batch per poll (possibly empty), until `stop` is set or Ctrl-C."""
    while stop is None or not stop.is_set():
        sleep(FOLLOW_INTERVAL_S if interval_s is None else interval_s)
        lines, cursor = read_journal(host, spec, position, None, query.timed)
        position = cursor or position
        yield query.keep(lines)


@dataclass(frozen=True)
class HostLines:
    """A batch of one host's journal lines (`first`: the initial read), or the error that ended its reading."""

    host: str
    lines: list[str]
    first: bool = False
    error: SpecopsError | None = None


Opener = Callable[[HostSpec], Callable[[], AbstractContextManager[Host]]]


def journal_fleet(
    specs: list[HostSpec], opener: Opener, query: JournalQuery, keep_following: bool
) -> Iterator[HostLines]:
    """Every host's journal at once, each host read (and followed) by its own worker over its own connection.

    Batches come as the hosts produce them, so followed journals interleave in real time. A host that fails
    yields its error and stops; the others go on. Closing the iterator (Ctrl-C) stops every worker."""
    batches: queue.Queue[HostLines | None] = queue.Queue()
    stop = threading.Event()

    def work(spec: HostSpec) -> None:
        try:
            with opener(spec)() as host:
                lines, position = first_read(host, spec, query)
                batches.put(HostLines(spec.name, lines, first=True))
                if keep_following:
                    for batch in follow(host, spec, query, position, stop=stop):
                        if batch:
                            batches.put(HostLines(spec.name, batch))
        except SpecopsError as error:
            batches.put(HostLines(spec.name, [], error=error))
        finally:
            batches.put(None)

    for spec in specs:
        threading.Thread(target=work, args=(spec,), name=f"journal-{spec.name}", daemon=True).start()
    running = len(specs)
    try:
        while running:
            item = batches.get()
            if item is None:
                running -= 1
            else:
                yield item
    finally:
        stop.set()
