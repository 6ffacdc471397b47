"""`specops status`, `specops releases`, `specops logs`: what runs, what is kept, what the engine said."""

from __future__ import annotations

from typing import Annotated

import typer

from specops.cli.options import HostArg, JsonOpt
from specops.cli.output import print_json, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode


def status(
    ctx: typer.Context,
    host: HostArg,
    json_output: JsonOpt = False,
) -> None:
    """Current release, profile, unit state, PID, restarts, whether the process runs `current`, health."""
    from specops.ops.status import host_status

    app_state = state(ctx)
    spec = app_state.load_config().host(host)
    with app_state.connect(spec) as connection:
        found = host_status(connection, spec)
    if app_state.wants_json(json_output):
        print_json(found.to_json())
    else:
        unit = found.unit
        mismatch = "" if found.uses_current is not False else f"  [red]runs {found.running_release}, NOT current[/]"
        lines = [
            f"[bold]{host}[/]  {spec.unit_name}: {unit.get('ActiveState', '?')}/{unit.get('SubState', '?')}"
            f"  pid {unit.get('MainPID', '-')}  restarts {unit.get('NRestarts', '-')}",
            f"current: {found.current or '-'} ({'verified' if found.verified else 'NOT verified'}, profile "
            f"{found.profile or '-'}){mismatch}",
            f"health: {found.health if found.health is not None else 'not checked (unit not active)'}",
        ]
        if found.figures:
            lines.append(
                f"last smoke: {found.figures.get('tokens_per_s', '-')} tok/s, accept length "
                f"{found.figures.get('accept_length', '-')}"
            )
        for line in lines:
            stdout_console().print(line)
    healthy = found.verified and found.uses_current is not False and found.health == 200
    raise typer.Exit(int(ExitCode.OK if healthy else ExitCode.CHECKS_FAILED))


def releases(
    ctx: typer.Context,
    host: HostArg,
    json_output: JsonOpt = False,
) -> None:
    """Releases kept on the host: id, age, profile, verified, current (rollback targets are the verified ones)."""
    from rich.table import Table

    from specops.ops.status import host_status

    app_state = state(ctx)
    spec = app_state.load_config().host(host)
    with app_state.connect(spec) as connection:
        found = host_status(connection, spec, check_health=False)
    if app_state.wants_json(json_output):
        print_json({"host": host, "current": found.current, "releases": found.releases})
        return
    table = Table(box=None, pad_edge=False)
    for column in ("", "RELEASE", "CREATED", "PROFILE", "VERIFIED"):
        table.add_column(column)
    for release in found.releases:
        verified = "yes" if release["verified"] else ("unfinished" if not release["complete"] else "no")
        table.add_row("*" if release["current"] else "", release["id"], str(release["created_at"] or "-"),
                      str(release["profile"] or "-"), verified)  # fmt: skip
    stdout_console().print(table)


def logs(
    ctx: typer.Context,
    host: HostArg,
    lines: Annotated[int, typer.Option("-n", "--lines", min=1, help="How many lines.")] = 100,
    since: Annotated[str | None, typer.Option("--since", help="'deploy' (the last start) or a journal time.")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C to stop).")] = False,
    grep: Annotated[str | None, typer.Option("--grep", help="Only lines matching this regular expression.")] = None,
) -> None:
    """The engine's journal, with known failure signatures explained underneath."""
    from specops.ops import logs as journal

    query = journal.JournalQuery(lines=lines, since=since, grep=grep)
    query.pattern()  # a bad --grep is a usage error before anything connects
    app_state = state(ctx)
    spec = app_state.load_config().host(host)
    with app_state.connect(spec) as connection:
        shown, position = journal.first_read(connection, spec, query)
        _print_lines(shown)
        if follow:
            for batch in journal.follow(connection, spec, query, position):
                _print_lines(batch, explain=False)


def _print_lines(lines: list[str], explain: bool = True) -> None:
    from rich.markup import escape

    from specops.engine.signatures import match

    console = stdout_console()
    found = {m.line_no: m for m in match(lines)}
    for number, line in enumerate(lines):
        hit = found.get(number)
        style = "red" if hit and hit.fatal else ("yellow" if hit else "")
        console.print(f"[{style}]{escape(line)}[/]" if style else escape(line), soft_wrap=True)
    if explain:
        for hit in found.values():
            if hit.signature.kind in ("fatal", "error", "warning"):
                console.print(f"[bold]explained:[/] {escape(hit.summary)}")
                if hit.signature.hint:
                    console.print(f"  [cyan]fix:[/] {escape(hit.signature.hint)}")
