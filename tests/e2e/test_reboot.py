"""A reboot never leaves a host dark: the engine's unit is enabled by every deploy, so a rebooted host serves
its verified release again; a watch the reboot cut is reported as cut short, never as "watching"; and a host
that went down between a deploy's switch and its gates is rolled back by the guard the boot unit re-arms.
Real systemd, OpenSSH and test engine on a test host that reboots on its own disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.faultkit import KILL_9, READINESS_S, FaultScene, inject, prepare, variant_build, wait_served
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e
BOOT_UNIT = "specops-boot-sglang.service"


def _scene(host: TestHost, venv: Path, folder: Path, watch_s: int = 0) -> FaultScene:
    scene = prepare(host, venv, folder)
    toml = folder / "specops.toml"
    limit = f"timeout_s = {READINESS_S}\n"
    toml.write_text(toml.read_text().replace(limit, f"{limit}watch_s = {watch_s}\n"))
    return scene


def _why(scene: FaultScene) -> str:
    """What a status that did not come back says, for an assertion's message."""
    ran = scene.cli("status", scene.host.name, timeout=120)
    return f"status exit {ran.code}: {ran.out}{ran.err}"


def _deployed(scene: FaultScene, *extra: str, build: Path | None = None) -> str:
    ran, outcome = scene.deploy(*extra) if build is None else scene.deploy(*extra, build=build)
    assert ran.code == 0 and outcome["outcome"] == "deployed", ran.out + ran.err
    return str(outcome["release"])


def test_a_rebooted_host_serves_its_verified_release_again(testhost: TestHost, host_venv: Path, tmp_path: Path) -> None:
    scene = _scene(testhost, host_venv, tmp_path)
    release = _deployed(scene)
    enabled = testhost.ssh(f"systemctl is-enabled sglang.service {BOOT_UNIT}", check=False).stdout.split()
    assert enabled == ["enabled", "enabled"]

    testhost.reboot()

    found = wait_served(scene, {release})
    assert found.get("current") == release, _why(scene)
    assert (found["current"], found["verified"], found["serving"], found["health"]) == (release, True, True, 200)
    assert found["enabled"] is True
    smoke = scene.cli("smoke", testhost.name, timeout=300)
    assert smoke.code == 0, smoke.out + smoke.err


@pytest.mark.parametrize("clean", [False, True], ids=["power-cut", "systemctl-reboot"])
def test_status_after_a_reboot_mid_watch_says_the_watch_was_cut_short(
    testhost: TestHost, host_venv: Path, tmp_path: Path, clean: bool
) -> None:
    scene = _scene(testhost, host_venv, tmp_path, watch_s=900)
    _deployed(scene)  # the first release: nothing to roll back to, so no watch
    watched = _deployed(scene, build=variant_build(tmp_path, "watched"))
    assert "(verified, watching (" in scene.cli("status", testhost.name).out

    testhost.reboot(clean=clean)

    found = wait_served(scene, {watched})
    assert found.get("current") == watched, _why(scene)
    watch = found["watch"]
    assert isinstance(watch, dict)
    assert (found["current"], watch["release"], watch["state"]) == (watched, watched, "cut-short")
    assert str(watch["reason"]).startswith("cut short by a ")
    text = scene.cli("status", testhost.name).out
    assert f"current: {watched} (verified, watch cut short, profile ddtree, build " in text
    assert "guard (cut-short): cut short by a " in text
    assert "verified, watching" not in text
    audit = scene.cli("audit", testhost.name).out
    assert "cut-short" in audit


def test_a_reboot_between_the_switch_and_the_gates_ends_on_the_rollback_target(
    testhost: TestHost, host_venv: Path, tmp_path: Path
) -> None:
    scene = _scene(testhost, host_venv, tmp_path)
    good = _deployed(scene)
    process = scene.start(build=variant_build(tmp_path, "interrupted"))
    inject(scene, process, KILL_9, "", "gates")  # the CLI dies after the switch, before "verified"
    switched = scene.status()
    assert switched["current"] != good and switched["verified"] is False

    testhost.reboot(clean=False)  # before the guard's stale-heartbeat window (90 s) ends

    found = wait_served(scene, {good}, timeout=180)
    assert found.get("current") == good, _why(scene)
    assert (found["current"], found["verified"], found["health"]) == (good, True, 200)
    audit = scene.cli("audit", testhost.name).out
    assert "guard: the deploy stopped (no lock heartbeat) before release" in audit
