"""Option and argument aliases shared by the commands, declared once so `--json` means the same everywhere.

Each command takes the same words for the same things (`--json`, `--profile/-p`, `--all`, a host name),
with one help text. A command adds its own options beside these; it never re-declares one of them.
"""

from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
HostArg = Annotated[str, typer.Argument(metavar="HOST", help="The host (as named in specops.toml).")]
OptionalHostArg = Annotated[
    str | None,
    typer.Argument(
        metavar="HOST", help="The host (as named in specops.toml; default: its only host).", show_default=False
    ),
]
TargetsArg = Annotated[
    list[str] | None,
    typer.Argument(metavar="HOST|GROUP", help="Hosts or groups (as named in specops.toml).", show_default=False),
]
AllOpt = Annotated[bool, typer.Option("--all", help="Every host in the inventory.")]
ProfileOpt = Annotated[
    str | None, typer.Option("--profile", "-p", metavar="NAME", help="Profile (default: the host's).")
]
LockWaitOpt = Annotated[
    float, typer.Option("--lock-wait", metavar="SECONDS", min=0, max=86400, help="Seconds to wait for a held lock.")
]
LinesOpt = Annotated[
    int, typer.Option("-n", "--lines", metavar="N", min=1, help="How many of the latest lines or entries.")
]


def check_release_option(flag: str, release_id: str | None, *aliases: str) -> None:
    """Refuse a malformed release id before connecting: it becomes a path on the host (`../../etc` must never
    reach the host side, and a usage error is exit 2, not a host's refusal)."""
    if release_id is None or release_id in aliases:
        return
    from specops.commands.release import check_release_id
    from specops.errors import UsageError

    try:
        check_release_id(release_id)
    except ValueError:
        raise UsageError(
            f"{flag} {release_id!r} is not a release id",
            hint="release ids look like 3f9c2a1b7d4e-a1b2c3 (a build id: its first 12 hex digits) or, from older "
            "deploys, 20261130T021407Z-3f9c2a1b7d4e; `specops releases HOST` lists them",
        ) from None


ReapOpt = Annotated[
    bool,
    typer.Option(
        "--reap", help="Stop orphans of the old engine still holding the unit's GPUs (never other processes)."
    ),
]
