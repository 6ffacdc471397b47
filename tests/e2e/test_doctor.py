"""`specops doctor` end to end: the real CLI, real SSH, a real probe on test hosts broken one way each.

Every host problem the doctor must name, asserted on what the operator sees (the JSON and the table),
and for the native-library cases the static verdict is checked against `--deep` (a real import).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.testbed import drift
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, RENUMBER_PATCH, copy_build
from tests.testbed.staging import install_build, install_models, inventory_toml
from tests.testbed.testhost import TestHost
from tests.unit.clirun import CliResult, run_cli

pytestmark = pytest.mark.e2e

ABI_SYMBOL = "_ZN3c1013MessageLoggerC1EPKciib"
Doctor = Callable[..., CliResult]


def _manifest(host: TestHost, release: str, created_at: str) -> None:
    body = {"verified": True, "created_at": created_at}
    host.write_file(f"/opt/specops/sglang/releases/{release}/manifest.json", json.dumps(body).encode())


@pytest.fixture
def scene(
    testhost: TestHost, host_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Doctor]:
    """Prepare the host like an SGLang box (models, a build as `current`, a GPU scenario); returns a doctor runner."""

    def prepare(build: Path, draft: str = "draft", scenario: str = "h100x8-580") -> Doctor:
        install_models(testhost, tmp_path)
        install_build(testhost, build, "r2")
        _manifest(testhost, "r2", "2026-11-02T00:00:00Z")
        drift.install_nvidia_smi(testhost, scenario)
        home = tmp_path / "home"
        (home / ".ssh").mkdir(parents=True, exist_ok=True)
        (home / ".ssh" / "config").write_text(testhost.ssh_config_block(testhost.name))
        (tmp_path / "specops.toml").write_text(inventory_toml(testhost, host_venv / "bin" / "python", draft=draft))
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.chdir(tmp_path)

        def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
            return run_cli(capsys, "doctor", testhost.name, *args)

        return doctor

    return prepare


def _checks(result: CliResult, host: str) -> dict[str, dict[str, object]]:
    document = json.loads(result.out)
    return {check["id"]: check for check in document["hosts"][host]["checks"]}


def _deep(result: CliResult, host: str) -> dict[str, object]:
    deep = json.loads(result.out)["hosts"][host]["deep"]
    assert isinstance(deep, dict)
    return deep


def _patched(tmp_path: Path) -> Path:
    return copy_build(tmp_path / "patched", [DDTREE_PATCH])


def test_healthy_host_names_core5_and_ffmpeg5_and_deep_agrees(
    scene: Callable[..., Doctor], testhost: TestHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doctor = scene(_patched(tmp_path))
    result = doctor(capsys, "--json", "--deep")
    checks = _checks(result, testhost.name)
    assert checks["torchcodec.ffmpeg"]["status"] == "pass"
    assert "core 5" in str(checks["torchcodec.ffmpeg"]["summary"])
    assert "FFmpeg 5" in str(checks["torchcodec.ffmpeg"]["summary"])
    assert checks["torchcodec.abi"]["status"] == "pass"
    assert checks["sglang.algorithm"]["status"] == "pass"
    assert checks["model.draft_target_dims"]["status"] == "pass"
    assert _deep(result, testhost.name)["torchcodec_ok"] is True
    # the test host has a CPU torch while nvidia-smi lists 8 GPUs: a real, reported failure
    assert checks["torch.variant"]["status"] == "fail"
    assert result.code == 1


def test_human_output_marks_verdicts_and_fixes(
    scene: Callable[..., Doctor], testhost: TestHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doctor = scene(_patched(tmp_path))
    result = doctor(capsys)
    lines = result.out.splitlines()
    assert lines[0].startswith(testhost.name)
    assert any(line.strip().startswith("[✓] torchcodec.ffmpeg") for line in lines)
    failing = next(i for i, line in enumerate(lines) if line.strip().startswith("[✗] torch.variant"))
    assert any(line.strip().startswith("fix: ") for line in lines[failing + 1 : failing + 6])
    assert lines[-1].endswith("checks passed on 1 host")
    assert result.code == 1


def test_ffmpeg_removed_fails_naming_libavutil_and_deep_agrees(
    scene: Callable[..., Doctor], testhost: TestHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doctor = scene(_patched(tmp_path))
    drift.remove_ffmpeg_libs(testhost)
    result = doctor(capsys, "--json", "--deep", "--only", "torchcodec")
    check = _checks(result, testhost.name)["torchcodec.ffmpeg"]
    assert check["status"] == "fail"
    assert "libavutil.so.57" in json.dumps(check)
    assert "apt-get install ffmpeg" in str(check["hint"])
    deep = _deep(result, testhost.name)
    assert deep["torchcodec_ok"] is False
    assert "cannot open shared object file" in str(deep["torchcodec_error"])
    assert result.code == 1


def test_torchcodec_010_fails_abi_naming_the_symbol_and_deep_agrees(
    scene: Callable[..., Doctor],
    testhost: TestHost,
    host_venv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doctor = scene(_patched(tmp_path))
    drift.install_torchcodec_010(testhost, host_venv)
    result = doctor(capsys, "--json", "--deep", "--only", "torchcodec")
    check = _checks(result, testhost.name)["torchcodec.abi"]
    assert check["status"] == "fail"
    assert ABI_SYMBOL in json.dumps(check)
    deep = _deep(result, testhost.name)
    assert deep["torchcodec_ok"] is False
    assert f"undefined symbol: {ABI_SYMBOL}" in str(deep["torchcodec_error"])


def test_driver_570_with_cu130_torch_fails_with_upgrade_hint(
    scene: Callable[..., Doctor],
    testhost: TestHost,
    host_venv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doctor = scene(_patched(tmp_path), scenario="h100x8-570")
    drift.set_torch_cuda_tag(testhost, host_venv, version="2.13.0+cu130", cuda="13.0")
    result = doctor(capsys, "--json", "--only", "cuda.driver_vs_torch")
    check = _checks(result, testhost.name)["cuda.driver_vs_torch"]
    assert check["status"] == "fail"
    assert "upgrade the driver to ≥580.65.06" in str(check["hint"])
    assert result.code == 1


def test_unpatched_ddtree_build_fails_explaining_is_dflash(
    scene: Callable[..., Doctor], testhost: TestHost, capsys: pytest.CaptureFixture[str]
) -> None:
    doctor = scene(BUILD_PYTHON)
    result = doctor(capsys, "--json", "--only", "sglang")
    check = _checks(result, testhost.name)["sglang.algorithm"]
    assert check["status"] == "fail"
    assert "is_dflash()" in str(check["summary"]) + str(check["hint"])
    assert "[N, 25600]" in json.dumps(check)


def test_renumbered_enum_warns_naming_the_members(
    scene: Callable[..., Doctor], testhost: TestHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doctor = scene(copy_build(tmp_path / "renumbered", [DDTREE_PATCH, RENUMBER_PATCH]))
    install_build(testhost, _patched(tmp_path), "r1")
    _manifest(testhost, "r1", "2026-11-01T00:00:00Z")
    testhost.exec(["ln", "-sfn", "/opt/specops/sglang/releases/r2", "/opt/specops/sglang/current"])
    result = doctor(capsys, "--json", "--only", "sglang.enum_stability")
    check = _checks(result, testhost.name)["sglang.enum_stability"]
    assert check["status"] == "warn"
    assert "EAGLE" in str(check["summary"])
    assert result.code == 0
    assert doctor(capsys, "--strict", "--only", "sglang.enum_stability").code == 1


def test_draft_with_square_fc_fails_expecting_25600(
    scene: Callable[..., Doctor], testhost: TestHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doctor = scene(_patched(tmp_path), draft="draft_fc_5120")
    result = doctor(capsys, "--json", "--only", "model")
    check = _checks(result, testhost.name)["model.draft_target_dims"]
    assert check["status"] == "fail"
    assert "25600" in str(check["summary"])


def test_unreachable_host_exits_4(
    scene: Callable[..., Doctor], testhost: TestHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doctor = scene(_patched(tmp_path))
    config = tmp_path / "home" / ".ssh" / "config"
    config.write_text(config.read_text().replace(f"HostName {testhost.ip}", f"HostName {testhost.ip}\n  Port 2299"))
    result = doctor(capsys)
    assert result.code == 4
    assert "[✗] ssh.reachable" in result.out
