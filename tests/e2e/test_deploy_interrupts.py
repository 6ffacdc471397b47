"""Deploys that die or collide: `kill -9` of the CLI in each phase, and two deploys at once.

After a kill the host must still serve a verified release or the next deploy must put one there: the
host-side guard rolls back when the lock's heartbeat stops and `current` was never verified, and the next
deploy from this machine takes the killed deploy's lock over at once (its process is provably gone) and
succeeds, saying so and recording it in the audit log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene
from tests.testbed.engine import RENUMBER_PATCH

pytestmark = pytest.mark.e2e


def _deploy_process(scene: Scene, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "specops", "deploy", scene.host.name, "--build", str(UNPATCHED),
            "--patch", str(PATCH), *extra]  # fmt: skip
    return subprocess.Popen(argv, cwd=scene.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))  # fmt: skip


def _kill_at(
    process: subprocess.Popen[str], phase: str, timeout: float = 120, signum: int = signal.SIGKILL
) -> list[str]:
    """Read the CLI's phase lines until `phase` starts, then send `signum` (kill -9); the lines seen."""
    assert process.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if f" {phase} " in line:
            assert process.poll() is None, f"the command ended (exit {process.returncode}) before the signal: {seen}"
            os.kill(process.pid, signum)
            process.wait(timeout=180)  # a handled signal may start what served before it exits (gates included)
            return seen
    process.kill()
    raise AssertionError(f"phase {phase!r} never started; saw: {seen}")


def _status(scene: Scene) -> dict[str, object]:
    result = scene.cli("status", scene.host.name, "--json")
    return json.loads(result.out) if result.out.startswith("{") else {}


def _wait_for_verified_current(scene: Scene, expected: str, timeout: float = 90) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    found: dict[str, object] = {}
    while time.monotonic() < deadline:
        found = _status(scene)
        if found.get("current") == expected and found.get("verified") and found.get("health") == 200:
            return found
        time.sleep(2)
    raise AssertionError(f"the host did not come back to {expected}: {found}")


@pytest.mark.parametrize("phase", ["push", "switch", "restart", "smoke"])
def test_kill_9_in_a_phase_and_the_next_deploy_takes_the_dead_deploys_lock_at_once(scene: Scene, phase: str) -> None:
    first, _ = scene.deploy()
    assert first.code == 0, first.out + first.err
    process = _deploy_process(scene, "--patch", str(RENUMBER_PATCH), "--force")
    _kill_at(process, phase)
    held = scene.cli("lock", "status", scene.host.name, "--json")
    assert f'"pid": {process.pid}' in held.out  # the killed deploy's lock is still there, heartbeat fresh
    began = time.monotonic()
    again, outcome = scene.deploy("--patch", str(RENUMBER_PATCH), "--force")
    assert again.code == 0, again.out + again.err
    assert outcome["outcome"] == "deployed"
    took = str(outcome["lock_taken_over"])
    assert took.startswith(f"took over the lock of a deploy that no longer runs (process {process.pid} ")
    assert time.monotonic() - began < 85  # no wait for the dead heartbeat to turn stale (90 s)
    audit = scene.host.exec(["tail", "-n", "1", "/opt/specops/sglang/audit.jsonl"]).stdout.decode()
    assert json.loads(audit)["lock_taken_over"] == took
    found = _wait_for_verified_current(scene, str(outcome["release"]))
    assert found["uses_current"] is True


def test_two_deploys_at_once_one_gets_exit_6_naming_the_holder(scene: Scene) -> None:
    first = _deploy_process(scene)
    assert first.stderr is not None
    while " push " not in (line := first.stderr.readline()):
        assert line, "the first deploy ended before pushing"
    second = subprocess.run(
        [sys.executable, "-m", "specops", "deploy", scene.host.name, "--build", str(UNPATCHED), "--patch", str(PATCH)],
        cwd=scene.folder, capture_output=True, text=True, env=dict(os.environ), timeout=120,
    )  # fmt: skip
    assert second.returncode == 6, second.stdout + second.stderr
    assert "locked by" in second.stdout + second.stderr
    assert "specops deploy" in second.stdout + second.stderr
    first.communicate(timeout=300)
    assert first.returncode == 0


def test_ctrl_c_during_readiness_releases_the_lock_and_the_guard_rolls_back(scene: Scene) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    process = _deploy_process(scene, "--patch", str(RENUMBER_PATCH), "--force")
    _kill_at(process, "restart", signum=signal.SIGINT)
    assert process.returncode == 130
    free = scene.cli("lock", "status", scene.host.name, "--json")
    assert free.code == 0
    assert "holder" not in json.loads(free.out) or json.loads(free.out).get("holder") is None
    found = _wait_for_verified_current(scene, str(good["release"]))
    assert found["uses_current"] is True
