"""Lock tests run the real host-side script with LocalHost against a temporary lock root (never /run/specops)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from specops.commands.lock import BEAT_FILE
from specops.host.local import LocalHost


@pytest.fixture
def local() -> LocalHost:
    return LocalHost("llm-two")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A lock root under tmp_path; also made the default, so code that omits `root=` cannot touch /run."""
    path = str(tmp_path / "run" / "specops" / "lock")
    monkeypatch.setattr("specops.ops.lock.DEFAULT_LOCK_ROOT", path)
    return path


def holder_json(root: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(Path(root, "holder.json").read_text())
    return data


def age_lock(root: str, seconds: float) -> None:
    """Pretend the holder's last heartbeat was `seconds` ago (what a kill -9 looks like after that long)."""
    past = time.time() - seconds
    os.utime(Path(root, "holder.json"), (past, past))
    beat = Path(root, BEAT_FILE)  # the boot-clock heartbeat the script prefers: as old
    if beat.exists():
        boot, up = beat.read_text().split()
        beat.write_text(f"{boot} {int(up) - int(seconds)}\n")
