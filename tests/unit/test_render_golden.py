"""Golden tests: the unit and env file for each shipped profile, byte for byte, and systemd accepts them.

Set SPECOPS_UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate change, then review the diff.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli
from tests.unit.needs import need_program

GOLDEN = Path(__file__).parent / "golden"
PROFILES = ["nextn", "dflash", "ddtree"]


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("SPECOPS_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def systemd_verify(unit_text: str, unit_name: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` on the unit saved under its real name."""
    path = folder / unit_name
    path.write_text(unit_text, encoding="utf-8")
    return subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("profile", PROFILES)
def test_unit_matches_golden(capsys: pytest.CaptureFixture[str], profile: str) -> None:
    result = run_cli(capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "--profile", profile)
    assert result.code == 0, result.err
    _check_golden(f"{profile}.service", result.out)


@pytest.mark.parametrize("profile", PROFILES)
def test_env_file_matches_golden_and_masks_secrets(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, profile: str
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_s3cr3t_value")
    result = run_cli(capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", profile, "--env")
    assert result.code == 0, result.err
    assert "hf_s3cr3t_value" not in result.out + result.err
    assert "HF_TOKEN=***" in result.out.splitlines()
    _check_golden(f"{profile}.env", result.out)


@pytest.mark.parametrize("profile", PROFILES)
def test_rendered_unit_passes_systemd_analyze_verify(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profile: str
) -> None:
    need_program("systemd-analyze", "systemd")
    result = run_cli(capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "--profile", profile)
    verified = systemd_verify(result.out, "sglang-gold.service", tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr == ""
