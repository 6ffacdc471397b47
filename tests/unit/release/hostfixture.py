"""A service folder laid out as the host-side release script keeps it, written by hand (no push needed), and
a systemctl that only records: for running the rollback, the guard and the watch in-process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from specops.remote.release.catalog import write_summary


def add_release(service_dir: Path, release_id: str, verified: bool = True) -> None:
    folder = service_dir / "releases" / release_id
    folder.mkdir(parents=True)
    manifest = {"schema": 2, "id": release_id, "files": {}, "verified": verified, "profile": "ddtree"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    write_summary(str(folder), manifest)


def point_current(service_dir: Path, release_id: str) -> None:
    link = service_dir / "current"
    if link.is_symlink():
        link.unlink()
    os.symlink(service_dir / "releases" / release_id, link)


def current(service_dir: Path) -> str:
    return os.path.basename(os.readlink(service_dir / "current"))


def record_systemctl(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """subprocess.run answers 0 and keeps the argv (the rollback's daemon-reload, reset-failed, restart)."""
    calls: list[list[str]] = []

    def fake_run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[bytes]:
        calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    return calls


def audit_lines(service_dir: Path) -> list[dict[str, Any]]:
    path = service_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
