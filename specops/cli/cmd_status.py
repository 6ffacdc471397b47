"""`specops status`, `specops releases`, `specops logs`: what runs, what is kept, what the engine said."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from specops.cli.engine_rows import engine_selection
from specops.cli.fleet_view import ask_fleet, finish, one_host, selected
from specops.cli.options import AllOpt, JsonOpt, TargetsArg
from specops.cli.output import escape, print_json, stderr_console, stdout_console
from specops.cli.state import AppState, state
from specops.cli.status_view import (
    STATUS_COLUMNS,
    print_releases,
    print_status,
    releases_json,
    releases_row,
    status_notes,
    status_row,
)
from specops.errors import ExitCode, SpecopsError, UsageError

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.host.base import Host
    from specops.ops.journal import JournalQuery
    from specops.ops.status import HostStatus


def status(
    ctx: typer.Context,
    names: TargetsArg = None,
    all_hosts: AllOpt = False,
    json_output: JsonOpt = False,
) -> None:
    """What each host serves: release, profile, verified, unit state and restarts, health, last smoke figures.

    One host: the detailed view. A group, several hosts or --all: one row per host, asked in parallel.
    Exit 0 when every host is healthy, 1 when one is not, 4 when one is unreachable (the most severe wins)."""
    from specops.ops.status import HostStatus, host_status

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    config = app_state.load_config()
    single = one_host(config, names or [], all_hosts)
    engines = engine_selection(config, names or [], all_hosts)
    if engines is not None:
        from specops.cli.engine_status import status_of_engines

        status_of_engines(app_state, engines, as_json)
    if single is not None:
        spec = config.host(single)
        with app_state.connect(spec) as connection:
            found = host_status(connection, spec, check_drift=True)
        print_status(found, spec.unit_name, as_json)
        raise typer.Exit(int(found.exit_code))

    def ask(host: Host, spec: HostSpec) -> tuple[HostStatus, ExitCode]:
        found = host_status(host, spec, check_drift=True)
        return found, found.exit_code

    readings = ask_fleet(app_state, selected(config, names or [], all_hosts), ask)
    finish(readings, as_json, HostStatus.to_json, STATUS_COLUMNS, status_row, status_notes)


def releases(
    ctx: typer.Context,
    names: TargetsArg = None,
    all_hosts: AllOpt = False,
    mark_bad: Annotated[
        str | None,
        typer.Option("--mark-bad", metavar="ID", help="Mark this release (or build) bad: never a rollback target."),
    ] = None,
    unmark_bad: Annotated[
        str | None, typer.Option("--unmark-bad", metavar="ID", help="Remove a release's bad mark.")
    ] = None,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why --mark-bad (kept with the mark and audited).")
    ] = "",
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove dead pushes' unfinished leftovers and releases beyond keep.")
    ] = False,
    json_output: JsonOpt = False,
) -> None:
    """Releases kept on each host: id, age, profile, verified, current, bad (rollback targets: verified, not bad).

    One host: every release. A group, several hosts or --all: a row per host (current, kept, verified, bad).
    --mark-bad ID / --unmark-bad ID: set or remove the mark that keeps a release from ever being rolled back
    to, on one host or on each host named (ID: a release id, or a build id that each host resolves to its own
    release of that build); a rollback marks the release it leaves by itself. --prune (one host, under its lock):
    remove the `unfinished` leftovers of dead pushes and complete releases beyond keep_releases; current and
    the rollback target always stay."""
    from specops.ops.status import host_status

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    config = app_state.load_config()
    single = one_host(config, names or [], all_hosts)
    if prune:
        _prune(app_state, single, as_json)
        return
    if mark_bad is not None or unmark_bad is not None:
        from specops.cli.release_marks import change_mark

        change_mark(app_state, (names or [], all_hosts), mark_bad, unmark_bad, reason, as_json)
        return
    engines = engine_selection(config, names or [], all_hosts)
    if engines is not None:
        from specops.cli.engine_status import releases_of_engines

        releases_of_engines(app_state, engines, as_json)
    if single is not None:
        spec = config.host(single)
        with app_state.connect(spec) as connection:
            found = host_status(connection, spec, check_health=False)
        print_releases(found, as_json)
        return

    def ask(host: Host, spec: HostSpec) -> tuple[HostStatus, ExitCode]:
        return host_status(host, spec, check_health=False), ExitCode.OK

    readings = ask_fleet(app_state, selected(config, names or [], all_hosts), ask)
    finish(readings, as_json, releases_json, ("CURRENT", "KEPT", "VERIFIED", "BAD", "NEWEST"), releases_row)


def _prune(app_state: AppState, single: str | None, as_json: bool) -> None:
    """`releases HOST --prune`: one host, under its lock; says what went."""
    from specops.ops.release_prune import prune_by_hand

    if single is None:
        raise UsageError("--prune takes one host", hint="specops releases HOST --prune")
    spec = app_state.load_config().host(single)
    with app_state.connect(spec) as connection:
        removed = prune_by_hand(connection, spec, on_event=lambda text: stderr_console().print(escape(text)))
    if as_json:
        print_json({"host": spec.name, "removed": removed})
    elif removed:
        stdout_console().print(f"{spec.name}: removed {len(removed)} release(s): {', '.join(removed)}")
    else:
        stdout_console().print(f"{spec.name}: nothing to prune")


def logs(
    ctx: typer.Context,
    names: TargetsArg = None,
    all_hosts: AllOpt = False,
    lines: Annotated[int, typer.Option("-n", "--lines", metavar="N", min=1, help="How many lines.")] = 100,
    since: Annotated[
        str | None, typer.Option("--since", metavar="WHEN", help="'deploy' (the last start) or a journal time.")
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C to stop).")] = False,
    grep: Annotated[
        str | None, typer.Option("--grep", metavar="REGEX", help="Only lines matching this regular expression.")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """The engine's journal, with known failure signatures explained underneath.

    A group, several hosts or --all: every line prefixed with its host; with -f the journals interleave.
    A multi-node engine: its ranks' journals merged by time, every line tagged with its rank (`r0 HOST | `).
    --grep searches the window (--since, else the engine's current run) and shows the last N matches.
    --json (without -f): the lines and each explained line with its signature id, kind and fatality; for a
    group, one document with an entry per host."""
    from specops.ops import journal

    query = journal.JournalQuery(lines=lines, since=since, grep=grep)
    query.pattern()  # a bad --grep is a usage error before anything connects
    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    if as_json and follow:
        raise UsageError("--json and --follow do not go together", hint="drop one of them")
    config = app_state.load_config()
    engines = engine_selection(config, names or [], all_hosts)
    if engines is not None:
        from specops.cli.engine_logs import logs_of_engines

        logs_of_engines(app_state, engines, query, follow, as_json)
    single = one_host(config, names or [], all_hosts)
    if single is None:
        _fleet_logs(app_state, selected(config, names or [], all_hosts), query, follow, as_json)
    spec = config.host(single)
    with app_state.connect(spec) as connection:
        shown, position = journal.first_read(connection, spec, query)
        if as_json:
            _print_logs_json(spec.name, shown)
            return
        _print_lines(shown)
        if follow:
            for batch in journal.follow(connection, spec, query, position):
                _print_lines(batch, explain=False)


def _fleet_logs(
    app_state: AppState, specs: list[HostSpec], query: JournalQuery, follow: bool, as_json: bool
) -> NoReturn:
    """Print each host's lines prefixed `HOST | ` (or one JSON document); exit with the most severe error."""
    from specops.deploy.survey import most_severe
    from specops.ops.journal import journal_fleet

    width = max(len(spec.name) for spec in specs)
    failed: dict[str, SpecopsError] = {}
    order = {spec.name: index for index, spec in enumerate(specs)}
    batches = journal_fleet(specs, app_state.opener, query, follow)
    if not follow:  # one screen per host, in inventory order
        batches = iter(sorted(batches, key=lambda batch: order[batch.host]))
    entries: list[dict[str, object]] = []
    for batch in batches:
        if batch.error is not None:
            failed[batch.host] = batch.error
            entries.append({"host": batch.host, "error": _error_json(batch.error)})
            if not as_json:
                stderr_console().print(f"[bold red]error:[/] {escape(batch.error.message)}", soft_wrap=True)
        elif as_json:
            entries.append(_logs_json(batch.host, batch.lines))
        else:
            _print_lines(batch.lines, explain=batch.first, prefix=f"{batch.host:<{width}} | ")
    if as_json:
        print_json({"hosts": entries})
    raise typer.Exit(int(most_severe(error.exit_code for error in failed.values())))


def _error_json(error: SpecopsError) -> dict[str, object]:
    """A host's failure inside a fleet document, shaped like the top-level `{"error": ...}` of a failed run."""
    return {"message": error.message, "hint": error.hint, "exit_code": int(error.exit_code)}


def _logs_json(host: str, lines: list[str]) -> dict[str, object]:
    from specops.engine.signatures.explain import explain_lines

    return {"host": host, "lines": lines, "explained": [found.to_json() for found in explain_lines(lines)]}


def _print_logs_json(host: str, lines: list[str]) -> None:
    print_json(_logs_json(host, lines))


def _print_lines(lines: list[str], explain: bool = True, prefix: str = "") -> None:
    from specops.engine.signatures import match

    console = stdout_console()
    found = {m.line_no: m for m in match(lines)}
    lead = escape(prefix)
    for number, line in enumerate(lines):
        hit = found.get(number)
        style = "red" if hit and hit.fatal else ("yellow" if hit else "")
        console.print(lead + (f"[{style}]{escape(line)}[/]" if style else escape(line)), soft_wrap=True)
    if explain:
        for hit in found.values():
            if hit.signature.kind in ("fatal", "error", "warning"):
                console.print(f"{lead}[bold]explained:[/] {escape(hit.summary)}")
                if hit.signature.hint:
                    console.print(f"{lead}  [cyan]fix:[/] {escape(hit.signature.hint)}")
