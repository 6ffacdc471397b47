"""Global options, carried from the typer callback to each command as ctx.obj (no global state).

Also the one way a command connects to a host: `AppState.connect(spec)` (one host, now) or
`AppState.opener(spec)` (connect later, inside a fleet's worker thread). Both go through `ssh_opener`, so
paramiko loads only when a connection is really made and tests replace the transport in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from specops.cli.early.start import HeadStart
from specops.host import ssh_opener

if TYPE_CHECKING:
    import typer

    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.config.secrets import Secret
    from specops.host.base import Host

Opener = Callable[[], AbstractContextManager["Host"]]


@dataclass
class AppState:
    """What every command may need: where the config is, how to present results, how to reach a host."""

    config_path: Path | None = None
    json: bool = False
    debug: bool = False
    verbose: int = 0
    color: bool = True
    become_password: Secret | None = None  # --ask-become-pass: asked once per run, for every sudo host
    head_start: HeadStart = field(default_factory=HeadStart)  # what the console script started before typer

    def load_config(self) -> Config:
        from specops.config.loader import load

        return load(self.config_path)

    def wants_json(self, json_output: bool) -> bool:
        """`--json` given before the command (global) or after it (the command's own alias)."""
        return self.json or json_output

    def opener(self, spec: HostSpec) -> Opener:
        """Connect-later: a fleet calls it inside each worker, so hosts connect in parallel."""
        return ssh_opener(spec, self.become_password)

    def connect(self, spec: HostSpec) -> AbstractContextManager[Host]:
        """Connect now (use as `with app_state.connect(spec) as host:`)."""
        return self.opener(spec)()


def state(ctx: typer.Context) -> AppState:
    """The AppState stored by the root callback (a fresh default when a command runs standalone)."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, AppState) else AppState()
