"""The operator-side parser of the probe's GPU health answers: columns by the fields the probe asked for, N/A as a
value, lost GPUs, ERR!, and the NVML driver/library mismatch (nvidia-smi exit 18)."""

from __future__ import annotations

from typing import Any

from specops.probe.parse import parse_nvidia
from specops.probe.parse_gpu import lost_gpus, parse_health_csv

MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 590.48.01\n"
PROC = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.126.09  Release Build  (dvs-builder@U22)\n"


def _command(out: str = "", rc: int = 0, err: str = "") -> dict[str, Any]:
    return {"found": True, "rc": rc, "out": out, "err": err, "timed_out": False}


def test_columns_follow_the_fields_the_probe_asked_not_their_count() -> None:
    fields = ["index", "pci.bus_id", "remapped_rows.pending", "compute_mode", "clocks_throttle_reasons.hw_slowdown"]
    (gpu,) = parse_health_csv(fields, "2, 00000000:3A:00.0, Yes, Exclusive_Process, Active\n")
    assert (gpu.index, gpu.bus_id, gpu.remap_pending, gpu.compute_mode) == (
        2,
        "00000000:3A:00.0",
        True,
        "Exclusive_Process",
    )
    assert gpu.clock_events == {"hw_slowdown": True}
    assert gpu.label == "GPU 2 (00000000:3A:00.0)"


def test_not_available_is_a_value_and_err_marks_the_field() -> None:
    fields = ["index", "pci.bus_id", "fabric.state", "mig.mode.current", "ecc.errors.uncorrected.volatile.total"]
    (gpu,) = parse_health_csv(fields, "0, 00000000:18:00.0, [N/A], [Not Supported], ERR!\n")
    assert (gpu.fabric_state, gpu.mig_current, gpu.ecc_volatile_uncorrected) == (None, None, None)
    assert gpu.err_fields == ["ecc.errors.uncorrected.volatile.total"]


def test_a_lost_gpu_is_named_by_its_bus_id_once() -> None:
    text = "Unable to determine the device handle for GPU 00000000:5D:00.0: GPU is lost.  Reboot the system to recover this GPU\n"
    lost = lost_gpus(_command(err=text, rc=15), _command(out="GPU 0: x\n" + text))
    assert [(g.bus_id, g.reason) for g in lost] == [
        ("00000000:5D:00.0", "GPU is lost.  Reboot the system to recover this GPU")
    ]


def test_exit_18_is_the_nvml_mismatch_with_both_versions() -> None:
    failing = _command(out=MISMATCH, rc=18)
    raw = {"header": failing, "proc_version": PROC, "query_gpu": failing, "query_apps": failing,
           "list_gpus": failing, "fabric_manager": _command("active\n"), "known_fields": [],
           "help_query": failing, "query_health": None, "health_fields": []}  # fmt: skip
    facts = parse_nvidia(raw)
    assert (facts.nvml_mismatch, facts.smi_exit, facts.nvml_library_version) == (True, 18, "590.48.01")
    assert facts.smi_error == "Failed to initialize NVML: Driver/library version mismatch"
    assert facts.driver_version == "580.126.09" and facts.gpus == []
    assert facts.health is not None and facts.health.queried == [] and facts.health.listed == 0


def test_a_probe_without_health_keys_gives_no_health_facts() -> None:
    raw = {"header": _command("Driver Version: 570.124.06    CUDA Version: 12.8"), "proc_version": PROC}
    assert parse_nvidia(raw).health is None
