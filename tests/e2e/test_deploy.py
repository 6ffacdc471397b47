"""`specops deploy` end to end on a real test host: patch, push, verify, roll back, as one command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, watch_for, watch_until
from tests.testbed import drift
from tests.testbed.engine import RENUMBER_PATCH, copy_build
from tests.unit.clirun import CliResult

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("profile", ["nextn", "dflash"])
def test_other_profiles_deploy_verified_with_their_algorithm(scene: Scene, profile: str) -> None:
    config = scene.folder / "specops.toml"
    text = config.read_text().replace('profile = "ddtree"', f'profile = "{profile}"')
    if profile == "nextn":  # an MTP target drafts for itself: no draft model
        text = text.replace("/srv/models/target", "/srv/models/mtp_target")
        text = "\n".join(line for line in text.splitlines() if not line.startswith("draft_model_path")) + "\n"
    config.write_text(text)
    result, host = scene.deploy(patched=False)
    assert result.code == 0, result.out + result.err
    assert host["outcome"] == "deployed"
    smoke = host["gates"]["smoke"]
    algorithm = next(gate for gate in smoke["gates"] if gate["id"] == "algorithm")
    assert algorithm["observed"] == ("EAGLE" if profile == "nextn" else "DFLASH")
    assert smoke["figures"]["accept_length"] > 1.5
    manifest = json.loads(scene.host.read_file(f"/opt/specops/sglang/releases/{host['release']}/manifest.json"))
    assert manifest["profile"] == profile
    assert manifest["verified"] is True


def test_patched_build_deploys_verified_and_redeploy_is_unchanged(scene: Scene) -> None:
    result, host = scene.deploy()
    assert result.code == 0, result.out + result.err
    assert host["outcome"] == "deployed"
    gates = host["gates"]
    assert isinstance(gates, dict) and gates["passed"] is True
    figures = gates["smoke"]["figures"]
    assert figures["accept_length"] > 2
    release = host["release"]
    manifest = json.loads(scene.host.read_file(f"/opt/specops/sglang/releases/{release}/manifest.json"))
    assert manifest["verified"] is True
    assert manifest["gates"]["smoke"]["figures"]["accept_length"] == figures["accept_length"]
    again, host_again = scene.deploy()
    assert again.code == 0
    assert host_again["outcome"] == "unchanged"
    assert host_again["release"] == release


def test_unpatched_ddtree_fails_smoke_and_rolls_back(scene: Scene) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    result, host = scene.deploy("--force", patched=False)
    assert result.code == 1
    assert host["outcome"] == "rolled-back"
    cause = str(host["cause"])
    assert "degenerate" in cause or "!!!!" in cause
    rollback = host["rollback"]
    assert isinstance(rollback, dict) and rollback["ok"] is True
    assert rollback["to"] == good["release"]
    assert host["release"] == good["release"]
    current = scene.host.exec(["readlink", "/opt/specops/sglang/current"]).stdout.decode().strip()
    assert current.endswith(str(good["release"]))


def test_ffmpeg_gone_is_the_host_not_the_release_for_the_guard_and_for_a_forced_deploy(scene: Scene) -> None:
    """Blame before marks, on one host: FFmpeg vanishes under a verified release that the guard watches, its
    engine restarts and crashes; then a forced deploy meets the same fault. Nothing is marked bad, nothing is
    rolled back into the same fault, and both say the host is at fault, with the journal's line."""
    watch_for(scene, 180, failures=12)  # ~24 s of refused probes: the restarted engine has crashed by then
    first, older = scene.deploy()
    assert first.code == 0, first.out + first.err
    second, good = scene.deploy("--patch", str(RENUMBER_PATCH), "--force")
    assert (second.code, good["outcome"], good["watch_s"]) == (0, "deployed", 180), second.out + second.err
    drift.remove_ffmpeg_libs(scene.host)
    scene.host.exec(["systemctl", "restart", "sglang"])  # an engine restart on a broken environment

    found = watch_until(scene, "no-rollback", timeout=120)
    assert (found["current"], found["verified"]) == (good["release"], True)  # not rolled back to `older`
    reason = str(found["watch"]["reason"])  # type: ignore[index]
    assert f"guard: release {good['release']} failed its watch " in reason
    assert "; the host, not the release: torchcodec cannot load FFmpeg: " in reason
    assert "nothing marked bad, NOT rolled back" in reason
    assert _bad_marks(scene) == {}

    stopped, host = scene.deploy(patched=False)
    assert stopped.code == 1 and host["outcome"] == "preflight-failed"
    assert "torchcodec.ffmpeg" in str(host["cause"])
    forced = scene.cli("deploy", scene.host.name, "--build", str(UNPATCHED), "--force")
    assert forced.code == 1, forced.out + forced.err
    summary = forced.out
    assert "not ready" in summary and "libtorchcodec" in summary  # the cause, from the journal, fast
    assert f"{scene.host.name}: the host, not the release: torchcodec cannot load FFmpeg" in summary
    assert f"not rolled back: {good['release']} is not known to work on this environment (" in summary
    assert "libavutil.so.57" in summary  # what changed since it was verified
    assert "then deploy again: no release was marked bad" in summary
    assert "rolled back" not in summary.replace("not rolled back", "")
    assert _bad_marks(scene) == {} and older["release"] != good["release"]


def _bad_marks(scene: Scene) -> dict[str, object]:
    listed = json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]
    return {release["id"]: release["bad"] for release in listed if release["bad"] is not None}


def test_a_rollback_into_an_environment_that_broke_under_both_releases_is_rollback_failed(scene: Scene) -> None:
    """The unpatched build passes readiness and fails its smoke (the build is blamed, the host rolls back);
    FFmpeg vanishes during that smoke, so the good release's restart fails too: nothing serves, exit 7."""
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    argv = [sys.executable, "-m", "specops", "deploy", scene.host.name, "--build", str(UNPATCHED), "--force"]
    process = subprocess.Popen(argv, cwd=scene.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ))  # fmt: skip
    assert process.stderr is not None
    removed: list[str] = []
    while not removed and (line := process.stderr.readline()):
        if f"{scene.host.name} smoke " in line:  # its engine has loaded torchcodec: only a restart meets the loss
            removed = drift.remove_ffmpeg_libs(scene.host)
    out, err = process.communicate(timeout=400)
    assert removed, err
    assert process.returncode == 7, out + err  # a failed rollback has its own exit code
    assert "rollback-failed" in out and "smoke gate failed" in out  # the build was blamed: it rolled back
    assert f"{scene.host.name}: NOTHING SERVES: the rollback to {good['release']} failed (" in out, out
    assert "libavutil.so.57" in out  # the same environment cause (FFmpeg gone), from the journal, not a hang


def test_status_releases_audit_and_logs_tell_what_happened(scene: Scene) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    bad, outcome = scene.deploy("--force", patched=False)
    assert bad.code == 1
    assert outcome["outcome"] == "rolled-back"
    status = scene.cli("status", scene.host.name, "--json")
    assert status.code == 0, status.out + status.err
    found = json.loads(status.out)
    assert found["current"] == good["release"]
    assert found["verified"] is True
    assert found["uses_current"] is True
    assert found["health"] == 200
    human = scene.cli("status", scene.host.name)
    assert f"current: {good['release']} (verified" in human.out
    releases = json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]
    by_id = {release["id"]: release for release in releases}
    assert by_id[good["release"]]["verified"] is True
    assert by_id[str(outcome["attempted"])]["verified"] is False
    audit = json.loads(scene.cli("audit", scene.host.name, "--json").out)
    entries = audit["entries"] if isinstance(audit, dict) else audit
    last = entries[-1]
    assert last["action"] == "deploy"
    assert last["outcome"] == "rolled-back"
    assert last["to"] == outcome["attempted"]
    logs = scene.cli("logs", scene.host.name, "-n", "400")
    assert "DFLASH target_hidden feature dim mismatch" in logs.out
    assert "explained:" in logs.out


def _deploy_build(scene: Scene, build: Path, *args: str) -> tuple[CliResult, dict[str, object]]:
    result = scene.cli("deploy", scene.host.name, "--build", str(build), "--patch", str(PATCH), *args)
    document = json.loads(result.out) if result.out.startswith("{") else {}
    return result, document.get("hosts", {}).get(scene.host.name, {}) if isinstance(document, dict) else {}


def test_a_broken_env_value_with_a_new_build_rolls_back_with_the_old_env_and_blames_the_configuration(
    scene: Scene,
) -> None:
    """The env file belongs to its release: a rollback restores the one the old release was verified with, the
    new build is not marked bad, `diagnose` names the configuration; a fixed or config-only change deploys."""
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    config, live = scene.folder / "specops.toml", "/opt/specops/sglang/env"
    plain = config.read_text()
    config.write_text(plain.replace('LOAD_SECONDS = "0.5"', 'LOAD_SECONDS = "0.5s"'))  # a typo: float() fails
    build = copy_build(scene.folder / "newbuild")
    (build / "sglang" / "testengine_note.txt").write_text("a new build\n")

    dry = scene.cli("deploy", scene.host.name, "--build", str(build), "--patch", str(PATCH), "--dry-run")
    assert "configuration changed: env (SGLANG_TESTENGINE_LOAD_SECONDS)" in dry.out, dry.out
    assert "env SGLANG_TESTENGINE_LOAD_SECONDS: '0.5' -> '0.5s'" in dry.out
    result, failed = _deploy_build(scene, build, "--json")
    assert result.code == 1, result.out + result.err
    assert failed["outcome"] == "rolled-back"
    rollback = failed["rollback"]
    assert isinstance(rollback, dict) and rollback["ok"] is True and rollback["to"] == good["release"]
    assert rollback["marked_bad"] is None
    assert "configuration changed: env (SGLANG_TESTENGINE_LOAD_SECONDS)" in str(rollback["not_marked"])
    assert failed["culprit"] == "configuration"
    assert 'SGLANG_TESTENGINE_LOAD_SECONDS="0.5"\n' in scene.host.read_file(live).decode()  # the old release's own env
    assert scene.host.exec(["stat", "-c", "%a %U", live]).stdout.decode().split() == ["600", "root"]
    status = json.loads(scene.cli("status", scene.host.name, "--json").out)
    assert (status["current"], status["health"]) == (good["release"], 200)
    releases = json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]
    attempted = next(r for r in releases if r["id"] == failed["attempted"])
    assert not attempted.get("bad"), attempted  # the build is not blamed: still a rollback target once verified
    diagnosis = scene.cli("diagnose", scene.host.name, "--release", str(failed["attempted"]), "--json")
    verdict = json.loads(diagnosis.out)
    assert verdict["verdict"] == "configuration change", diagnosis.out
    assert "env SGLANG_TESTENGINE_LOAD_SECONDS '0.5' → '0.5s'" in verdict["headline"]

    config.write_text(plain)  # fixed: the same new build with the env that works
    fixed, deployed = _deploy_build(scene, build, "--json")
    assert (fixed.code, deployed["outcome"]) == (0, "deployed"), fixed.out + fixed.err
    config.write_text(plain.replace('TOKENS_PER_SECOND = "400"', 'TOKENS_PER_SECOND = "401"'))  # config only
    again, changed = _deploy_build(scene, build, "--json")
    assert (again.code, changed["outcome"]) == (0, "deployed"), again.out + again.err
    assert changed["release"] != deployed["release"]
    assert 'SGLANG_TESTENGINE_TOKENS_PER_SECOND="401"\n' in scene.host.read_file(live).decode()
    assert json.loads(scene.cli("status", scene.host.name, "--json").out)["health"] == 200
    same, unchanged = _deploy_build(scene, build, "--json")
    assert (same.code, unchanged["outcome"]) == (0, "unchanged"), same.out + same.err
