"""`specops doctor HOST` on a real test host (systemd + OpenSSH) whose nvidia-smi plays one GPU fault at a time.

One host serves every case: the nvidia-smi test double and its scenarios are installed once, and each case only
names another scenario. What is asserted is what the operator sees: the check's line, its fix, the exit code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.testbed import drift, gpu
from tests.testbed.testhost import TestHost
from tests.unit.clirun import CliResult, run_cli

pytestmark = pytest.mark.e2e

ALIAS = "gpu-health"
DATA = "/usr/local/lib/specops-testbed/gpu/scenarios.json"  # the double reads its scenarios beside its real path
FM_UNIT = "[Unit]\nDescription=stand-in for the NVIDIA fabric manager\n[Service]\nExecStart=/bin/sleep infinity\n"
# variations of a recorded 8-GPU scenario, each one fault the way nvidia-smi reports it
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "e2e-remap-failure": ("h100x8-570", {"health": {"2": {"remapped_rows.failure": "Yes"}}}),
    "e2e-remap-pending": ("h100x8-570", {"health": {"2": {"remapped_rows.pending": "Yes"}}}),
    "e2e-recovery-reset": ("h100x8-570", {"health": {"5": {"gpu_recovery_action": "Reset"}}}),
    "e2e-fabric-in-progress": ("h100x8-570", {"health": {"all": {"fabric.state": "In Progress", "fabric.status": "N/A"}}}),
    "e2e-mig": ("h100x8-570", {"health": {"0": {"mig.mode.current": "Enabled"}}}),
    "e2e-prohibited": ("h100x8-570", {"health": {"1": {"compute_mode": "Prohibited"}}}),
    "e2e-degraded": ("h100x8-570", {"health": {"4": {"persistence_mode": "Disabled", "compute_mode": "Exclusive_Process",
                     "clocks_event_reasons.hw_slowdown": "Active", "pcie.link.width.current": "4",
                     "pcie.link.width.max": "8", "ecc.errors.uncorrected.aggregate.total": "3"}}}),
    "e2e-old-driver": ("h100x8-570", {"missing_fields": ["gpu_recovery_action", "fabric.state", "fabric.status",
                       "clocks_event_reasons.hw_slowdown", "clocks_event_reasons.hw_thermal_slowdown",
                       "clocks_event_reasons.hw_power_brake_slowdown", "clocks_event_reasons.sw_thermal_slowdown"]}),
}  # fmt: skip
Doctor = Callable[..., CliResult]
HEALTH = {"gpu.nvml", "gpu.driver", "gpu.count", "gpu.fabric", "gpu.ecc", "gpu.recovery_action", "gpu.mig",
          "gpu.compute_mode", "gpu.persistence", "gpu.clocks", "gpu.pcie"}  # fmt: skip


@pytest.fixture(scope="module")
def gpu_host(module_testhost: TestHost) -> Iterator[TestHost]:
    """The shared host with the double, every variant scenario and a running stand-in fabric manager."""
    drift.install_nvidia_smi(module_testhost, "h100x8-570")
    scenarios = json.loads(gpu.SCENARIOS_JSON.read_text())
    for name, (base, changes) in VARIANTS.items():
        scenarios[name] = {**scenarios[base], **changes}
    module_testhost.write_file(DATA, json.dumps(scenarios).encode())
    module_testhost.write_file("/etc/systemd/system/nvidia-fabricmanager.service", FM_UNIT.encode())
    module_testhost.exec(["systemctl", "daemon-reload"])
    module_testhost.exec(["systemctl", "start", "nvidia-fabricmanager.service"])
    yield module_testhost


@pytest.fixture
def doctor(
    gpu_host: TestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Doctor:
    """`specops doctor gpu-health --only gpu ARGS` with the host playing a scenario."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(gpu_host.ssh_config_block(ALIAS))
    inventory = f'[hosts.{ALIAS}]\nssh = "{ALIAS}"\npython = "/usr/bin/python3"\nmodel_path = "/models/none"\ngpus = "0,1,2,3,4,5,6,7"\n'
    (tmp_path / "specops.toml").write_text(inventory)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)

    def run(scenario: str, *args: str) -> CliResult:
        gpu_host.write_file(gpu.SCENARIO_FILE, f"{scenario}\n".encode())
        return run_cli(capsys, "doctor", ALIAS, "--only", "gpu", *args)

    return run


def _checks(result: CliResult) -> dict[str, dict[str, Any]]:
    """The GPU checks this file is about (gpu.arch_vs_cuda and gpu.memory_free also match `--only gpu`)."""
    return {check["id"]: check for check in json.loads(result.out)["hosts"][ALIAS]["checks"] if check["id"] in HEALTH}


def _problems(result: CliResult) -> dict[str, str]:
    return {i: c["status"] for i, c in _checks(result).items() if c["status"] not in ("pass", "skip")}


def test_a_healthy_8_gpu_nvswitch_host_shows_no_hardware_warning(doctor: Doctor) -> None:
    result = doctor("h100x8-570", "--json")
    assert result.code == 0, result.out + result.err
    checks = _checks(result)
    assert {i: c["status"] for i, c in checks.items() if c["status"] != "pass"} == {}
    assert checks["gpu.fabric"]["summary"] == (
        "NVSwitch fabric Completed, Success on 8 GPU(s) (nvidia-fabricmanager.service: active)"
    )
    text = doctor("h100x8-570")
    assert "[!]" not in text.out and "[✗]" not in text.out, text.out


@pytest.mark.parametrize(
    ("scenario", "check_id", "line", "fix"),
    [
        ("e2e-remap-failure", "gpu.ecc", "GPU 2 (00000000:3A:00.0): a row remap failed", "nvidia-smi -r -i 2"),
        ("e2e-recovery-reset", "gpu.recovery_action",
         "GPU 5 (00000000:AB:00.0): the driver asks for recovery action Reset", "nvidia-smi -r -i 5"),
        ("e2e-fabric-in-progress", "gpu.fabric", "CUDA will fail with error 802", "systemctl enable --now nvidia-fabricmanager"),
        ("e2e-mig", "gpu.mig", "GPU 0 has MIG enabled", "nvidia-smi -i 0 -mig 0"),
        ("e2e-prohibited", "gpu.compute_mode", "GPU 1 is in compute mode Prohibited", "nvidia-smi -i 1 -c DEFAULT"),
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


def test_a_degraded_gpu_warns_and_the_doctor_passes(doctor: Doctor) -> None:
    result = doctor("e2e-degraded", "--json")
    assert result.code == 0, result.out + result.err
    assert _problems(result) == {
        "gpu.ecc": "warn",
        "gpu.compute_mode": "warn",
        "gpu.persistence": "warn",
        "gpu.clocks": "warn",
        "gpu.pcie": "warn",
    }
    text = doctor("e2e-degraded").out
    assert "[!] gpu.pcie" in text and "GPU 4 (00000000:9A:00.0): PCIe link x4 of x8" in text, text
    assert "GPU 4 has persistence mode off" in text and "nvidia-persistenced" in text


def test_a_pending_remap_warns_that_a_reset_is_due(doctor: Doctor) -> None:
    result = doctor("e2e-remap-pending")
    assert result.code == 0, result.out + result.err
    assert "[!] gpu.ecc" in result.out and "a row remap is pending on GPU 2" in result.out, result.out


def test_an_older_driver_skips_what_it_cannot_report_and_fails_nothing(doctor: Doctor) -> None:
    result = doctor("e2e-old-driver", "--json")
    assert result.code == 0, result.out + result.err
    checks = _checks(result)
    assert {i for i, c in checks.items() if c["status"] == "skip"} == {
        "gpu.fabric",
        "gpu.recovery_action",
        "gpu.clocks",
    }
    assert checks["gpu.recovery_action"]["summary"] == "driver 570.124.06 does not report gpu_recovery_action"
    assert _problems(result) == {}


def test_a_configured_gpu_the_host_lacks_fails_the_count(doctor: Doctor) -> None:
    result = doctor("h200x2-580")
    assert result.code == 1
    assert "[✗] gpu.count" in result.out, result.out
    assert "hosts.gpu-health.gpus names GPU 2, 3, 4, 5, 6, 7 but nvidia-smi lists only 2" in result.out
