"""The guard's arming run by a real `sh` on this machine, as a host runs it: `head`, the disarm's `touch` and
`rm`, the three atomic writes are real; `systemctl` and `systemd-run` are stand-ins on PATH that only log their
words (a unit test starts no timer on the machine running it)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest

from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.host.local import LocalHost
from specops.ops import guard


def fake_systemd(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`systemctl` and `systemd-run` first on PATH, each appending its name and words to the log returned."""
    bin_dir, log = folder / "fake-systemd", folder / "systemd.log"
    bin_dir.mkdir(exist_ok=True)
    for name in ("systemctl", "systemd-run"):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> {shlex.quote(str(log))}\n')
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def logged(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def arm_here(spec: HostSpec, commands: Sequence[HostCommand], folder: Path, monkeypatch: pytest.MonkeyPatch,
             release: str = "R2", rollback_to: str = "R1") -> list[str]:  # fmt: skip
    """Arm the guard of `spec` (its service folder under `folder`) with the plan's `commands`; what systemd was
    asked, in order."""
    log = fake_systemd(folder, monkeypatch)
    Path(spec.service_dir).mkdir(parents=True, exist_ok=True)
    guard.arm(LocalHost(spec.name), commands, release, rollback_to)
    return logged(log)
