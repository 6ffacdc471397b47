"""`specops audit HOST [-n N] [--json]`: the host's audit log (who deployed or rolled back what, and when)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from specops.cli.fleet_view import ask_fleet, finish, one_host, selected
from specops.cli.options import AllOpt, JsonOpt, TargetsArg
from specops.cli.output import print_json, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.host.base import Host


def audit(
    ctx: typer.Context,
    names: TargetsArg = None,
    all_hosts: AllOpt = False,
    lines: Annotated[
        int, typer.Option("-n", "--lines", metavar="N", min=1, help="How many of the latest entries.")
    ] = 20,
    json_output: JsonOpt = False,
) -> None:
    """Show the host's last audit entries, oldest first: when, who, action, from → to, outcome.

    A group, several hosts or --all: a row per host with its latest entry (--json: the last N per host)."""
    from specops.ops import audit as audit_log

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    config = app_state.load_config()
    single = one_host(config, names or [], all_hosts)
    if single is None:

        def ask(host: Host, spec: HostSpec) -> tuple[dict[str, Any], ExitCode]:
            return {"path": audit_log.host_audit_path(spec), "entries": audit_log.read(host, spec, lines)}, ExitCode.OK

        readings = ask_fleet(app_state, selected(config, names or [], all_hosts), ask)
        finish(readings, as_json, dict, ("WHEN", "WHO", "ACTION", "FROM → TO", "OUTCOME"), _latest_row)
    spec = config.host(single)
    with app_state.connect(spec) as connected:
        entries = audit_log.read(connected, spec, lines)
    if as_json:
        print_json({"host": spec.name, "path": audit_log.host_audit_path(spec), "entries": entries})
        return
    if not entries:
        typer.echo(f"{spec.name}: no audit entries in {audit_log.host_audit_path(spec)}")
        return
    _print_table(entries)


def _latest_row(found: dict[str, Any]) -> list[str]:
    entries = found["entries"]
    if not entries:
        return ["-", "-", "(no entries)", "", ""]
    return _cells(entries[-1])[:5]


def _cells(entry: dict[str, Any]) -> list[str]:
    if "unreadable" in entry:
        return ["?", "?", "?", "", "unreadable", str(entry["unreadable"])]
    forced = " (forced)" if entry.get("forced") else ""
    return [
        str(entry.get("when", "?")),
        str(entry.get("who", "?")),
        str(entry.get("action", "?")) + forced,
        f"{entry.get('from') or '-'} → {entry.get('to') or '-'}",
        str(entry.get("outcome", "?")),
        str(entry.get("message", "")),
    ]


def _print_table(entries: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("WHEN", "WHO", "ACTION", "FROM → TO", "OUTCOME", "MESSAGE"):
        table.add_column(column)
    for entry in entries:
        table.add_row(*_cells(entry))
    stdout_console().print(table, markup=False)
