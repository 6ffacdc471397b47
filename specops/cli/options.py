"""Option and argument aliases shared by the commands, declared once so `--json` means the same everywhere.

Each command takes the same words for the same things (`--json`, `--profile/-p`, `--all`, a host name),
with one help text. A command adds its own options beside these; it never re-declares one of them.
"""

from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
HostArg = Annotated[str, typer.Argument(help="The host (as named in specops.toml).")]
TargetsArg = Annotated[
    list[str] | None, typer.Argument(help="Hosts or groups (as named in specops.toml).", show_default=False)
]
AllOpt = Annotated[bool, typer.Option("--all", help="Every host in the inventory.")]
ProfileOpt = Annotated[str | None, typer.Option("--profile", "-p", help="Profile (default: the host's).")]
LockWaitOpt = Annotated[float, typer.Option("--lock-wait", min=0, max=86400, help="Seconds to wait for a held lock.")]
LinesOpt = Annotated[int, typer.Option("-n", "--lines", min=1, help="How many of the latest lines or entries.")]
