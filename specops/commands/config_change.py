"""What a deploy changes in a release's configuration: its env file (by key) and its unit.

A release carries its configuration (the unit text in its manifest, its env file as a root-only 0600 file
beside it on the host), so a change of either is a deploy of its own (a new release, gated, rolled back with
the configuration that served before) and, when its gates fail, the likely cause (specops/deploy/blame.py).
The env files are compared here, on this machine, after the current one was read over the deploy's own
conversation as root: no digest of a secret is ever published. Secret values are never shown: a changed
secret reads `NAME: *** -> ***`; other values are shown old -> new.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_ESCAPED = re.compile(r'\\(["\\`$])')
ABSENT = "(unset)"


def env_entries(text: str | None) -> dict[str, str]:
    """NAME -> value of an env file as specops renders it (commands/quoting.py env_file_line), unquoted."""
    entries: dict[str, str] = {}
    for line in (text or "").splitlines():
        name, equals, value = line.partition("=")
        if not equals or line.lstrip().startswith("#"):
            continue
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = _ESCAPED.sub(r"\1", value[1:-1])
        entries[name.strip()] = value
    return entries


def env_differences(old: str | None, new: str, secrets: Collection[str]) -> tuple[str, ...]:
    """One line per key that differs, sorted: `NAME: old -> new`, a secret's values masked, a missing side
    `(unset)`."""
    before, after = env_entries(old), env_entries(new)
    lines = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) == after.get(name):
            continue
        was, now = (_shown(name, side.get(name), secrets) for side in (before, after))
        lines.append(f"{name}: {was} -> {now}")
    return tuple(lines)


def _shown(name: str, value: str | None, secrets: Collection[str]) -> str:
    from specops.commands.systemd import SECRET_MASK  # here: the plan's shape (deploy/steps.py) stays light

    if value is None:
        return ABSENT
    return SECRET_MASK if name in secrets else repr(value)


@dataclass(frozen=True)
class ConfigChange:
    """How the configuration a deploy installs differs from the one the current release runs with."""

    unit: bool = False
    env: tuple[str, ...] = ()  # env_differences' lines

    @property
    def changed(self) -> bool:
        return self.unit or bool(self.env)

    @property
    def env_keys(self) -> tuple[str, ...]:
        return tuple(line.split(":", 1)[0] for line in self.env)

    def summary(self) -> str:
        """`configuration changed: env (A, B), unit`, or "" when nothing changed."""
        parts = ([f"env ({', '.join(self.env_keys)})"] if self.env else []) + (["unit"] if self.unit else [])
        return f"configuration changed: {', '.join(parts)}" if parts else ""


def config_change(unit_before: str | None, unit_after: str, env_before: str | None, env_after: str,
                  secrets: Collection[str]) -> ConfigChange:  # fmt: skip
    """Compare exactly: any difference of the unit's text, and every env key whose value differs."""
    return ConfigChange(unit_before != unit_after, env_differences(env_before, env_after, secrets))
