"""`specops audit HOST [-n N] [--json]`: the host's audit log (who deployed or rolled back what, and when)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from specops.cli.options import HostArg, JsonOpt
from specops.cli.output import print_json, stdout_console
from specops.cli.state import state


def audit(
    ctx: typer.Context,
    host: HostArg,
    lines: Annotated[int, typer.Option("-n", "--lines", min=1, help="How many of the latest entries.")] = 20,
    json_output: JsonOpt = False,
) -> None:
    """Show the host's last audit entries, oldest first: when, who, action, from → to, outcome."""
    from specops.ops import audit as audit_log

    app_state = state(ctx)
    spec = app_state.load_config().host(host)
    with app_state.connect(spec) as connected:
        entries = audit_log.read(connected, spec, lines)
    if app_state.wants_json(json_output):
        print_json({"host": spec.name, "path": audit_log.host_audit_path(spec), "entries": entries})
        return
    if not entries:
        typer.echo(f"{spec.name}: no audit entries in {audit_log.host_audit_path(spec)}")
        return
    _print_table(entries)


def _print_table(entries: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("WHEN", "WHO", "ACTION", "FROM → TO", "OUTCOME", "MESSAGE"):
        table.add_column(column)
    for entry in entries:
        if "unreadable" in entry:
            table.add_row("?", "?", "?", "", "unreadable", str(entry["unreadable"]))
            continue
        forced = " (forced)" if entry.get("forced") else ""
        table.add_row(
            str(entry.get("when", "?")),
            str(entry.get("who", "?")),
            str(entry.get("action", "?")) + forced,
            f"{entry.get('from') or '-'} → {entry.get('to') or '-'}",
            str(entry.get("outcome", "?")),
            str(entry.get("message", "")),
        )
    stdout_console().print(table, markup=False)
