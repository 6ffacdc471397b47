"""Which build (and patches) a deploy stages: the command line's, else the one specops.toml names for its hosts.

A host (or [defaults]) may name `build` and `patches`, so the first deploy is `specops deploy HOST` as typed in
the README. The rules, in one place because `--dry-run` prints where each part came from:

- `--build PATH` replaces the configured build and its patches: the deploy's patches are then the `--patch`
  options only (the configured patches belong to the configured build and may not fit another tree).
- Without `--build`, the configured build is used; `--patch` replaces the configured patches (never adds).
- One staged tree per deploy: hosts that name different builds (or patches) need a `--build`.
- Paths are relative to specops.toml's folder, `~` expanded; one that is missing is a path-qualified error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from specops.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config


@dataclass(frozen=True)
class BuildChoice:
    """The build and patches a deploy stages, and where each came from (for --dry-run and the output)."""

    build: Path
    patches: tuple[Path, ...]
    build_from: str  # "--build", or "specops.toml: hosts.llm-two.build"
    patches_from: str  # "--patch", "none", or "specops.toml: hosts.llm-two.patches"
    note: str = ""  # what the command line replaced, said once in the output

    def to_json(self) -> dict[str, object]:
        return {"build": str(self.build), "build_from": self.build_from,
                "patches": [str(patch) for patch in self.patches], "patches_from": self.patches_from,
                "note": self.note or None}  # fmt: skip

    def origin(self) -> str:
        """Where the config's part came from, for an error about the build or a patch ('' for the command line's:
        the operator typed those paths)."""
        parts = [f"build from {self.build_from}"] if self.build_from != "--build" else []
        parts += [f"patches from {self.patches_from}"] if self.patches_from not in ("--patch", "none") else []
        return "; ".join(parts)

    def lines(self) -> list[str]:
        """What --dry-run prints before the hosts' plans."""
        patches = ", ".join(str(patch) for patch in self.patches) or "none"
        lines = [f"build: {self.build} (from {self.build_from})", f"patches: {patches} (from {self.patches_from})"]
        return [*lines, f"note: {self.note}"] if self.note else lines


@dataclass(frozen=True)
class _Configured:
    """One host's configured build, its paths resolved, with the config keys they came from."""

    build: Path | None
    build_key: str
    patches: tuple[Path, ...]
    patches_key: str


def choose_build(
    config: Config, specs: Sequence[HostSpec], build: Path | None, patches: Sequence[Path] | None
) -> BuildChoice:
    """The build for a deploy to `specs`; `patches` is None when no --patch was given."""
    given = tuple(patch.expanduser().absolute() for patch in patches or ())
    if build is not None:
        patches_from = "--patch" if patches else "none"
        note = _replaced_note(config, specs, patches)
        return BuildChoice(build.expanduser().absolute(), given, "--build", patches_from, note)
    if not specs:
        raise UsageError("no hosts to deploy", hint="name hosts or groups from " + config.display)
    configured = {spec.name: _configured(config, spec) for spec in specs}
    first = configured[specs[0].name]
    if any((c.build, c.patches) != (first.build, first.patches) for c in configured.values()):
        listed = "; ".join(f"{name}: {_describe(c)}" for name, c in configured.items())
        raise UsageError(
            f"the hosts of this deploy name different builds ({listed}); a deploy stages one build",
            hint="pass --build PATH (and --patch) for all of them, or deploy the hosts one by one",
        )
    if first.build is None:
        name = specs[0].name if len(specs) == 1 else "NAME"
        raise UsageError(f"no build to deploy: no --build, and {config.display} names none for {_names(specs)}",
                         hint=f'pass --build PATH, or set build = "PATH" under [hosts.{name}] (or [defaults]) '
                         f"in {config.display}")  # fmt: skip
    _check_exists(config, first)
    source = f"{config.display}: {first.patches_key}"
    if patches is not None:
        return BuildChoice(first.build, given, f"{config.display}: {first.build_key}", "--patch",
                           _replaced_note(config, specs, patches))  # fmt: skip
    patches_from = source if first.patches else "none"
    return BuildChoice(first.build, first.patches, f"{config.display}: {first.build_key}", patches_from)


def _configured(config: Config, spec: HostSpec) -> _Configured:
    own = config.own_keys.get(spec.name, frozenset())
    build_key = f"hosts.{spec.name}.build" if "build" in own else "defaults.build"
    patches_key = f"hosts.{spec.name}.patches" if "patches" in own else "defaults.patches"
    build = config.local_path(spec.build) if spec.build is not None else None
    return _Configured(build, build_key, tuple(config.local_path(patch) for patch in spec.patches), patches_key)


def _check_exists(config: Config, configured: _Configured) -> None:
    """A configured path that is missing, named by its config key (the host is untouched: nothing is staged)."""
    lines = []
    if configured.build is not None and not configured.build.exists():
        lines.append(f"{config.display}: {configured.build_key}: {configured.build}: no such file or folder")
    lines += [
        f"{config.display}: {configured.patches_key}.{index}: {patch}: no such file"
        for index, patch in enumerate(configured.patches)
        if not patch.is_file()
    ]
    if lines:
        raise ConfigError(lines, hint=f"paths in {config.display} are relative to its folder ({config.path.parent})")


def _replaced_note(config: Config, specs: Sequence[HostSpec], patches: Sequence[Path] | None) -> str:
    """Said when the command line set aside patches the config names for these hosts."""
    configured = sorted({patch for spec in specs for patch in spec.patches})
    if not configured:
        return ""
    what = "--patch replaces" if patches else "--build without --patch leaves out"
    return f"{what} the patches {config.display} names ({', '.join(configured)})"


def _describe(configured: _Configured) -> str:
    if configured.build is None:
        return "no build"
    patches = f" + {len(configured.patches)} patch(es)" if configured.patches else ""
    return f"{configured.build}{patches}"


def _names(specs: Sequence[HostSpec]) -> str:
    return ", ".join(spec.name for spec in specs)
