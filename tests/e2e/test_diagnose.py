"""`specops diagnose` and `specops diff` end to end: the story's three questions answered on real test hosts.

Real SSH, systemd, the test engine and the venv with torch and torchcodec; the faults are real too (FFmpeg
libraries deleted, an unpatched DDTREE build, torchcodec 0.10.0 on torch 2.13).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.deployscene import Scene
from tests.testbed import drift
from tests.testbed.staging import inventory_toml
from tests.testbed.testhost import TestHost
from tests.unit.clirun import run_cli

pytestmark = pytest.mark.e2e
SPEC_INFO = "sglang/srt/speculative/spec_info.py"
JOURNAL_WAIT_S = 120.0


def _wait_for_journal(scene: Scene, text: str) -> None:
    """Poll the unit's journal until the engine has said `text` (a crash loop takes a few seconds per start)."""
    deadline = time.monotonic() + JOURNAL_WAIT_S
    while text not in scene.journal():
        assert time.monotonic() < deadline, f"the journal never said {text!r}:\n{scene.journal()[-3000:]}"
        time.sleep(0.5)


def test_ffmpeg_removed_after_a_good_deploy_is_environment_drift_and_clears_the_release(scene: Scene) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    manifest = json.loads(scene.host.read_file(f"/opt/specops/sglang/releases/{good['release']}/manifest.json"))
    assert manifest["facts"]["schema"] == 1 and "libavutil.so.57" in manifest["facts"]["ffmpeg_libs"]
    drift.remove_ffmpeg_libs(scene.host)
    scene.host.exec(["systemctl", "restart", "sglang"])
    _wait_for_journal(scene, "libtorchcodec")

    result = scene.cli("diagnose", scene.host.name, "--json")
    assert result.code == 1, result.out + result.err
    verdict = json.loads(result.out)
    assert verdict["verdict"] == "environment drift"
    assert verdict["release"] == verdict["reference"] == good["release"]
    assert "libavutil.so.57" in verdict["headline"]
    assert verdict["failure"]["signature"] == "torchcodec-ffmpeg"
    assert verdict["files"] == []
    assert verdict["cleared"][0].startswith(f"the code is cleared: no file differs from {good['release']}")
    ffmpeg = next(c for c in verdict["fingerprint_diff"]["changes"] if c["key"] == "FFmpeg libraries")
    assert "libavutil.so.57" in ffmpeg["removed"]

    human = scene.cli("diagnose", scene.host.name)
    assert "verdict: environment drift" in human.out
    assert "the code is cleared" in human.out
    assert "apt-get install ffmpeg" in human.out  # the signature's fix comes first among the next steps

    drifted = scene.cli("diff", scene.host.name, "--release", "last-verified", "--json")
    assert drifted.code == 0, drifted.out + drifted.err
    found = json.loads(drifted.out)
    assert found["left"] == f"{scene.host.name} (release {good['release']})"
    assert [c["key"] for c in found["changes"]] == ["torchcodec", "FFmpeg libraries"]
    assert "libavutil.so.57" in found["changes"][1]["removed"]

    status = json.loads(scene.cli("status", scene.host.name, "--json").out)
    assert [change.split(" ")[0] for change in status["drift"]] == ["torchcodec", "FFmpeg"]
    assert "libavutil.so.57" in status["drift"][1]

    doctor = scene.cli("doctor", scene.host.name, "--since-verified", "--json")
    since = json.loads(doctor.out)["hosts"][scene.host.name]["since_verified"]
    assert [c["key"] for c in since["changes"]] == ["torchcodec", "FFmpeg libraries"]
    doctor_text = scene.cli("doctor", scene.host.name, "--since-verified")
    assert f"{scene.host.name}: since the last verified release" in doctor_text.out
    assert "libavutil.so.57" in doctor_text.out


def test_a_release_that_breaks_ddtree_is_a_code_change_naming_spec_info(scene: Scene) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    bad_result, bad = scene.deploy("--force", patched=False)
    assert bad_result.code == 1 and bad["outcome"] == "rolled-back", bad_result.out + bad_result.err
    failed = str(bad["attempted"])

    result = scene.cli("diagnose", scene.host.name, "--release", failed, "--json")
    assert result.code == 1, result.out + result.err
    verdict = json.loads(result.out)
    assert verdict["verdict"] == "code change"
    assert (verdict["release"], verdict["reference"]) == (failed, good["release"])
    assert f"{SPEC_INFO} +1 −1" in verdict["headline"]
    assert [f["path"] for f in verdict["files"]] == [SPEC_INFO]
    assert any("after a change under speculative/" in line for line in verdict["evidence"])
    assert verdict["cleared"][0].startswith("the environment is cleared")

    # the deploy rolled back by itself: the advice is what serves now, never a rollback off it
    assert verdict["serving"] == good["release"]
    assert (
        verdict["now"] == f"now: {good['release']} serves (verified); {failed} no longer serves (the host was "
        "rolled back)"
    )
    human = scene.cli("diagnose", scene.host.name, "--release", failed)
    assert "verdict: code change" in human.out and "spec_info.py +1 −1" in human.out
    assert f"now: {good['release']} serves (verified)" in human.out
    assert f"nothing to roll back: the rollback already happened, {good['release']} (verified) serves now" in human.out
    assert "specops rollback" not in human.out

    since = scene.cli("diff", scene.host.name, "--release", failed)
    assert since.code == 0, since.out + since.err
    assert f"{SPEC_INFO} +1 −1" in since.out  # current (the good release, rolled back to) against the failed one


HostFactory = Callable[[int], list[TestHost]]


def test_diff_of_two_hosts_lists_the_cuda_tag_and_torchcodec_first(
    testhost_factory: HostFactory, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    one, two = testhost_factory(2)
    for host in (one, two):
        drift.install_nvidia_smi(host, "h100x8-580")
    drift.set_torch_cuda_tag(one, host_venv, version="2.13.0+cu130", cuda="13.0")
    drift.set_torch_cuda_tag(two, host_venv, version="2.13.0+cu128", cuda="12.8")
    assert drift.install_torchcodec_010(two, host_venv) == "0.10.0"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("".join(host.ssh_config_block(host.name) for host in (one, two)))
    python = host_venv / "bin" / "python"
    (tmp_path / "specops.toml").write_text(inventory_toml(one, python) + "\n" + inventory_toml(two, python))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)

    result = run_cli(capsys, "diff", one.name, two.name, "--json")
    assert result.code == 0, result.out + result.err
    found = json.loads(result.out)
    assert [change["text"] for change in found["changes"]] == [
        "torch 2.13.0+cu130 (CUDA 13.0) → 2.13.0+cu128 (CUDA 12.8)",
        "torchcodec 0.13.0+cpu (loads core5) → 0.10.0 (no FFmpeg core loads)",
    ]
    assert "driver/CUDA" in found["equal_groups"] and "native libraries" in found["equal_groups"]

    human = run_cli(capsys, "diff", one.name, two.name)
    lines = human.out.splitlines()
    assert lines[1:4] == [
        "Python packages",
        "  ≠ torch 2.13.0+cu130 (CUDA 13.0) → 2.13.0+cu128 (CUDA 12.8)",
        "  ≠ torchcodec 0.13.0+cpu (loads core5) → 0.10.0 (no FFmpeg core loads)",
    ]
    assert lines[-1].startswith("equal: driver/CUDA, native libraries, system")
