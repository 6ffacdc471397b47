"""Secrets: values for the names in hosts.*.secrets, read from the environment or a secrets file.

Values never travel through models, logs, or output: they are read only when an env file is written, and
`Secret` prints as *** if anything tries.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from specops.errors import ConfigError

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec

MASK = "***"
_secrets_file: list[Path | None] = [None]  # the loaded config's secrets_file (one config per process)


class Secret(str):
    """A string whose repr/str in f-strings and logs is masked; use .reveal() to write it."""

    def __repr__(self) -> str:
        return MASK

    def __str__(self) -> str:
        return MASK

    def __format__(self, format_spec: str) -> str:
        return MASK

    def reveal(self) -> str:
        return str.__str__(self)


def read_secrets_file(path: Path) -> dict[str, str]:
    """`NAME=value` lines; blank lines and # comments ignored; optional quotes around the value."""
    values = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text (byte {exc.start}): is this the secrets file?"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read the secrets file: {exc.strerror}"]) from None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.removeprefix("export ").partition("=")
        if not sep:
            raise ConfigError([f"{path}: line {number}: expected NAME=value"])
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def resolve_secrets(
    names: list[str], environ: Mapping[str, str], secrets_file: Path | None, where: str
) -> dict[str, Secret]:
    """Each name from the environment first, then the secrets file; all missing names in one error."""
    from_file = read_secrets_file(secrets_file) if secrets_file and secrets_file.is_file() else {}
    found: dict[str, Secret] = {}
    missing = []
    for name in names:
        value = environ.get(name, from_file.get(name))
        if value is None:
            missing.append(name)
        elif any(ord(ch) < 32 and ch != "\t" for ch in value):
            raise ConfigError([f"{where}: {name}: the value contains a newline or control character"])
        else:
            found[name] = Secret(value)
    if missing:
        source = f" or {secrets_file}" if secrets_file else ""
        raise ConfigError(
            [f"{where}: {name}: not set in the environment{source}" for name in missing],
            hint="export the variable, or add NAME=value to the file named by secrets_file",
        )
    return found


def use_secrets_file(path: Path | None) -> None:
    """Remember the loaded config's secrets file, where `engine_api_key` looks after the environment."""
    _secrets_file[0] = path


def engine_api_key(spec: HostSpec) -> Secret | None:
    """The value of the host's `api_key_secret` (None when it has none), read like every secret: from the
    environment, else the secrets file. Why here and not in the caller: every request specops sends to the
    engine (readiness, smoke, status) must carry it, and it must never travel through models or output."""
    name = spec.api_key_secret
    if name is None:
        return None
    where = f"hosts.{spec.name}.api_key_secret"
    return resolve_secrets([name], os.environ, _secrets_file[0], where)[name]
