"""Shared helpers for the probe's unit tests: a HostSpec, the nvidia-smi double on PATH, model fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from tests.testbed import gpu


def host_spec(python: str, **fields: object) -> HostSpec:
    values: dict[str, object] = {
        "name": "gpu-a",
        "ssh": "root@10.200.9.2",
        "python": python,
        "model_path": "/models/none",
    }
    values.update(fields)
    return HostSpec.model_validate(values)


@pytest.fixture(autouse=True)
def private_code_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe runs through the host's compiled-code cache ($XDG_CACHE_HOME/specops/host-code): each test
    keeps its own, never this machine's ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def smi_output(scenario: str, *args: str) -> str:
    """What the nvidia-smi test double prints for this scenario (the recorded formats of driver 570/580)."""
    import subprocess
    import sys

    env = {**os.environ, "SPECOPS_NVIDIA_SMI_SCENARIO": scenario}
    done = subprocess.run([sys.executable, str(gpu.NVIDIA_SMI), *args], capture_output=True, text=True, env=env)
    return done.stdout + done.stderr


@pytest.fixture
def smi_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """Put the nvidia-smi double first on PATH; call the returned function with a scenario name."""
    folder = tmp_path / "smi-bin"
    folder.mkdir()
    (folder / "nvidia-smi").symlink_to(gpu.NVIDIA_SMI)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ.get('PATH', '')}")

    def choose(scenario: str) -> None:
        monkeypatch.setenv("SPECOPS_NVIDIA_SMI_SCENARIO", scenario)

    return choose
