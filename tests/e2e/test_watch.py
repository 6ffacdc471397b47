"""After "verified" the guard keeps watching (on the host, after the deploy returned): an engine that hangs
shortly after is rolled back by the guard within the window, the release it left is marked bad and never a
rollback target again, and `status`, `releases` and `audit` say why; an engine that stays healthy is left alone
and the watch ends with its window. Real systemd, OpenSSH and test engine on a test host."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, Scene, status_of, watch_for, watch_until
from tests.testbed.engine import RENUMBER_PATCH, copy_build

pytestmark = pytest.mark.e2e
HANG_AFTER_S = 30  # after the engine's start: its deploy's gates (~15 s here) are done by then, the window not


def _health_until_200(scene: Scene, timeout: float = 60) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = status_of(scene)
        if found.get("health") == 200:
            return found.get("running_release")
        time.sleep(1)
    raise AssertionError(f"the engine did not come back: {status_of(scene)}")


def _deploy_build(scene: Scene, build: Path) -> dict[str, object]:
    result = scene.cli("deploy", scene.host.name, "--build", str(build), "--json")
    assert result.code == 0, result.out + result.err
    outcome = json.loads(result.out)["hosts"][scene.host.name]
    assert isinstance(outcome, dict)
    return outcome


def test_an_engine_that_hangs_after_verified_is_rolled_back_by_the_guard(scene: Scene, tmp_path: Path) -> None:
    watch_for(scene, 60)
    first, good = scene.deploy()
    assert first.code == 0 and good["watch_s"] is None, first.out + first.err  # nothing to roll back to: no watch
    build = copy_build(tmp_path / "hangs" / "python", [PATCH])
    (build / "sglang" / "testengine_env.json").write_text(
        json.dumps({"SGLANG_TESTENGINE_HANG_AFTER_SECONDS": str(HANG_AFTER_S)})
    )
    outcome = _deploy_build(scene, build)
    hung = str(outcome["release"])
    assert (outcome["outcome"], outcome["watch_s"]) == ("deployed", 60)  # verified: the deploy did not wait
    text = scene.cli("status", scene.host.name)
    assert f"current: {hung} (verified, watching (" in text.out and " left), profile ddtree" in text.out
    assert "health: 200" in text.out  # healthy at "verified" and just after: the hang comes later
    watching = status_of(scene)["watch"]
    assert isinstance(watching, dict) and watching["release"] == hung and str(watching["deadline"]).endswith("Z")

    found = watch_until(scene, "rolled-back", timeout=90)
    watch = found["watch"]
    assert isinstance(watch, dict)
    assert (found["current"], found["verified"]) == (good["release"], True)
    assert _health_until_200(scene) == good["release"]  # the guard restarted it; it comes up by itself
    reason = str(watch["reason"])
    assert reason.startswith(f"guard: release {hung} failed its watch ")
    assert "/health_generate did not answer within 2 s (2 times in a row)" in reason
    into = int(reason.split("failed its watch ")[1].split(" s after verified")[0])
    assert 4 <= into < 60  # two probes of 2 s after the hang began, within the window
    assert "guard (rolled-back): guard: release" in scene.cli("status", scene.host.name).out
    assert "failed its watch" in scene.cli("audit", scene.host.name).out

    listed = json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]
    bad = {release["id"]: release["bad"] for release in listed}
    assert bad[hung]["reason"] == "rolled back: " + reason and bad[good["release"]] is None
    table = scene.cli("releases", scene.host.name).out
    assert "bad: rolled back: guard: release" in table

    refused = scene.cli("rollback", scene.host.name, "--to", hung)
    assert refused.code == 1
    assert f"release {hung} is marked bad (rolled back: guard: release {hung} failed its watch" in refused.err
    assert "pass --force to roll back to it" in refused.err
    assert status_of(scene)["current"] == good["release"]  # refused before anything changed


def test_an_engine_that_stays_healthy_is_left_alone_and_the_watch_ends(scene: Scene) -> None:
    watch_for(scene, 8)
    first, _ = scene.deploy()
    assert first.code == 0, first.out + first.err
    second, outcome = scene.deploy("--patch", str(RENUMBER_PATCH), "--force")
    assert second.code == 0 and outcome["watch_s"] == 8, second.out + second.err
    found = watch_until(scene, "passed", timeout=60)
    assert (found["current"], found["verified"], found["health"]) == (outcome["release"], True, 200)
    watch = found["watch"]
    assert isinstance(watch, dict) and watch["failures"] == 0
    assert "verified, watching" not in scene.cli("status", scene.host.name).out
    active = scene.host.exec(["systemctl", "is-active", "specops-watch-sglang.service"], check=False)
    assert active.stdout.decode().strip() != "active"
    entry = json.loads(scene.host.exec(["tail", "-n", "1", "/opt/specops/sglang/audit.jsonl"]).stdout.decode())
    assert (entry["action"], entry["outcome"], entry["to"]) == ("watch", "passed", outcome["release"])
    listed = json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]
    assert all(release["bad"] is None for release in listed)
