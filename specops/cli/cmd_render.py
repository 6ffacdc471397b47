"""`specops render HOST`: print exactly the unit file (or env file) a deploy would install."""

from __future__ import annotations

from typing import Annotated

import typer

from specops.cli.options import JsonOpt
from specops.cli.output import print_json, print_raw
from specops.cli.state import state


def render(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(metavar="HOST", help="Host name from specops.toml.")],
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", metavar="NAME", help="Profile (default: the host's).")
    ] = None,
    env: Annotated[bool, typer.Option("--env", help="Print the env file instead (secrets as ***).")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Print the systemd unit a deploy would install, byte for byte (pipe it to a file to inspect)."""
    from specops.commands.systemd import render_env_file, render_unit

    app_state = state(ctx)
    target = app_state.load_config().resolve(host, profile)
    text = render_env_file(target) if env else render_unit(target)
    if app_state.wants_json(json_output):
        kind = "env_file" if env else "unit"
        path = target.host.env_file if env else f"/etc/systemd/system/{target.host.unit_name}"
        print_json({"host": host, "profile": target.profile.name, "kind": kind, "path": path, "content": text})
    else:
        print_raw(text)
