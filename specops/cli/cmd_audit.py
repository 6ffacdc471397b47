"""`specops audit HOST [-n N] [--json]`: the host's audit log (who deployed or rolled back what, and when)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.fleet_view import ask_fleet, engine_ranks, finish, one_host, selected
from specops.cli.options import AllOpt, JsonOpt, TargetsArg
from specops.cli.output import print_json, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.commands.audit_line import AuditLine
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

    A group, several hosts, an engine (a row per rank) or --all: a row per host with its latest entry (--json: the
    last N per host)."""
    from specops.ops import audit as audit_log

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    config = app_state.load_config()
    names = engine_ranks(config, names or [])  # an engine: a row per rank
    single = one_host(config, names, all_hosts)
    if single is None:

        def ask(host: Host, spec: HostSpec) -> tuple[HostLog, ExitCode]:
            return HostLog(audit_log.host_audit_path(spec), audit_log.read(host, spec, lines)), ExitCode.OK

        readings = ask_fleet(app_state, selected(config, names, all_hosts), ask)
        finish(readings, as_json, HostLog.to_json, ("WHEN", "WHO", "ACTION", "FROM → TO", "OUTCOME"), _latest_row)
    spec = config.host(single)
    with app_state.connect(spec) as connected:
        entries = audit_log.read(connected, spec, lines)
    if as_json:
        print_json({"host": spec.name, "path": audit_log.host_audit_path(spec),
                    "entries": [entry.to_json() for entry in entries]})  # fmt: skip
        return
    if not entries:
        typer.echo(f"{spec.name}: no audit entries in {audit_log.host_audit_path(spec)}")
        return
    _print_table(entries)


@dataclass(frozen=True)
class HostLog:
    """One host's audit log as a fleet reading: where it is, its last entries."""

    path: str
    entries: list[AuditLine]

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "entries": [entry.to_json() for entry in self.entries]}


def _latest_row(found: HostLog) -> list[str]:
    if not found.entries:
        return ["-", "-", "(no entries)", "", ""]
    return _cells(found.entries[-1])[:5]


def _cells(entry: AuditLine) -> list[str]:
    if entry.unreadable is not None:
        return ["?", "?", "?", "", "unreadable", entry.unreadable]
    forced = " (forced)" if entry.forced else ""
    return [
        entry.when or "?",
        entry.who or "?",
        (entry.action or "?") + forced,
        f"{entry.from_release or '-'} → {entry.to_release or '-'}",
        entry.outcome or "?",
        entry.message,
    ]


def _print_table(entries: list[AuditLine]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("WHEN", "WHO", "ACTION", "FROM → TO", "OUTCOME", "MESSAGE"):
        table.add_column(column)
    for entry in entries:
        table.add_row(*_cells(entry))
    stdout_console().print(table, markup=False)
