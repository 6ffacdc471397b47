"""`specops init`: write a commented starter specops.toml."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specops.cli.options import JsonOpt
from specops.cli.output import print_json
from specops.cli.state import state
from specops.errors import UsageError


def init(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(metavar="PATH", help="Where to write the file.")] = Path("specops.toml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Write a commented starter specops.toml (two example hosts, a group, every common key)."""
    from specops.config.shipped import starter_config

    if path.exists() and not force:
        raise UsageError(f"{path} already exists", hint="pass --force to overwrite it")
    if not path.parent.is_dir():
        raise UsageError(f"{path.parent} is not a directory", hint="create the folder first, or give another PATH")
    path.write_text(starter_config(), encoding="utf-8")
    if state(ctx).wants_json(json_output):
        print_json({"written": str(path)})
    else:
        typer.echo(f"wrote {path}: edit the hosts, then run `specops config check`")
