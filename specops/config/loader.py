"""Find and load specops.toml and the profiles; every mistake becomes a `file: path: message` line.

Loading is strict (unknown keys are errors) and complete (all mistakes are reported at once, not the first
one), because an operator fixing a config wants the whole list, and a typo must never be silently ignored.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from specops.config.engine_spec import Rank, engine_unsupported
from specops.config.engines import validate_engines
from specops.config.errorfmt import display_path, read_toml_digest, validation_lines
from specops.config.inventory import HostSettings, HostSpec, Inventory
from specops.config.locate import find_config
from specops.config.notify import Notify, use_notify, validate_notify
from specops.config.profile import Profile
from specops.config.profile_store import LoadedProfile, apply_overrides, load_profiles
from specops.config.secrets import use_secrets_file
from specops.errors import ConfigError, UsageError

_TOP_KEYS = {"hosts", "groups", "engines", "defaults", "secrets_file", "notify"}


@dataclass(frozen=True)
class Target:
    """A host together with the profile it would run (overrides applied, rules checked)."""

    host: HostSpec
    profile: Profile
    rank: Rank | None = None  # set for one rank of a multi-node engine (specops/config/engine_targets.py)


@dataclass(frozen=True)
class Config:
    """A loaded, validated specops.toml plus every profile it can use."""

    path: Path
    display: str
    inventory: Inventory
    profiles: dict[str, LoadedProfile]
    own_keys: Mapping[str, frozenset[str]] = field(default_factory=dict)  # keys a host's table sets itself
    digest: bytes = b""  # SHA-256 of the specops.toml bytes validated here (a remembered plan's key)
    notify: Notify | None = None  # [notify]: where events go (specops/ops/notify.py)

    @property
    def secrets_path(self) -> Path | None:
        """The secrets file named in the config, relative to the config's folder."""
        name = self.inventory.secrets_file
        return (self.path.parent / name) if name else None

    def local_path(self, written: str) -> Path:
        """A path on this machine as written in the config (a build, a patch): `~` expanded, then relative to
        the config's folder, like secrets_file."""
        return self.path.parent / Path(written).expanduser()

    def default_host(self, usage: str, groups: bool = False) -> str:
        """The host a command acts on when none is named: the inventory's only one. With several (or none) it
        refuses, the hint showing `usage` and the hosts (and, when the command takes them, the groups)."""
        hosts = list(self.inventory.hosts)
        if len(hosts) == 1:
            return hosts[0]
        if not hosts:
            raise UsageError(f"no hosts in {self.display}", hint="add a [hosts.NAME] table (`specops init` writes one)")
        known = f"hosts: {', '.join(hosts)}"
        if groups and self.inventory.groups:
            known += f"; groups: {', '.join(self.inventory.groups)}"
        raise UsageError(f"no host named, and {self.display} has {len(hosts)} hosts", hint=f"{usage} ({known})")

    def host(self, name: str) -> HostSpec:
        """The host named; a group's name here is explained as a group (this command takes one host)."""
        if name in self.inventory.groups:
            members = ", ".join(spec.name for spec in self.inventory.select([name]))
            raise UsageError(f"{name!r} is a group in {self.display} ({members}); this takes one host",
                             hint=f"name one of its hosts, e.g. {members.split(', ')[0]}")  # fmt: skip
        if name in self.inventory.engines:
            raise UsageError(engine_unsupported(name, self.inventory.engines[name]), hint="see docs/multinode.md")
        if name not in self.inventory.hosts:
            known = ", ".join(self.inventory.hosts) or "none"
            raise UsageError(f"unknown host {name!r} in {self.display}", hint=f"known hosts: {known}")
        return self.inventory.hosts[name]

    def resolve(self, host_name: str, profile_name: str | None = None) -> Target:
        """The host with its profile; raises ConfigError listing every broken rule."""
        from specops.config.rules import check_profile_for_host

        host = self.host(host_name)
        if profile_name == "":
            raise UsageError("--profile is empty", hint=f"known profiles: {', '.join(self.profiles)}")
        name = profile_name or host.profile
        if name is None:
            raise UsageError(
                f"host {host_name!r} has no default profile",
                hint=f"pass --profile ({', '.join(self.profiles)}) or set hosts.{host_name}.profile",
            )
        if name not in self.profiles:
            raise UsageError(f"unknown profile {name!r}", hint=f"known profiles: {', '.join(self.profiles)}")
        override = host.overrides.get(name, {})
        override_path = ["hosts", host_name, "overrides", name]
        profile = apply_overrides(self.profiles[name], override, self.display, override_path)
        override_source = f"{self.display}: {'.'.join(override_path)}"
        lines = []
        for violation in check_profile_for_host(profile, host):
            if violation.scope == "host":
                lines.append(f"{self.display}: hosts.{host_name}.{violation.path}: {violation.message}")
            elif blamed := next((p for p in violation.paths if _overridden(override, p)), None):
                lines.append(f"{override_source}.{blamed}: {violation.message}")
            else:
                lines.append(f"{self.profiles[name].source}: {violation.path}: {violation.message}")
        if lines:
            raise ConfigError(lines, hint=f"these are SGLang's own start-up rules for {profile.algorithm}")
        return Target(host=host, profile=profile)


def _overridden(override: Mapping[str, Any], path: str) -> bool:
    node: Any = override
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def load_config(path: Path, cwd: Path) -> Config:
    """Parse and validate the inventory and the profiles; all errors in one ConfigError."""
    display = display_path(path, cwd)
    raw, digest = read_toml_digest(path, display)
    profiles, failed_profiles, lines = load_profiles(path.parent / "profiles", cwd)
    lines += _unknown_top_keys(raw, display)
    defaults = _validate_defaults(raw.get("defaults", {}), display, lines)
    hosts = _validate_hosts(raw.get("hosts", {}), defaults, display, lines)
    groups = raw.get("groups", {})
    own = _own_keys(raw.get("hosts"))
    engines, engine_lines = validate_engines(raw.get("engines", {}), hosts, groups, own, display)
    lines += engine_lines + _check_groups(groups, {*hosts, *engines}, display)
    lines += _check_profile_names(hosts, {*profiles, *failed_profiles}, profiles, display)
    lines += _check_api_key_secrets(hosts, display)
    lines += _check_become_users(raw, hosts, display)
    lines += _check_run_as(hosts, display)
    notify = validate_notify(raw.get("notify"), display, lines)
    if lines:
        raise ConfigError(lines)
    try:
        inventory = Inventory(hosts=hosts, groups=groups, engines=engines, secrets_file=raw.get("secrets_file"))
    except ValidationError as exc:
        raise ConfigError(validation_lines(display, [], exc, Inventory)) from None
    config = Config(path=path, display=display, inventory=inventory, profiles=profiles, own_keys=own, digest=digest,
                    notify=notify)  # fmt: skip
    use_secrets_file(config.secrets_path)  # where the engine client finds an api_key_secret's value
    use_notify(notify)  # where events go, for code far from the CLI (a stale lock's takeover)
    return config


def _own_keys(tables: Any) -> dict[str, frozenset[str]]:
    """The keys each host's table sets itself (not from [defaults]): errors name the key the operator wrote."""
    if not isinstance(tables, dict):
        return {}
    return {name: frozenset(table) for name, table in tables.items() if isinstance(table, dict)}


def _check_api_key_secrets(hosts: Mapping[str, HostSpec], display: str) -> list[str]:
    """The API key reaches the engine only through the 0600 env file, which holds exactly the host's secrets."""
    return [
        f"{display}: hosts.{name}.api_key_secret: {host.api_key_secret} is not listed in hosts.{name}.secrets "
        "(add it there: its value reaches the engine only through the env file)"
        for name, host in hosts.items()
        if host.api_key_secret is not None and host.api_key_secret not in host.secrets
    ]


def _check_become_users(raw: Mapping[str, Any], hosts: Mapping[str, HostSpec], display: str) -> list[str]:
    """`become_user` without `become = "sudo"` would be silently ignored: an operator who wrote it expects
    specops to switch users, so say it does nothing (a host that opts out of [defaults]' sudo is fine)."""
    hint = 'set become = "sudo" beside it, or remove it'
    lines = []
    defaults = raw.get("defaults")
    if isinstance(defaults, dict) and "become_user" in defaults and defaults.get("become") != "sudo":
        lines.append(f'{display}: defaults.become_user: has no effect without become = "sudo" ({hint})')
    tables = raw.get("hosts")
    for name, host in hosts.items():
        table = tables.get(name) if isinstance(tables, dict) else None
        if isinstance(table, dict) and "become_user" in table and not host.uses_sudo:
            lines.append(f'{display}: hosts.{name}.become_user: has no effect without become = "sudo" ({hint})')
    return lines


def _check_run_as(hosts: Mapping[str, HostSpec], display: str) -> list[str]:
    """Supplementary groups belong to the service user: without run_as the engine runs as root and they mean nothing."""
    return [
        f"{display}: hosts.{name}.run_as_groups: set without run_as (the engine runs as root); set run_as too"
        for name, host in hosts.items()
        if host.run_as_groups and host.run_as is None
    ]


def _unknown_top_keys(raw: Mapping[str, Any], display: str) -> list[str]:
    return [
        f"{display}: {key}: unknown key (expected one of: {', '.join(sorted(_TOP_KEYS))})"
        for key in raw
        if key not in _TOP_KEYS
    ]


def _validate_defaults(raw: Any, display: str, lines: list[str]) -> dict[str, Any]:
    try:
        return HostSettings.model_validate(raw).model_dump(exclude_unset=True)
    except ValidationError as exc:
        lines += validation_lines(display, ["defaults"], exc, HostSettings)
        return {}


def _validate_hosts(raw: Any, defaults: dict[str, Any], display: str, lines: list[str]) -> dict[str, HostSpec]:
    if not isinstance(raw, dict):
        lines.append(f"{display}: hosts: expected a table of hosts like [hosts.llm-two]")
        return {}
    hosts = {}
    for name, settings in raw.items():
        if not isinstance(settings, dict):
            lines.append(f"{display}: hosts.{name}: expected a table with at least ssh, python and model_path")
            continue
        if "name" in settings:  # the table's own name is the host's: a `name` key would be silently replaced
            lines.append(f"{display}: hosts.{name}.name: unknown key (a host's name is its table's: [hosts.{name}])")
        merged = {**defaults, **settings, "name": name}
        for table in ("env", "k8s"):  # merged key by key; a wrong type is left for validation to name
            if isinstance(settings.get(table, {}), dict) and (table in defaults or table in settings):
                merged[table] = {**defaults.get(table, {}), **settings.get(table, {})}
        try:
            hosts[name] = HostSpec.model_validate(merged)
        except ValidationError as exc:
            lines += validation_lines(display, ["hosts", name], exc, HostSpec)
    return hosts


def _check_groups(groups: Any, hosts: Collection[str], display: str) -> list[str]:
    """Groups name hosts, engines and other groups (`hosts` holds the host and engine names)."""
    if not isinstance(groups, dict):
        return [f'{display}: groups: expected a table like gpu = ["llm-one", "llm-two"]']
    lines = []
    for group, members in groups.items():
        if group in hosts:
            lines.append(f"{display}: groups.{group}: a group cannot have the same name as a host or engine")
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            lines.append(f"{display}: groups.{group}: expected a list of host, engine and group names")
            continue
        if not members:
            lines.append(f"{display}: groups.{group}: an empty group; list its hosts or remove it")
        lines += [f"{display}: groups.{group}: unknown host or group {member!r}" for member in members
                  if member not in hosts and member not in groups]  # fmt: skip
    return lines + _group_cycles({group: members for group, members in groups.items() if group not in hosts}, display)


def _group_cycles(groups: dict[str, Any], display: str) -> list[str]:
    """A group that contains itself, directly or through other groups, has no hosts to name: one line per cycle."""
    lines: list[str] = []
    reported: set[str] = set()

    def visit(group: str, path: list[str]) -> None:
        members = groups.get(group)
        for member in members if isinstance(members, list) else []:
            if member in path:
                cycle = [*path[path.index(member) :], member]
                if not reported.intersection(cycle):
                    lines.append(f"{display}: groups.{member}: contains itself: {' -> '.join(cycle)}")
                reported.update(cycle)
            elif isinstance(member, str) and member in groups and member not in reported:
                visit(member, [*path, member])

    for group in groups:
        if group not in reported:
            visit(group, [group])
    return lines


def _check_profile_names(
    hosts: Mapping[str, HostSpec], existing: set[str], profiles: Mapping[str, LoadedProfile], display: str
) -> list[str]:
    """Hosts may only name profiles that exist (a profile that failed to load was already reported)."""
    known = ", ".join(profiles)
    lines = []
    for name, host in hosts.items():
        if host.profile is not None and host.profile not in existing:
            lines.append(f"{display}: hosts.{name}.profile: no profile named {host.profile!r} (known: {known})")
        lines += [
            f"{display}: hosts.{name}.overrides.{key}: no profile named {key!r} (known: {known})"
            for key in host.overrides
            if key not in existing
        ]
    return lines


def load(explicit: Path | None = None) -> Config:
    """The CLI's entry point: find, then load, using the real cwd and environment."""
    cwd = Path.cwd()
    return load_config(find_config(explicit, cwd, os.environ), cwd)
