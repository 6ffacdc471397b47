"""`specops deploy` end to end on a real test host: patch, push, verify, roll back, as one command."""

from __future__ import annotations

import json

import pytest

from tests.e2e.deployscene import Scene
from tests.testbed import drift
from tests.testbed.engine import RENUMBER_PATCH

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


def test_ffmpeg_removed_preflight_stops_and_forced_deploy_fails_fast_then_rollback_names_the_cause(
    scene: Scene,
) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    drift.remove_ffmpeg_libs(scene.host)
    stopped, host = scene.deploy("--patch", str(RENUMBER_PATCH))
    assert stopped.code == 1
    assert host["outcome"] == "preflight-failed"
    assert "torchcodec.ffmpeg" in str(host["cause"])
    result, host = scene.deploy("--patch", str(RENUMBER_PATCH), "--force")
    assert result.code == 7, result.out + result.err  # a failed rollback has its own exit code
    assert host["outcome"] == "rollback-failed"
    assert host["release"] is None  # nothing verified serves: no release is named as serving
    assert str(host["now"]).startswith(f"{scene.host.name}: NOTHING SERVES: the rollback to {good['release']} "
                                       "failed ("), host["now"]  # fmt: skip
    readiness = host["gates"]["readiness"]
    assert readiness["ok"] is False
    cause = json.dumps(readiness["cause"])
    assert "libtorchcodec" in cause or "FFmpeg" in cause
    assert readiness["seconds"] < 60  # the profile's deadline is 1200 s: the journal's signature ended it
    rollback = host["rollback"]
    assert rollback["ok"] is False
    assert rollback["to"] == good["release"]
    rollback_readiness = rollback["gates"]["readiness"]
    assert rollback_readiness["seconds"] < 60
    assert "libtorchcodec" in json.dumps(rollback_readiness["cause"])  # the same environment cause, not a hang


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
