"""Running a planned HostCommand (specops/commands/planned.py) on a host: the one place a deploy step's
command object becomes a `run` or a `put`, so that what `--dry-run` printed is what the host receives."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.host.base import DEFAULT_TIMEOUT_S, Host, Result
from specops.ops.release import run_script


def execute(host: Host, command: HostCommand, *, data: bytes | None = None, check: bool = True,
            timeout: float = DEFAULT_TIMEOUT_S) -> Result | None:  # fmt: skip
    """Run `command` as planned; `data`: its stdin, or a put's content (the plan only says what it is: a file
    may hold secrets). A put returns None (the Host writes it atomically, with the planned path and mode)."""
    if command.kind == "put":
        assert command.mode is not None and data is not None, f"a put of {command.path} needs its mode and content"
        host.put(data, command.path, mode=command.mode)
        return None
    return host.run(command.argv, input=data, timeout=timeout, check=check)


def run_all(host: Host, commands: Sequence[HostCommand], *, check: bool = True,
            timeout: float = DEFAULT_TIMEOUT_S) -> None:  # fmt: skip
    """Every command in order (commands that read nothing and write no file)."""
    for command in commands:
        execute(host, command, check=check, timeout=timeout)


def script_reply(host: Host, spec: HostSpec, command: HostCommand,
                 changes: Mapping[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """A planned op of the host-side release script (switch, update-manifest, prune): its JSON reply, a refusal
    raised as ReleaseError; `changes`: an update-manifest's stdin, known only while the deploy runs."""
    data = json.dumps(dict(changes)).encode() if changes is not None else None
    return run_script(host, spec, list(command.argv), data)
