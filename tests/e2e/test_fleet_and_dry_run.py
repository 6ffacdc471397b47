"""Fleet deploys (canary, failure budget, per-host summary) and --dry-run, on real test hosts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, make_scene
from tests.testbed import drift
from tests.testbed.staging import install_models, inventory_toml
from tests.testbed.testhost import TestHost
from tests.unit.clirun import run_cli

pytestmark = pytest.mark.e2e


def _fleet(hosts: list[TestHost], venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Scene:  # fmt: skip
    scene = make_scene(hosts[0], venv, tmp_path, capsys, monkeypatch)
    other = hosts[1]
    install_models(other, tmp_path / "other")
    drift.install_nvidia_smi(other, "h100x8-580")
    drift.set_torch_cuda_tag(other, venv, version="2.13.0+cu130", cuda="13.0")
    ssh_config = tmp_path / "home" / ".ssh" / "config"
    ssh_config.write_text(ssh_config.read_text() + other.ssh_config_block(other.name))
    toml = inventory_toml(other, venv / "bin" / "python").replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
    names = json.dumps([hosts[0].name, other.name])
    (tmp_path / "specops.toml").write_text(
        (tmp_path / "specops.toml").read_text() + toml + f"\n[groups]\ngpu = {names}\n"
    )
    return scene


def test_canary_then_rest_and_a_failing_host_is_reported_per_host(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hosts = testhost_factory(2)  # type: ignore[operator]
    scene = _fleet(hosts, host_venv, tmp_path, capsys, monkeypatch)
    drift.remove_ffmpeg_libs(hosts[1])
    result = run_cli(capsys, "deploy", "gpu", "--build", str(UNPATCHED), "--patch", str(PATCH), "--canary", "1",
                     "--json")  # fmt: skip
    outcomes = json.loads(result.out)["hosts"]
    assert outcomes[hosts[0].name]["outcome"] == "deployed"
    assert outcomes[hosts[1].name]["outcome"] == "preflight-failed"
    assert "torchcodec.ffmpeg" in outcomes[hosts[1].name]["cause"]
    assert result.code == 1
    table = run_cli(capsys, "deploy", "gpu", "--build", str(UNPATCHED), "--patch", str(PATCH))
    rows = {line.split()[0]: line.split()[1] for line in table.out.splitlines()[1:3]}
    assert rows == {hosts[0].name: "unchanged", hosts[1].name: "preflight-failed"}
    assert scene.host.name in table.out


def test_failing_canary_skips_the_rest(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hosts = testhost_factory(2)  # type: ignore[operator]
    _fleet(hosts, host_venv, tmp_path, capsys, monkeypatch)
    drift.remove_ffmpeg_libs(hosts[0])
    result = run_cli(capsys, "deploy", "gpu", "--build", str(UNPATCHED), "--patch", str(PATCH), "--canary", "1",
                     "--json")  # fmt: skip
    outcomes = json.loads(result.out)["hosts"]
    assert outcomes[hosts[0].name]["outcome"] == "preflight-failed"
    assert outcomes[hosts[1].name]["outcome"] == "skipped"
    assert outcomes[hosts[1].name]["cause"] == "the canary failed"
    listing = hosts[1].exec(["ls", "/opt/specops/sglang/releases"], check=False)
    assert listing.returncode != 0 or listing.stdout.strip() == b""  # nothing was pushed to the skipped host


def test_dry_run_prints_the_plan_and_changes_nothing(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch)
    result = scene.cli("deploy", testhost.name, "--build", str(UNPATCHED), "--patch", str(PATCH), "--dry-run")
    assert result.code == 0, result.out + result.err
    assert f"{testhost.name}: would deploy " in result.out
    assert re.search(r"push \S+: send (\d+) of \1 files", result.out), result.out  # first push: everything
    assert "+ExecStart=" in result.out  # the unit diff against nothing installed
    assert result.out.rstrip().endswith("dry run: nothing was changed")
    assert testhost.exec(["test", "-e", "/opt/specops/sglang/releases"], check=False).returncode != 0
    assert testhost.exec(["test", "-e", "/etc/systemd/system/sglang.service"], check=False).returncode != 0
    assert testhost.exec(["test", "-e", "/run/specops/lock"], check=False).returncode != 0
