"""`specops doctor --local` on a machine whose nvidia-smi fails with the NVML driver/library mismatch (exit 18).

nvidia-smi then lists no GPU, which used to make `--local` treat the machine as one without GPUs and skip every
GPU check; the mismatch proves an NVIDIA driver, so gpu.nvml must FAIL with its fix, and nothing may crash.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli

FAKE_SMI = """#!/bin/sh
# stand-in for nvidia-smi after a driver upgrade without a reboot: every call fails the same way
echo "Failed to initialize NVML: Driver/library version mismatch"
echo "NVML library version: 590.48.01"
exit 18
"""


def test_local_doctor_fails_gpu_nvml_with_the_fix_not_exit_70(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "nvidia-smi").write_text(FAKE_SMI)
    (folder / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, "doctor", "--local", "--json", "--only", "gpu")
    assert result.code == 1, result.out + result.err
    checks = {c["id"]: c for host in json.loads(result.out)["hosts"].values() for c in host["checks"]}
    assert checks["gpu.nvml"]["status"] == "fail"
    assert checks["gpu.nvml"]["summary"].startswith("NVML driver/library version mismatch")
    assert "apt-mark hold" in checks["gpu.nvml"]["hint"]
    assert (
        "nvidia-smi (exit 18): Failed to initialize NVML: Driver/library version mismatch"
        in checks["gpu.nvml"]["evidence"]
    )
    assert "NVML library (user space): 590.48.01" in checks["gpu.nvml"]["evidence"]
    assert checks["gpu.driver"]["summary"] == "nvidia-smi cannot talk to the driver: see gpu.nvml"
    assert [i for i, c in checks.items() if c["status"] == "fail"] == ["gpu.nvml"]
