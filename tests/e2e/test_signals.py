"""SIGINT, SIGTERM and SIGHUP in every phase of a deploy and of a rollback: every signal is an interruption with a
defined end. The host serves a verified release (the one it had, or the target) within the guard's window, the lock is
free, the last lines name what serves, and the audit log has a line with outcome "interrupted" and the signal.

A streaming request keeps the old engine draining (15 s at 100 tokens/s, a 120 s budget), so the signal lands
while the engine is being stopped. The other phases get one signal each, rotated (the handling is the same for
all three), and share one test host: each ends with a verified release serving and the lock free.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.deployscene import Scene
from tests.e2e.test_deploy_drain import _scene, _stream
from tests.e2e.test_deploy_interrupts import _deploy_process, _kill_at, _wait_for_verified_current
from tests.testbed.engine import RENUMBER_PATCH
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e
AUDIT = "/opt/specops/sglang/audit.jsonl"
SIGNALS = [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)]


@pytest.fixture
def scene(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Scene:  # fmt: skip
    return _scene(testhost, host_venv, tmp_path, capsys, monkeypatch, drain_s=120)


@pytest.fixture
def shared(
    module_testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Scene:  # fmt: skip
    """One test host for the scenarios of one phase each: each ends with a verified release serving, lock free."""
    return _scene(module_testhost, host_venv, tmp_path, capsys, monkeypatch, drain_s=120)


def _interrupted(scene: Scene, process: subprocess.Popen[str], name: str, code: int, phase: str = "drain") -> str:
    """Send `name` once `phase` starts; the CLI's exit code and its stderr, with the lock free afterwards."""
    seen = _kill_at(process, phase, timeout=300, signum=getattr(signal, name))
    assert process.stderr is not None
    said = "\n".join(seen) + "\n" + process.stderr.read()
    assert process.returncode == code, said
    assert f"error: interrupted ({name})" in said
    held = json.loads(scene.cli("lock", "status", scene.host.name, "--json").out)
    assert held.get("holder") is None, held
    return said


def _rollback_process(scene: Scene, *options: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "specops", *options, "rollback", scene.host.name]
    return subprocess.Popen(argv, cwd=scene.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))  # fmt: skip


def _last_audit(scene: Scene, action: str) -> dict[str, Any]:
    entries = [json.loads(line) for line in scene.host.exec(["cat", AUDIT]).stdout.decode().splitlines()]
    last: dict[str, Any] = [entry for entry in entries if entry["action"] == action][-1]
    return last


# The push comes first: on this shared host, a later deploy of the same build has nothing left to send.
@pytest.mark.parametrize(("phase", "name", "switched"), [
    ("push", "SIGHUP", False), ("preflight", "SIGTERM", False), ("unit", "SIGINT", False),
    ("switch", "SIGHUP", True), ("smoke", "SIGTERM", True),
])  # fmt: skip
def test_a_signal_in_a_deploy_phase_leaves_a_verified_release_serving(
    shared: Scene, phase: str, name: str, switched: bool
) -> None:
    first, good = shared.deploy()
    assert first.code == 0, first.out + first.err
    process = _deploy_process(shared, "--patch", str(RENUMBER_PATCH), "--force")
    said = _interrupted(shared, process, name, dict(SIGNALS)[name], phase)
    guard = f"is unverified: the host-side guard rolls back to {good['release']} by "
    before = f"error: {shared.host.name}: {good['release']} serves (verified)"  # started again from the switch on
    if phase == "switch":  # the signal may land before the host switched `current` or after: each is named
        assert guard in said or before in said, said
    else:
        assert (guard if switched else f"{before} as before: its engine was not stopped") in said, said
    assert f"{shared.host.name} done stopped: interrupted ({name})" in said, said
    audit = _last_audit(shared, "deploy")
    assert (audit["outcome"], audit["message"].split(":")[0]) == ("interrupted", f"interrupted ({name})")
    found = _wait_for_verified_current(shared, str(good["release"]), timeout=180)
    assert found["uses_current"] is True


@pytest.mark.parametrize(("phase", "name"), [("readiness", "SIGINT"), ("smoke", "SIGHUP")])
def test_a_signal_after_a_rollbacks_switch_leaves_its_target_serving(shared: Scene, phase: str, name: str) -> None:
    """Its restart (readiness) or its gates (smoke): the target is current and verified, and serves."""
    first, target = shared.deploy()
    assert first.code == 0, first.out + first.err
    second, _ = shared.deploy("--patch", str(RENUMBER_PATCH), "--force")
    assert second.code == 0, second.out + second.err
    process = _rollback_process(shared, "-v")  # -v: the readiness polls show, one line each
    said = _interrupted(shared, process, name, dict(SIGNALS)[name], phase)
    assert "switching current to" in said, said  # the signal came after the rollback's switch
    assert f"error: {shared.host.name}: {target['release']} serves (verified)" in said, said
    audit = _last_audit(shared, "rollback")
    assert (audit["outcome"], audit["message"].split(":")[0]) == ("interrupted", f"interrupted ({name})")
    found = _wait_for_verified_current(shared, str(target["release"]), timeout=30)  # ready before the exit
    assert found["uses_current"] is True


@pytest.mark.parametrize(("name", "code"), SIGNALS[1:])  # Ctrl-C in a deploy: test_deploy_interrupts.py
def test_a_signal_during_a_deploys_drain_leaves_the_guard_to_put_the_verified_release_back(
    scene: Scene, name: str, code: int
) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    seen: dict[str, Any] = {}
    client = _stream(scene, seen)
    process = _deploy_process(scene, "--patch", str(RENUMBER_PATCH), "--force")
    said = _interrupted(scene, process, name, code)
    client.join(timeout=180)
    assert f"is unverified: the host-side guard rolls back to {good['release']} by " in said, said
    audit = _last_audit(scene, "deploy")
    assert (audit["outcome"], audit["message"].split(":")[0]) == ("interrupted", f"interrupted ({name})")
    found = _wait_for_verified_current(scene, str(good["release"]), timeout=180)
    assert found["uses_current"] is True


@pytest.mark.parametrize(("name", "code"), SIGNALS)
def test_a_signal_during_a_rollbacks_drain_starts_what_served_again(scene: Scene, name: str, code: int) -> None:
    first, _ = scene.deploy()
    assert first.code == 0, first.out + first.err
    second, serving = scene.deploy("--patch", str(RENUMBER_PATCH), "--force")
    assert second.code == 0, second.out + second.err
    seen: dict[str, Any] = {}
    client = _stream(scene, seen)
    process = _rollback_process(scene)
    said = _interrupted(scene, process, name, code)
    client.join(timeout=180)
    assert f"error: {scene.host.name}: {serving['release']} serves (verified)" in said
    audit = _last_audit(scene, "rollback")
    assert (audit["outcome"], audit["message"].split(":")[0]) == ("interrupted", f"interrupted ({name})")
    found = _wait_for_verified_current(scene, str(serving["release"]), timeout=30)  # ready before the exit
    assert found["uses_current"] is True


def test_a_deploy_resumed_after_the_guard_rolled_back_changes_nothing_more(scene: Scene) -> None:
    """SIGSTOP at the drain; the lock is removed meanwhile and the guard puts the verified release back and starts
    it; SIGCONT: the deploy finds its lock lost and ends (exit 6) without stopping the engine the guard started."""
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    seen: dict[str, Any] = {}
    client = _stream(scene, seen)
    process = _deploy_process(scene, "--patch", str(RENUMBER_PATCH), "--force")
    lines = _kill_at_without_wait(process, "drain")
    try:
        released = scene.cli("lock", "release", scene.host.name, "--force")
        assert released.code == 0, released.out + released.err
        _wait_for_verified_current(scene, str(good["release"]), timeout=240)  # the guard's rollback, restarted
        engine = _main_pid(scene)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    out, err = process.communicate(timeout=300)
    client.join(timeout=180)
    assert process.returncode == 6, "\n".join(lines) + out + err
    assert "lost the lock (removed or taken over by someone else); stopped before" in out + err
    assert "changing nothing more on the host" in out + err
    assert _main_pid(scene) == engine  # the engine the guard started was neither stopped nor killed
    found = _wait_for_verified_current(scene, str(good["release"]), timeout=30)
    assert found["uses_current"] is True


def _kill_at_without_wait(process: subprocess.Popen[str], phase: str) -> list[str]:
    """SIGSTOP once `phase` starts (the process is suspended, not ended); the lines seen."""
    assert process.stderr is not None
    seen: list[str] = []
    for line in process.stderr:
        seen.append(line.rstrip())
        if f" {phase} " in line:
            os.kill(process.pid, signal.SIGSTOP)
            return seen
    raise AssertionError(f"phase {phase!r} never started; saw: {seen}")


def _main_pid(scene: Scene) -> str:
    shown = scene.host.exec(["systemctl", "show", "sglang.service", "-p", "MainPID", "--value"]).stdout.decode()
    return shown.strip()
