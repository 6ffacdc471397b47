"""`specops logs ENGINE`: the ranks' journals merged by time, each line tagged with its rank and host.

Why merged: a multi-node engine fails across ranks (a worker's NCCL error, then rank 0's timeout); read side by
side in time order, the first failure is the first red line. The journals are read as `-o short-unix` (every
entry with its time), merged, and shown as `r0 HOST | MESSAGE`; with -f new batches follow as they come.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import typer

from specops.cli.output import escape, print_json, stderr_console, stdout_console

if TYPE_CHECKING:
    from specops.cli.engine_rows import Selection
    from specops.cli.state import AppState
    from specops.errors import SpecopsError
    from specops.ops.journal import HostLines, JournalQuery


@dataclass(frozen=True)
class TaggedLine:
    time: float
    tag: str  # "r0 ds-a" for a rank, the host's name otherwise
    rank: int | None
    host: str
    text: str


def tagged(host: str, lines: Iterable[str], selection: Selection) -> list[TaggedLine]:
    """A host's timed lines with their tag; a continuation line takes its entry's time."""
    from specops.ops.journal import split_timed

    ranked = selection.rank_of(host)
    tag = f"r{ranked[1]} {host}" if ranked else host
    found, last = [], 0.0
    for line in lines:
        when, text = split_timed(line)
        last = when if when is not None else last
        found.append(TaggedLine(last, tag, ranked[1] if ranked else None, host, text))
    return found


def merged(batches: Iterable[tuple[str, list[str]]], selection: Selection) -> list[TaggedLine]:
    """Every host's lines in one list by time (a stable sort: one host's lines keep their order)."""
    lines = [line for host, batch in batches for line in tagged(host, batch, selection)]
    return sorted(lines, key=lambda line: line.time)


def logs_of_engines(
    app_state: AppState, selection: Selection, query: JournalQuery, follow: bool, as_json: bool
) -> NoReturn:
    """The first screen merged across hosts, then (with -f) each new batch as it comes; exit as a fleet does."""
    from dataclasses import replace

    from specops.deploy.survey import most_severe
    from specops.ops.journal import journal_fleet

    failed: dict[str, SpecopsError] = {}
    batches = journal_fleet(selection.specs, app_state.opener, replace(query, timed=True), follow)
    first = _first_reads(batches, len(selection.specs), failed)
    shown = merged(first, selection)
    if as_json:
        errors = {
            host: {"message": e.message, "hint": e.hint, "exit_code": int(e.exit_code)} for host, e in failed.items()
        }
        print_json({"lines": [line.__dict__ for line in shown], "errors": errors})
    else:
        _print(shown)
        for batch in batches:  # only while following
            if batch.error is not None:
                failed[batch.host] = batch.error
                stderr_console().print(f"[bold red]error:[/] {escape(batch.error.message)}", soft_wrap=True)
            else:
                _print(merged([(batch.host, batch.lines)], selection), explain=False)
    raise typer.Exit(int(most_severe(error.exit_code for error in failed.values())))


def _first_reads(
    batches: Iterator[HostLines], hosts: int, failed: dict[str, SpecopsError]
) -> list[tuple[str, list[str]]]:
    """Each host's first read (or its error, reported now), before anything is shown."""
    found: list[tuple[str, list[str]]] = []
    answered = 0
    while answered < hosts:
        batch = next(batches, None)
        if batch is None:
            break
        if batch.error is not None:
            failed[batch.host] = batch.error
            stderr_console().print(f"[bold red]error:[/] {escape(batch.error.message)}", soft_wrap=True)
        elif not batch.first:
            found.append((batch.host, batch.lines))
            continue
        else:
            found.append((batch.host, batch.lines))
        answered += 1
    return found


def _print(lines: list[TaggedLine], explain: bool = True) -> None:
    from specops.engine.signatures import match

    console = stdout_console()
    width = max((len(line.tag) for line in lines), default=0)
    hits = {m.line_no: m for m in match([line.text for line in lines])}
    for number, line in enumerate(lines):
        hit = hits.get(number)
        style = "red" if hit and hit.fatal else ("yellow" if hit else "")
        text = f"[{style}]{escape(line.text)}[/]" if style else escape(line.text)
        console.print(f"{escape(line.tag):<{width}} | {text}", soft_wrap=True)
    if explain:
        for number, hit in hits.items():
            if hit.signature.kind in ("fatal", "error", "warning"):
                console.print(f"[bold]explained[/] ({escape(lines[number].tag)}): {escape(hit.summary)}")
                if hit.signature.hint:
                    console.print(f"  [cyan]fix:[/] {escape(hit.signature.hint)}")
