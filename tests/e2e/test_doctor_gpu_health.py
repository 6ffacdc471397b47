"""`specops doctor HOST` on a real test host (systemd + OpenSSH) whose nvidia-smi replays one recorded GPU state
at a time (tests/testbed/gpu: real outputs and field lists), with a real fabric manager unit in the state the
scenario recorded.

One host serves every case: the nvidia-smi double is installed once, and each case only names another scenario
(and sets the fabric manager unit). What is asserted is what the operator sees: the check's line, its fix, the
exit code, and the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.testbed import drift
from tests.testbed.testhost import TestHost
from tests.unit.clirun import CliResult, run_cli

pytestmark = pytest.mark.e2e

ALIAS = "gpu-health"
Doctor = Callable[..., CliResult]
HEALTH = {"gpu.nvml", "gpu.driver", "gpu.count", "gpu.fabric", "gpu.ecc", "gpu.recovery_action", "gpu.mig",
          "gpu.compute_mode", "gpu.persistence", "gpu.clocks", "gpu.pcie"}  # fmt: skip


@pytest.fixture(scope="module")
def gpu_host(module_testhost: TestHost) -> Iterator[TestHost]:
    """The shared host with the nvidia-smi double and its recordings installed."""
    drift.install_nvidia_smi(module_testhost, "h200x8-590-nvswitch")
    yield module_testhost


@pytest.fixture
def doctor(
    gpu_host: TestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Doctor:
    """`specops doctor gpu-health --only gpu ARGS` with the host playing a scenario (8 GPUs configured)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(gpu_host.ssh_config_block(ALIAS))
    (tmp_path / "specops.toml").write_text(
        f'[hosts.{ALIAS}]\nssh = "{ALIAS}"\npython = "/usr/bin/python3"\nmodel_path = "/models/none"\n'
        'gpus = "0,1,2,3,4,5,6,7"\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    playing: list[str] = []

    def run(scenario: str, *args: str) -> CliResult:
        if playing[-1:] != [scenario]:
            drift.play_nvidia_smi_scenario(gpu_host, scenario)
            playing.append(scenario)
        return run_cli(capsys, "doctor", ALIAS, "--only", "gpu", *args)

    return run


def _checks(result: CliResult) -> dict[str, dict[str, Any]]:
    """The GPU checks this file is about (gpu.arch_vs_cuda and gpu.memory_free also match `--only gpu`)."""
    checks = json.loads(result.out)["hosts"][ALIAS]["checks"]
    return {check["id"]: check for check in checks if check["id"] in HEALTH}


def _problems(result: CliResult) -> dict[str, str]:
    return {i: c["status"] for i, c in _checks(result).items() if c["status"] not in ("pass", "skip")}


def test_the_healthy_8_gpu_nvswitch_host_shows_no_hardware_warning(doctor: Doctor) -> None:
    result = doctor("h200x8-590-nvswitch", "--json")
    assert result.code == 0, result.out + result.err
    checks = _checks(result)
    assert {i: c["status"] for i, c in checks.items() if c["status"] != "pass"} == {}
    assert checks["gpu.fabric"]["summary"] == (
        "NVSwitch fabric Completed, Success on 8 GPU(s) (nvidia-fabricmanager.service: active)"
    )
    text = doctor("h200x8-590-nvswitch")
    assert "[!]" not in text.out and "[✗]" not in text.out, text.out


@pytest.mark.parametrize(
    ("scenario", "check_id", "line", "fix"),
    [
        ("h100x8-remap-failure", "gpu.ecc", "GPU 5 (00000000:AB:00.0): a row remap failed", "nvidia-smi -r -i 5"),
        ("h100x8-ecc-volatile", "gpu.ecc", "GPU 1 (00000000:2A:00.0): 1 uncorrected ECC error(s) since the driver",
         "if it returns, RMA it"),
        ("h100x8-recovery-reset", "gpu.recovery_action",
         "GPU 6 (00000000:BA:00.0): the driver asks for recovery action Reset", "nvidia-smi -r -i 6"),
        ("h200x8-fabric-in-progress", "gpu.fabric",
         "In Progress, N/A (nvidia-fabricmanager.service: failed); CUDA will fail with error 802",
         "systemctl enable --now nvidia-fabricmanager"),
        ("h100x8-mig", "gpu.mig", "GPU 0,1,2,3,4,5,6,7 has MIG enabled", "nvidia-smi -i 0 -mig 0"),
        ("h100x8-compute-prohibited", "gpu.compute_mode", "is in compute mode Prohibited", "nvidia-smi -i 0 -c DEFAULT"),
    ],
)  # fmt: skip
def test_each_hardware_fault_fails_the_doctor_with_its_fix(
    doctor: Doctor, scenario: str, check_id: str, line: str, fix: str
) -> None:
    result = doctor(scenario)
    assert result.code == 1, result.out + result.err
    assert f"[✗] {check_id}" in result.out and line in result.out, result.out
    assert fix in result.out
    assert _problems(doctor(scenario, "--json")) == {check_id: "fail"}


@pytest.mark.parametrize(
    ("scenario", "check_id", "line"),
    [
        ("h100x8-remap-pending", "gpu.ecc", "a row remap is pending on GPU 2: work goes on, a GPU reset is due"),
        ("h100x8-ecc-aggregate", "gpu.ecc", "GPU 1 had uncorrected ECC errors before the driver loaded"),
        ("h100x8-exclusive-process", "gpu.compute_mode", "is in compute mode Exclusive_Process"),
        ("h100x8-hw-slowdown", "gpu.clocks", "GPU 3 (00000000:5D:00.0): hw_slowdown, hw_power_brake_slowdown active"),
    ],
)  # fmt: skip
def test_each_degradation_warns_and_the_doctor_still_passes(
    doctor: Doctor, scenario: str, check_id: str, line: str
) -> None:
    result = doctor(scenario)
    assert result.code == 0, result.out + result.err
    assert f"[!] {check_id}" in result.out and line in result.out, result.out
    assert "fix:" in result.out
    assert doctor(scenario, "--strict").code == 1


def test_a_lost_gpu_fails_the_count_naming_its_bus_id(doctor: Doctor) -> None:
    result = doctor("h100x8-gpu-lost", "--json")
    assert result.code == 1, result.out + result.err
    count = _checks(result)["gpu.count"]
    assert count["status"] == "fail"
    assert count["summary"] == "a GPU is lost: GPU 0000:5D:00.0 (GPU is lost. Reboot the system to recover this GPU)"
    assert "reboot" in count["hint"]
    assert [i for i, c in _checks(result).items() if c["status"] == "fail"] == ["gpu.count"]


def test_the_535_driver_skips_what_it_cannot_report_and_fails_nothing(doctor: Doctor) -> None:
    result = doctor("h100x8-535-old-fields", "--json")
    assert result.code == 0, result.out + result.err
    checks = _checks(result)
    assert {i: c["summary"] for i, c in checks.items() if c["status"] == "skip"} == {
        "gpu.ecc": "driver 535.129.03 does not report remapped_rows.pending, remapped_rows.failure",
        "gpu.recovery_action": "driver 535.129.03 does not report gpu_recovery_action",
    }
    assert _problems(result) == {}


def test_the_nvml_mismatch_is_one_fail_with_the_fix_not_a_crash(doctor: Doctor) -> None:
    result = doctor("nvml-mismatch")
    assert result.code == 1, result.out + result.err  # a FAIL, not 70 (internal error)
    assert "[✗] gpu.nvml" in result.out and "NVML driver/library version mismatch" in result.out, result.out
    assert "apt-mark hold" in result.out and "reboot" in result.out
    assert "Traceback" not in result.out + result.err
    checks = _checks(doctor("nvml-mismatch", "--json"))
    assert [i for i, c in checks.items() if c["status"] == "fail"] == ["gpu.nvml"]
    assert checks["gpu.driver"]["summary"] == "nvidia-smi cannot talk to the driver: see gpu.nvml"


def test_a_configured_gpu_the_host_lacks_fails_the_count(doctor: Doctor) -> None:
    result = doctor("l40sx4-persistence-off")
    assert result.code == 1
    assert "[✗] gpu.count" in result.out, result.out
    assert "hosts.gpu-health.gpus names GPU 4, 5, 6, 7 but nvidia-smi lists only 4" in result.out
    assert "[!] gpu.persistence" in result.out and "nvidia-persistenced" in result.out
