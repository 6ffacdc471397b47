"""Load the built-in profiles and the operator's own (`profiles/` next to specops.toml).

A profile file's name is the profile's name. The operator's folder wins over a built-in of the same name,
so a site can tune `ddtree` without forking specops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from specops.config.errorfmt import display_path, read_toml_file, validation_lines
from specops.config.profile import Profile
from specops.config.shipped import data_dir
from specops.errors import ConfigError


@dataclass(frozen=True)
class LoadedProfile:
    """A validated profile, where it came from, and its raw table (to merge host overrides into)."""

    profile: Profile
    source: str
    raw: dict[str, Any]


def load_profiles(user_dir: Path, cwd: Path) -> tuple[dict[str, LoadedProfile], set[str], list[str]]:
    """Built-in profiles, then the user's; returns the profiles, the names that failed, the error lines."""
    profiles: dict[str, LoadedProfile] = {}
    failed: set[str] = set()
    lines: list[str] = []
    folders = [(data_dir("profiles"), True)]
    if user_dir.is_dir():
        folders.append((user_dir, False))
    for folder, builtin in folders:
        for file in sorted(folder.glob("*.toml")):
            source = f"(built-in) profiles/{file.name}" if builtin else display_path(file, cwd)
            loaded = _load_one(file, source, lines)
            if loaded is None:
                failed.add(file.stem)
            else:
                profiles[loaded.profile.name] = loaded
    return profiles, failed, lines


def _load_one(file: Path, source: str, lines: list[str]) -> LoadedProfile | None:
    try:
        raw = read_toml_file(file, source)
    except ConfigError as error:
        lines += error.lines
        return None
    if "name" in raw:
        lines.append(f"{source}: name: a profile is named by its file name; remove this key")
        return None
    try:
        profile = Profile.model_validate({**raw, "name": file.stem})
    except ValidationError as exc:
        lines += validation_lines(source, [], exc, Profile)
        return None
    return LoadedProfile(profile=profile, source=source, raw=raw)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; any other value in `override` replaces the base value."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def apply_overrides(loaded: LoadedProfile, override: Mapping[str, Any], display: str, prefix: list[str]) -> Profile:
    """The profile with a host's overrides merged in; errors point at the override table in `display`."""
    if not override:
        return loaded.profile
    if "name" in override:
        raise ConfigError([f"{display}: {'.'.join(prefix)}.name: a profile's name cannot be overridden"])
    try:
        return Profile.model_validate({**deep_merge(loaded.raw, override), "name": loaded.profile.name})
    except ValidationError as exc:
        raise ConfigError(validation_lines(display, prefix, exc, Profile)) from None
