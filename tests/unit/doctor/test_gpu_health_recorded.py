"""The GPU health checks on the double's recorded scenarios (tests/testbed/gpu: real nvidia-smi outputs and
field lists), each through the real probe and parser: the verdict and the line the operator reads."""

from __future__ import annotations

import pytest

from specops.doctor.model import CheckResult, Status
from specops.doctor.registry import all_checks, run_checks
from tests.unit.doctor.factory import context, healthy_facts
from tests.unit.doctor.gpu_scenes import probe_nvidia
from tests.unit.doctor.test_gpu_health import HEALTH_IDS


def _gpu_results(scenario: str, gpus: str | None = None) -> dict[str, CheckResult]:
    base = context()
    host = base.host.model_copy(update={"gpus": gpus}) if base.host is not None else None
    ctx = context(healthy_facts(nvidia=probe_nvidia(scenario)), host=host)
    return {r.id: r for r in run_checks(ctx, [s for s in all_checks() if s.id.startswith("gpu.")])}


def test_the_healthy_8_gpu_nvswitch_host_590_has_no_hardware_warning_at_all() -> None:
    results = _gpu_results("h200x8-590-nvswitch", gpus="0,1,2,3,4,5,6,7")
    assert {i: r.status for i, r in results.items() if r.status is not Status.PASS} == {}
    assert results["gpu.fabric"].summary == (
        "NVSwitch fabric Completed, Success on 8 GPU(s) (nvidia-fabricmanager.service: active)"
    )
    assert "GPU 4 (00000000:83:00.0): fabric Completed, Success" in results["gpu.fabric"].evidence


@pytest.mark.parametrize(
    ("scenario", "check_id", "status", "summary"),
    [
        ("h100x8-gpu-lost", "gpu.count", Status.FAIL,
         "a GPU is lost: GPU 0000:5D:00.0 (GPU is lost. Reboot the system to recover this GPU)"),
        ("h100x8-mig", "gpu.mig", Status.FAIL,
         "GPU 0,1,2,3,4,5,6,7 has MIG enabled: a process sees one MIG slice, not the whole GPU"),
        ("h100x8-remap-pending", "gpu.ecc", Status.WARN,
         "a row remap is pending on GPU 2: work goes on, a GPU reset is due"),
        ("h100x8-remap-failure", "gpu.ecc", Status.FAIL, "GPU 5 (00000000:AB:00.0): a row remap failed"),
        ("h100x8-ecc-volatile", "gpu.ecc", Status.FAIL,
         "GPU 1 (00000000:2A:00.0): 1 uncorrected ECC error(s) since the driver loaded"),
        ("h100x8-ecc-aggregate", "gpu.ecc", Status.WARN,
         "GPU 1 had uncorrected ECC errors before the driver loaded (none since)"),
        ("h100x8-recovery-reset", "gpu.recovery_action", Status.FAIL,
         "GPU 6 (00000000:BA:00.0): the driver asks for recovery action Reset"),
        ("h200x8-fabric-in-progress", "gpu.fabric", Status.FAIL,
         "NVSwitch fabric not ready on GPU 0,1,2,3,4,5,6,7: In Progress, N/A (nvidia-fabricmanager.service: "
         "failed); CUDA will fail with error 802 'system not yet initialized'"),
        ("h200x8-fabric-insufficient", "gpu.fabric", Status.FAIL,
         "NVSwitch fabric not ready on GPU 0,1,2,3,4,5,6,7: Completed, Insufficient Resources "
         "(nvidia-fabricmanager.service: active); CUDA will fail with error 802 'system not yet initialized'"),
        ("l40sx4-persistence-off", "gpu.persistence", Status.WARN,
         "GPU 0,1,2,3 has persistence mode off: each start reloads the driver"),
        ("h100x8-compute-prohibited", "gpu.compute_mode", Status.FAIL,
         "GPU 0,1,2,3,4,5,6,7 is in compute mode Prohibited: CUDA says devices busy or unavailable"),
        ("h100x8-exclusive-process", "gpu.compute_mode", Status.WARN,
         "GPU 0,1,2,3,4,5,6,7 is in compute mode Exclusive_Process: a second process cannot use it"),
        ("rtx-x4-of-x8", "gpu.pcie", Status.WARN, "GPU 0 (00000000:01:00.0): PCIe link x4 of x8: host copies run slower"),
        ("h100x8-hw-slowdown", "gpu.clocks", Status.WARN,
         "GPU 3 (00000000:5D:00.0): hw_slowdown, hw_power_brake_slowdown active: the GPU runs below its clocks"),
    ],
)  # fmt: skip
def test_each_recorded_fault_is_one_verdict_naming_the_gpu(
    scenario: str, check_id: str, status: Status, summary: str
) -> None:
    results = _gpu_results(scenario)
    assert (results[check_id].status, results[check_id].summary) == (status, summary)
    assert results[check_id].hint and results[check_id].evidence
    others = {i: r.status for i, r in results.items() if i in HEALTH_IDS and i != check_id}
    assert Status.FAIL not in others.values() and Status.WARN not in others.values(), others


def test_a_lost_gpu_is_one_fail_in_gpu_count_not_a_driver_to_reinstall() -> None:
    results = _gpu_results("h100x8-gpu-lost")
    assert [i for i, r in results.items() if r.status is Status.FAIL] == ["gpu.count"]
    assert results["gpu.driver"].summary == "nvidia-smi fails because a GPU is lost: see gpu.count"
    assert results["gpu.nvml"].status is Status.PASS


def test_the_535_driver_skips_what_it_does_not_list_and_fails_nothing() -> None:
    results = _gpu_results("h100x8-535-old-fields")
    skipped = {i: r.summary for i, r in results.items() if r.status is Status.SKIP}
    assert skipped == {
        "gpu.ecc": "driver 535.129.03 does not report remapped_rows.pending, remapped_rows.failure",
        "gpu.recovery_action": "driver 535.129.03 does not report gpu_recovery_action",
    }
    assert {r.status for r in results.values()} <= {Status.PASS, Status.SKIP}


def test_the_recorded_nvml_mismatch_is_one_fail_with_both_versions() -> None:
    results = _gpu_results("nvml-mismatch")
    assert [i for i, r in results.items() if r.status is Status.FAIL] == ["gpu.nvml"]
    assert results["gpu.nvml"].summary == (
        "NVML driver/library version mismatch: kernel module 580.173.02, library 580.178: "
        "nvidia-smi and CUDA cannot use the GPUs"
    )
    assert (
        "nvidia-smi (exit 18): Failed to initialize NVML: Driver/library version mismatch"
        in results["gpu.nvml"].evidence
    )
