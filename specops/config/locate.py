"""Which specops.toml a command uses; without pydantic, so that a doctor can look for its cached connection
plan (specops/cli/early/plan.py) before the config's models load."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from specops.errors import ConfigError

CONFIG_NAME = "specops.toml"
__all__ = ["CONFIG_NAME", "find_config"]


def find_config(explicit: Path | None, cwd: Path, environ: Mapping[str, str]) -> Path:
    """--config, else ./specops.toml, else $SPECOPS_CONFIG, else ~/.config/specops/specops.toml."""
    if explicit is not None:
        if explicit.is_dir():
            raise ConfigError(
                [f"{explicit}: is a folder, not a TOML file (given with --config)"],
                hint="give --config the specops.toml file itself",
            )
        if not explicit.is_file():
            raise ConfigError(
                [f"{explicit}: no such file (given with --config)"],
                hint="check the path; `specops init PATH` writes a commented starter file",
            )
        return explicit
    candidates = [cwd / CONFIG_NAME]
    if environ.get("SPECOPS_CONFIG"):
        env_path = Path(environ["SPECOPS_CONFIG"])
        if not env_path.is_file():
            raise ConfigError(
                [f"{env_path}: no such file (named by $SPECOPS_CONFIG)"],
                hint="point $SPECOPS_CONFIG at an existing specops.toml, or unset it",
            )
        candidates.append(env_path)
    candidates.append(Path(environ.get("HOME", "~")).expanduser() / ".config" / "specops" / CONFIG_NAME)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ConfigError(
        [f"no {CONFIG_NAME} found (looked for ./{CONFIG_NAME}, $SPECOPS_CONFIG, ~/.config/specops/{CONFIG_NAME})"],
        hint="run `specops init` to write a commented starter file, or pass --config PATH",
    )
