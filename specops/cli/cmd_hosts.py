"""`specops hosts`: the inventory, with each ssh target resolved through ~/.ssh/config."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from specops.cli.options import JsonOpt
from specops.cli.output import print_json, stdout_console
from specops.cli.state import state

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config


def hosts(
    ctx: typer.Context,
    names: Annotated[
        list[str] | None, typer.Argument(metavar="HOST|GROUP", help="Hosts or groups (default: all).")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """List hosts: where specops will connect (host, user, port, key), how it acts as root, profile, groups."""
    app_state = state(ctx)
    config = app_state.load_config()
    selected = config.inventory.select(names) if names else list(config.inventory.hosts.values())
    rows = [_row(config, spec) for spec in selected]
    if app_state.wants_json(json_output):
        print_json({"hosts": rows})
        return
    _print_table(rows)


def _row(config: Config, spec: HostSpec) -> dict[str, Any]:
    from specops.host.ssh.resolve import resolve_ssh_target

    target = resolve_ssh_target(spec.ssh, jump=spec.jump)
    groups = [group for group in config.inventory.groups if spec.name in config.inventory.members(group)]
    return {
        "name": spec.name,
        "ssh": spec.ssh,
        "hostname": target.hostname,
        "user": target.user,
        "port": target.port,
        "keys": list(target.identity_files),
        "become": spec.become if spec.uses_sudo else None,
        "become_user": spec.become_user if spec.uses_sudo else None,
        "hops": [hop.alias for hop in target.jumps],
        "proxy_command": target.proxy_command,
        "profile": spec.profile,
        "service": spec.service,
        "groups": groups,
    }


def _print_table(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("HOST", "SSH", "HOSTNAME", "USER", "PORT", "KEY", "BECOME", "VIA", "PROFILE", "SERVICE", "GROUPS"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["name"],
            row["ssh"],
            row["hostname"],
            row["user"],
            str(row["port"]),
            ", ".join(row["keys"]) or "(ssh defaults)",
            _become_text(row),
            _via(row),
            row["profile"] or "-",
            row["service"],
            ", ".join(row["groups"]) or "-",
        )
    stdout_console().print(table)


def _become_text(row: dict[str, Any]) -> str:
    """`sudo -> root` when commands go through sudo; `-` when the login user acts itself."""
    return f"sudo -> {row['become_user']}" if row["become"] else "-"


def _via(row: dict[str, Any]) -> str:
    """The jump hosts in order (`bastion -> inner`), `ProxyCommand`, or `-` for a direct connection."""
    if row["hops"]:
        return " -> ".join(row["hops"])
    return "ProxyCommand" if row["proxy_command"] else "-"
