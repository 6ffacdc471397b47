"""`specops status`, `specops releases`, `specops logs`: what runs, what is kept, what the engine said."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.output import print_json, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode, UsageError
from specops.host import ssh_opener

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.host.base import Host


def status(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(help="Host name.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Current release, profile, unit state, PID, restarts, whether the process runs `current`, health."""
    from specops.ops.status import host_status

    app_state = state(ctx)
    spec = app_state.load_config().host(host)
    with ssh_opener(spec)() as connection:
        found = host_status(connection, spec)
    if app_state.json or json_output:
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
    host: Annotated[str, typer.Argument(help="Host name.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Releases kept on the host: id, age, profile, verified, current (rollback targets are the verified ones)."""
    from rich.table import Table

    from specops.ops.status import host_status

    app_state = state(ctx)
    spec = app_state.load_config().host(host)
    with ssh_opener(spec)() as connection:
        found = host_status(connection, spec, check_health=False)
    if app_state.json or json_output:
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
    host: Annotated[str, typer.Argument(help="Host name.")],
    lines: Annotated[int, typer.Option("-n", "--lines", help="How many lines.")] = 100,
    since: Annotated[str | None, typer.Option("--since", help="'deploy' (the last start) or a journal time.")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C to stop).")] = False,
    grep: Annotated[str | None, typer.Option("--grep", help="Only lines matching this regular expression.")] = None,
) -> None:
    """The engine's journal, with known failure signatures explained underneath."""
    from specops.commands import journal

    pattern = _compile(grep)
    spec = state(ctx).load_config().host(host)
    with ssh_opener(spec)() as connection:
        position = _since(connection, spec, since)
        argv = journal.journal_argv(spec.unit_name, position, None if since else lines)
        text, cursor = _read(connection, argv)
        _print_lines(text, pattern)
        while follow:
            time.sleep(1.0)
            text, cursor = _read(connection, journal.journal_argv(spec.unit_name, cursor or position))
            _print_lines(text, pattern, explain=False)


def _compile(grep: str | None) -> re.Pattern[str] | None:
    try:
        return re.compile(grep) if grep else None
    except re.error as error:
        raise UsageError(f"--grep {grep!r}: {error}") from None


def _since(host: Host, spec: HostSpec, since: str | None) -> str | None:
    if since != "deploy":
        return since
    from specops.commands.units import parse_show, show_argv

    shown = parse_show(host.run(show_argv(spec.unit_name, ["ExecMainStartTimestamp"]), timeout=30).text)
    started = shown.get("ExecMainStartTimestamp", "").strip()
    return started or None


def _read(host: Host, argv: list[str]) -> tuple[list[str], str | None]:
    from specops.commands.journal import split_journal

    return split_journal(host.run(argv, timeout=60).text)


def _print_lines(lines: list[str], pattern: re.Pattern[str] | None, explain: bool = True) -> None:
    from rich.markup import escape

    from specops.engine.signatures import match

    console = stdout_console()
    shown = [line for line in lines if pattern is None or pattern.search(line)]
    found = {m.line_no: m for m in match(shown)}
    for number, line in enumerate(shown):
        hit = found.get(number)
        style = "red" if hit and hit.fatal else ("yellow" if hit else "")
        console.print(f"[{style}]{escape(line)}[/]" if style else escape(line), soft_wrap=True)
    if explain:
        for hit in found.values():
            if hit.signature.kind in ("fatal", "error", "warning"):
                console.print(f"[bold]explained:[/] {escape(hit.summary)}")
                if hit.signature.hint:
                    console.print(f"  [cyan]fix:[/] {escape(hit.signature.hint)}")
