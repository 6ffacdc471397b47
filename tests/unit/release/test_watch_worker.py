"""A worker rank's watch (`unit:NAME`): it serves no HTTP, so systemd says whether the engine verified still runs.
A worker that died is a failed engine even when systemd has started it again (a new run is not the one verified)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from specops.remote.release import watch


def _systemd(monkeypatch: pytest.MonkeyPatch, answers: list[str]) -> list[list[str]]:
    asked: list[list[str]] = []

    def run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 0, answers.pop(0), "")

    monkeypatch.setattr(subprocess, "run", run)
    return asked


def _watch(tmp_path: Path) -> watch.Watch:
    return watch.Watch(str(tmp_path), "sglang.service", "20260101T000000Z-new", "60", "unit:sglang.service",
                       str(tmp_path / "lock"), "2", "2", "1")  # fmt: skip


def test_a_worker_is_healthy_while_its_verified_run_is_active(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _systemd(monkeypatch, ["ActiveState=active\nInvocationID=aaa\n"] * 2)
    checked = _watch(tmp_path)
    assert checked.check() is None and checked.check() is None
    assert asked[0] == ["systemctl", "show", "-p", "ActiveState", "-p", "InvocationID", "sglang.service"]
    assert checked.what() == "the worker rank's engine"


def test_a_worker_that_died_fails_even_once_systemd_started_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _systemd(monkeypatch, ["ActiveState=active\nInvocationID=aaa\n", "ActiveState=activating\nInvocationID=\n",
                           "ActiveState=active\nInvocationID=bbb\n"])  # fmt: skip
    checked = _watch(tmp_path)
    assert checked.check() is None
    assert checked.check() == "died (the unit was started again since the watch began)"
    assert checked.check() == "died (the unit was started again since the watch began)"
