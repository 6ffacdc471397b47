"""The rollback guard puts back the release the dry run named, not the newest-created verified one: after an
older build is redeployed (A serves again, B was created later), a deploy killed with `kill -9` after its
switch is rolled back by the guard on the host to A. Real systemd, OpenSSH and test engine on a test host;
the CLI runs as a process so that it can be killed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH
from tests.e2e.faultkit import KILL_9, FaultScene, inject, prepare, release_dead_lock, variant_build, wait_served
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e


def _deployed(scene: FaultScene, build: Path) -> str:
    ran, outcome = scene.deploy("--force", build=build)
    assert ran.code == 0 and outcome.get("outcome") == "deployed", ran.out + ran.err[-800:]
    return str(outcome["release"])


def test_a_killed_deploy_is_rolled_back_to_the_release_the_dry_run_named(
    testhost: TestHost, host_venv: Path, tmp_path: Path
) -> None:
    scene = prepare(testhost, host_venv, tmp_path)
    older, newer, killed = (variant_build(tmp_path, tag) for tag in ("older", "newer", "killed"))
    a = _deployed(scene, older)
    b = _deployed(scene, newer)
    assert _deployed(scene, older) == a  # the older build again: A serves, B is the newest-created verified
    listed = json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]
    created = {release["id"]: release["created_at"] for release in listed}  # ids say nothing about time
    assert created[b] > created[a] and scene.status()["current"] == a

    dry_run = ["deploy", scene.host.name, "--build", str(killed), "--patch", str(PATCH), "--force", "--dry-run"]
    plan = scene.cli(*dry_run, "--json")
    assert plan.code == 0, plan.out + plan.err
    assert json.loads(plan.out)["hosts"][0]["rollback_to"] == a
    shown = scene.cli(*dry_run).out
    assert f"roll back to {a}" in shown and f"rolls back to {a} if this deploy dies" in shown

    process = scene.start("--force", build=killed)
    inject(scene, process, KILL_9, "", "gates")  # after the switch: `current` is the killed deploy's release
    assert process.returncode == -9
    release_dead_lock(scene)  # the guard then acts at its next tick, not after the 90 s stale window
    served = wait_served(scene, allowed={a, b})
    assert (served.get("current"), served.get("verified"), served.get("health")) == (a, True, 200), served
    guard = served.get("guard")
    assert isinstance(guard, dict) and (guard["state"], guard["rolled_back_to"]) == ("rolled-back", a), guard
    lines = scene.host.exec(["cat", "/opt/specops/sglang/audit.jsonl"]).stdout.decode().splitlines()
    rollback = [entry for entry in map(json.loads, lines) if entry.get("action") == "rollback"][-1]
    assert rollback["to"] == a and str(rollback["message"]).startswith("guard: the deploy stopped")
    # killed before its gates judged the build: the guard rolls back and marks nothing bad
    assert rollback["marked_bad"] is None
    listed = served.get("releases")
    assert isinstance(listed, list) and [r["id"] for r in listed if r["bad"] is not None] == []
    status = scene.cli("status", scene.host.name).out
    assert "guard (rolled-back): guard: the deploy stopped (no lock heartbeat) before release" in status
