"""Global options, carried from the typer callback to each command as ctx.obj (no global state)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from specops.config.loader import Config


@dataclass
class AppState:
    """What every command may need: where the config is and how to present results."""

    config_path: Path | None = None
    json: bool = False
    debug: bool = False
    verbose: int = 0

    def load_config(self) -> Config:
        from specops.config.loader import load

        return load(self.config_path)


def state(ctx: typer.Context) -> AppState:
    """The AppState stored by the root callback (a fresh default when a command runs standalone)."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, AppState) else AppState()
