"""The GPU health checks on what the real probe reads from the nvidia-smi double, each fault as the user sees it.

Each case is a recorded 8-GPU scenario of the double with one GPU (or all) changed the way a real fault reads,
run through gather_nvidia (the probe), parse_nvidia and the registered check.
"""

from __future__ import annotations

from typing import Any

import pytest

from specops.doctor.model import CheckResult, Status
from specops.doctor.registry import all_checks, run_checks
from tests.unit.doctor.factory import context, healthy_facts, run
from tests.unit.doctor.gpu_scenes import probe_nvidia

HEALTH_IDS = ["gpu.nvml", "gpu.count", "gpu.fabric", "gpu.ecc", "gpu.recovery_action", "gpu.mig",
              "gpu.compute_mode", "gpu.persistence", "gpu.clocks", "gpu.pcie"]  # fmt: skip


def _results(scenario: str = "h100x8-570", gpus: str | None = None, **changes: Any) -> dict[str, CheckResult]:
    facts = healthy_facts(nvidia=probe_nvidia(scenario, **changes))
    host = context().host
    if host is not None and gpus is not None:
        host = host.model_copy(update={"gpus": gpus})
    ctx = context(facts, host=host)
    return {r.id: r for r in run_checks(ctx, [s for s in all_checks() if s.id in HEALTH_IDS])}


def _one(check_id: str, gpu: str = "3", **values: str) -> CheckResult:
    return _results(health={gpu: values})[check_id]


def test_a_healthy_8_gpu_host_passes_every_health_check() -> None:
    results = _results(gpus="0,1,2,3,4,5,6,7")
    assert {i: r.status for i, r in results.items() if r.status is not Status.PASS} == {}
    assert results["gpu.count"].summary == "8 GPU(s) listed, as hosts.gpu-one.gpus expects"


@pytest.mark.parametrize(
    ("check_id", "values", "summary", "hint"),
    [
        ("gpu.ecc", {"remapped_rows.failure": "Yes"}, "GPU 3 (00000000:5D:00.0): a row remap failed",
         "reset the GPU (`nvidia-smi -r -i 3`"),
        ("gpu.ecc", {"ecc.errors.uncorrected.volatile.total": "2"},
         "GPU 3 (00000000:5D:00.0): 2 uncorrected ECC error(s) since the driver loaded", "if it returns, RMA it"),
        ("gpu.recovery_action", {"gpu_recovery_action": "Reset"},
         "GPU 3 (00000000:5D:00.0): the driver asks for recovery action Reset", "the driver's action is 'Reset'"),
        ("gpu.mig", {"mig.mode.current": "Enabled"},
         "GPU 3 has MIG enabled: a process sees one MIG slice, not the whole GPU", "`nvidia-smi -i 3 -mig 0`"),
        ("gpu.compute_mode", {"compute_mode": "Prohibited"},
         "GPU 3 is in compute mode Prohibited: CUDA says devices busy or unavailable", "`nvidia-smi -i 3 -c DEFAULT`"),
    ],
)  # fmt: skip
def test_each_fault_fails_naming_the_gpu_and_the_fix(
    check_id: str, values: dict[str, str], summary: str, hint: str
) -> None:
    result = _one(check_id, **values)
    assert (result.status, result.summary) == (Status.FAIL, summary)
    assert hint in result.hint
    assert any(line.startswith("GPU 3 (00000000:5D:00.0)") for line in result.evidence)


@pytest.mark.parametrize(
    ("check_id", "values", "summary"),
    [
        ("gpu.ecc", {"remapped_rows.pending": "Yes"},
         "a row remap is pending on GPU 3: work goes on, a GPU reset is due"),
        ("gpu.ecc", {"ecc.errors.uncorrected.aggregate.total": "4"},
         "GPU 3 had uncorrected ECC errors before the driver loaded (none since)"),
        ("gpu.compute_mode", {"compute_mode": "Exclusive_Process"},
         "GPU 3 is in compute mode Exclusive_Process: a second process cannot use it"),
        ("gpu.persistence", {"persistence_mode": "Disabled"},
         "GPU 3 has persistence mode off: each start reloads the driver"),
        ("gpu.clocks", {"clocks_event_reasons.hw_thermal_slowdown": "Active"},
         "GPU 3 (00000000:5D:00.0): hw_thermal_slowdown active: the GPU runs below its clocks"),
        ("gpu.clocks", {"clocks_event_reasons.hw_power_brake_slowdown": "Active"},
         "GPU 3 (00000000:5D:00.0): hw_power_brake_slowdown active: the GPU runs below its clocks"),
        ("gpu.pcie", {"pcie.link.width.current": "4", "pcie.link.width.max": "8"},
         "GPU 3 (00000000:5D:00.0): PCIe link x4 of x8: host copies run slower"),
    ],
)  # fmt: skip
def test_each_degradation_warns_and_the_work_goes_on(check_id: str, values: dict[str, str], summary: str) -> None:
    result = _one(check_id, **values)
    assert (result.status, result.summary) == (Status.WARN, summary)
    assert result.hint and result.evidence


def test_a_fabric_not_completed_fails_with_802_and_the_fabric_manager_beside_it() -> None:
    results = _results(
        fabric_manager="inactive", health={"all": {"fabric.state": "In Progress", "fabric.status": "N/A"}}
    )
    fabric = results["gpu.fabric"]
    assert fabric.status is Status.FAIL
    assert fabric.summary == (
        "NVSwitch fabric not ready on GPU 0,1,2,3,4,5,6,7: In Progress, N/A (nvidia-fabricmanager.service: "
        "inactive); CUDA will fail with error 802 'system not yet initialized'"
    )
    assert "systemctl enable --now nvidia-fabricmanager" in fabric.hint and "570.124.06" in fabric.hint


def test_completed_is_not_enough_without_success() -> None:
    fabric = _one("gpu.fabric", gpu="0", **{"fabric.status": "Insufficient Resources"})
    assert fabric.status is Status.FAIL and "Completed, Insufficient Resources" in fabric.summary


def test_a_pcie_host_passes_the_fabric_check_with_no_fabric_manager() -> None:
    results = _results(fabric_manager="inactive", health={"all": {"fabric.state": "[N/A]", "fabric.status": "[N/A]"}})
    fabric = results["gpu.fabric"]
    assert (fabric.status, fabric.summary) == (Status.PASS, "no NVSwitch fabric (PCIe host): fabric state N/A")
    assert fabric.evidence == ["nvidia-fabricmanager.service: inactive"]


def test_not_available_values_are_values_not_faults() -> None:
    na = {"remapped_rows.pending": "[N/A]", "remapped_rows.failure": "[N/A]", "mig.mode.current": "[N/A]",
          "ecc.errors.uncorrected.volatile.total": "[N/A]", "ecc.errors.uncorrected.aggregate.total": "[N/A]",
          "gpu_recovery_action": "[Not Supported]", "pcie.link.width.current": "N/A"}  # fmt: skip
    results = _results(health={"all": na})
    assert results["gpu.ecc"].status is Status.SKIP and "N/A" in results["gpu.ecc"].summary
    assert {r.status for i, r in results.items() if i != "gpu.ecc"} == {Status.PASS}


def test_a_configured_gpu_nvidia_smi_does_not_list_fails_the_count() -> None:
    result = _results("h200x2-580", gpus="0,1,2,3")["gpu.count"]
    assert (result.status, result.summary) == (
        Status.FAIL,
        "hosts.gpu-one.gpus names GPU 2, 3 but nvidia-smi lists only 2",
    )
    assert "reboot" in result.hint


def test_an_err_value_is_a_lost_gpu() -> None:
    result = _one("gpu.count", gpu="6", **{"ecc.errors.uncorrected.volatile.total": "ERR!"})
    assert result.status is Status.FAIL
    assert result.summary == "a GPU is lost: GPU 6 (00000000:BA:00.0) reads ERR!"


def test_an_older_driver_skips_what_it_cannot_report_and_fails_nothing() -> None:
    missing = ["gpu_recovery_action", "fabric.state", "fabric.status", "clocks_event_reasons.hw_slowdown",
               "clocks_event_reasons.hw_thermal_slowdown", "clocks_event_reasons.hw_power_brake_slowdown",
               "clocks_event_reasons.sw_thermal_slowdown", "remapped_rows.pending"]  # fmt: skip
    results = _results(missing_fields=missing, health={"3": {"remapped_rows.failure": "Yes"}})
    skipped = {i: r.summary for i, r in results.items() if r.status is Status.SKIP}
    assert skipped == {
        "gpu.fabric": "driver 570.124.06 does not report fabric.state, fabric.status",
        "gpu.ecc": "driver 570.124.06 does not report remapped_rows.pending",
        "gpu.recovery_action": "driver 570.124.06 does not report gpu_recovery_action",
        "gpu.clocks": "driver 570.124.06 does not report clocks_event_reasons.hw_slowdown, "
        "clocks_event_reasons.hw_thermal_slowdown, clocks_event_reasons.hw_power_brake_slowdown",
    }
    assert {r.status for r in results.values()} == {Status.PASS, Status.SKIP}


def test_the_older_clock_names_are_read_when_the_newer_are_missing() -> None:
    events = [f"clocks_event_reasons.{name}" for name in
              ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")]  # fmt: skip
    facts = probe_nvidia("h100x8-570", missing_fields=events)
    assert facts.health is not None and "clocks_throttle_reasons.hw_slowdown" not in facts.health.queried
    # the double knows only the newer names, so an old driver reads nothing here and the check SKIPs, not FAILs
    assert run("gpu.clocks", context(healthy_facts(nvidia=facts))).status is Status.SKIP


def test_a_cpu_box_skips_every_health_check() -> None:
    facts = healthy_facts(nvidia=healthy_facts().nvidia.model_copy(update={"smi_found": False, "gpus": []}))
    results = run_checks(context(facts, host=None, profile=None, gpu_host=False), all_checks())
    assert {r.status for r in results if r.id in HEALTH_IDS} == {Status.SKIP}


def test_nvml_mismatch_is_one_fail_with_the_fix_and_the_rest_skip() -> None:
    from tests.unit.probe.test_parse_gpu_health import MISMATCH, PROC

    failing = {"found": True, "rc": 18, "out": MISMATCH, "err": "", "timed_out": False}
    raw = {"header": failing, "proc_version": PROC, "query_gpu": failing, "query_apps": failing,
           "list_gpus": failing, "known_fields": [], "health_fields": [], "query_health": None}  # fmt: skip
    from specops.probe.parse import parse_nvidia

    facts = healthy_facts(nvidia=parse_nvidia(raw))
    results = {r.id: r for r in run_checks(context(facts), all_checks())}
    nvml = results["gpu.nvml"]
    assert (nvml.status, nvml.summary) == (
        Status.FAIL,
        "NVML driver/library version mismatch: kernel module 580.126.09, library 590.48.01: "
        "nvidia-smi and CUDA cannot use the GPUs",
    )
    assert "reboot" in nvml.hint and "apt-mark hold" in nvml.hint and "dnf versionlock" in nvml.hint
    assert nvml.evidence[:2] == [
        "nvidia-smi (exit 18): Failed to initialize NVML: Driver/library version mismatch",
        "kernel module (/proc/driver/nvidia/version): 580.126.09",
    ]
    gpu_checks = {i: r for i, r in results.items() if i.startswith("gpu.") and i != "gpu.nvml"}
    assert [i for i, r in gpu_checks.items() if r.status is Status.FAIL] == []
    for check_id in ["gpu.driver", *HEALTH_IDS[1:]]:
        assert results[check_id].summary == "nvidia-smi cannot talk to the driver: see gpu.nvml", check_id


def test_a_driver_that_is_not_loaded_fails_once_in_gpu_driver_and_the_health_checks_skip() -> None:
    results = {r.id: r for r in run_checks(context(healthy_facts(nvidia=probe_nvidia("no-driver"))), all_checks())}
    assert results["gpu.driver"].status is Status.FAIL
    assert {results[i].summary for i in HEALTH_IDS[1:]} == {"nvidia-smi failed (see gpu.driver)"}
    assert results["gpu.nvml"].summary == "nvidia-smi failed, but not with a version mismatch (see gpu.driver)"


def test_local_doctor_expects_the_gpus_cuda_visible_devices_names() -> None:
    facts = healthy_facts(nvidia=probe_nvidia("h200x2-580"), env={"CUDA_VISIBLE_DEVICES": "0,1,2"})
    result = run("gpu.count", context(facts, host=None, profile=None))
    assert (result.status, result.summary) == (
        Status.FAIL,
        "CUDA_VISIBLE_DEVICES names GPU 2 but nvidia-smi lists only 2",
    )
