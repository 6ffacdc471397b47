"""Planning a deploy: everything that can go wrong before any host is touched, and the --dry-run view.

Config, secrets, the build and its patches are resolved here, locally. An error at this stage (a bad
patch, a missing secret, a broken profile rule) stops the deploy with nothing changed anywhere.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from specops.build.stage import StagedBuild, stage_build
from specops.commands.systemd import render_env_file, render_unit
from specops.commands.units import sha256_text
from specops.config.loader import Config, Target
from specops.config.secrets import resolve_secrets


@dataclass(frozen=True)
class HostPlan:
    """One host's part of a deploy: its target (host + profile) and the files it will get."""

    target: Target
    unit_text: str
    env_text: str  # secrets revealed: written to the host, never printed

    @property
    def name(self) -> str:
        return self.target.host.name

    @property
    def unit_sha256(self) -> str:
        return sha256_text(self.unit_text)


@dataclass(frozen=True)
class DeployPlan:
    staged: StagedBuild
    hosts: list[HostPlan]


def plan_host(config: Config, name: str, profile: str | None) -> HostPlan:
    """Resolve the host/profile pair and render its unit and env file (secrets read now, not printed)."""
    target = config.resolve(name, profile)
    where = f"{config.display}: hosts.{name}.secrets"
    secrets = resolve_secrets(target.host.secrets, os.environ, config.secrets_path, where)
    revealed = {key: value.reveal() for key, value in secrets.items()}
    return HostPlan(target=target, unit_text=render_unit(target), env_text=render_env_file(target, revealed))


def make_plan(
    config: Config, names: list[str], profile: str | None, build: Path, patches: list[Path], workdir: Path
) -> DeployPlan:
    """Every host resolved and the build staged once (patches applied) before the first connection."""
    hosts = [plan_host(config, spec.name, profile) for spec in config.inventory.select(names)]
    staged = stage_build(build, patches, workdir)
    return DeployPlan(staged=staged, hosts=hosts)


def unit_diff(old: str | None, new: str, unit_name: str) -> list[str]:
    """A unified diff of the installed unit against the new one (empty when identical)."""
    before = (old or "").splitlines(keepends=True)
    return list(
        difflib.unified_diff(
            before, new.splitlines(keepends=True), fromfile=f"installed {unit_name}", tofile=f"new {unit_name}"
        )
    )
