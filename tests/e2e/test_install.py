"""`python3 -m pip install .` in a fresh venv gives a working `specops` that finds its shipped data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with specops installed from this checkout the way the README says."""
    venv = tmp_path_factory.mktemp("install") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(ROOT)], check=True, timeout=600)
    return venv


def test_wheel_ships_units_and_profiles(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("specops-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in ("units/sglang.service.j2", "profiles/nextn.toml", "profiles/dflash.toml", "profiles/ddtree.toml"):
        assert f"specops/_data/{shipped}" in names
    assert "specops/config/starter.toml" in names


def test_installed_specops_renders_the_example(installed: Path, tmp_path: Path) -> None:
    specops = str(installed / "bin" / "specops")
    help_text = subprocess.run([specops, "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("init", "render", "hosts", "config"):
        assert f"  {command} " in help_text
    subprocess.run([specops, "init"], cwd=tmp_path, check=True, capture_output=True)
    unit = subprocess.run(
        [specops, "render", "llm-two", "--profile", "ddtree"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert "--speculative-algorithm DDTREE" in unit
    module = subprocess.run(
        [str(installed / "bin" / "python"), "-m", "specops", "--version"], capture_output=True, text=True, check=True
    )
    assert module.stdout.startswith("specops ")


def test_readme_first_command_doctor_local_passes(installed: Path) -> None:
    """`python3 -m pip install . && specops doctor --local` on a machine without GPUs or torch exits 0."""
    result = subprocess.run(
        [str(installed / "bin" / "specops"), "doctor", "--local"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[✓] python.interpreter" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].endswith("checks passed on 1 host")
