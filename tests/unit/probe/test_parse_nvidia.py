"""nvidia-smi parsers on the outputs of the recorded scenarios (the testbed's nvidia-smi double)."""

from __future__ import annotations

from specops.probe.parse import parse_nvidia
from specops.probe.parse_text import (
    parse_apps_query,
    parse_gpu_query,
    parse_proc_driver_version,
    parse_smi_header,
    proc_driver_number,
    smi_int,
    smi_value,
)
from specops.remote.probe.gpu import APPS_QUERY, CSV_FORMAT, GPU_QUERY
from tests.testbed import gpu
from tests.unit.probe.conftest import smi_output


def _raw(scenario: str, rc: int = 0) -> dict[str, object]:
    def command(*args: str) -> dict[str, object]:
        return {"found": True, "rc": rc, "out": smi_output(scenario, *args), "err": "", "timed_out": False}

    return {
        "header": command(),
        "query_gpu": command(GPU_QUERY, CSV_FORMAT),
        "query_apps": command(APPS_QUERY, CSV_FORMAT),
        "proc_version": gpu.proc_version_text(scenario),
    }


def test_header_570_says_driver_and_max_cuda() -> None:
    assert parse_smi_header(smi_output("h100x8-570")) == ("570.124.06", "12.8")


def test_header_580_says_cuda_13() -> None:
    assert parse_smi_header(smi_output("h200x2-580")) == ("580.82.07", "13.0")


def test_eight_gpu_query() -> None:
    gpus = parse_gpu_query(smi_output("h100x8-570", GPU_QUERY, CSV_FORMAT))
    assert [g.index for g in gpus] == list(range(8))
    first = gpus[0]
    assert (first.name, first.driver_version, first.compute_cap) == ("NVIDIA H100 80GB HBM3", "570.124.06", "9.0")
    assert (first.memory_total_mib, first.memory_used_mib) == (81559, 0)
    assert first.uuid == "GPU-5f1c0000-8e2b-4c7d-9a31-1f2e3d4c5b00"


def test_busy_gpu_shows_memory_and_the_process() -> None:
    facts = parse_nvidia(_raw("h100x2-570-busy"))
    assert [g.memory_used_mib for g in facts.gpus] == [61442, 0]
    assert len(facts.processes) == 1
    holder = facts.processes[0]
    assert (holder.pid, holder.process_name, holder.used_memory_mib) == (
        48213,
        "/opt/other-team/venv/bin/python3",
        61442,
    )
    assert holder.gpu_uuid == facts.gpus[0].uuid


def test_idle_scenario_has_no_processes() -> None:
    assert parse_apps_query(smi_output("h100x8-580", APPS_QUERY, CSV_FORMAT)) == []


def test_v100_compute_cap() -> None:
    facts = parse_nvidia(_raw("v100x1-580"))
    assert [(g.name, g.compute_cap) for g in facts.gpus] == [("Tesla V100-SXM2-32GB", "7.0")]
    assert (facts.driver_version, facts.cuda_version) == ("580.65.06", "13.0")


def test_proc_version_line_and_number() -> None:
    line = parse_proc_driver_version(gpu.proc_version_text("h100x8-570"))
    assert line is not None and line.startswith("NVRM version: NVIDIA UNIX x86_64 Kernel Module")
    assert proc_driver_number(line) == "570.124.06"
    assert parse_nvidia(_raw("h100x8-570")).proc_driver_version == line


def test_no_driver_scenario_is_an_smi_error_without_gpus() -> None:
    raw = {
        "header": {"found": True, "rc": 9, "out": smi_output("no-driver"), "err": "", "timed_out": False},
        "query_gpu": {"found": True, "rc": 9, "out": smi_output("no-driver"), "err": "", "timed_out": False},
        "query_apps": {"found": True, "rc": 9, "out": "", "err": "", "timed_out": False},
        "proc_version": gpu.proc_version_text("no-driver"),
    }
    facts = parse_nvidia(raw)
    assert facts.smi_found and facts.gpus == [] and facts.driver_version is None
    assert facts.smi_error is not None and "couldn't communicate with the NVIDIA driver" in facts.smi_error


def test_smi_missing_falls_back_to_proc() -> None:
    raw = {"header": {"found": False}, "proc_version": gpu.proc_version_text("h200x2-580")}
    facts = parse_nvidia(raw)
    assert not facts.smi_found and facts.driver_version == "580.82.07"


def test_na_cells_become_none() -> None:
    text = "0, NVIDIA A10G, 535.104.05, [N/A], 23028, [Not Supported], GPU-abc\n"
    [row] = parse_gpu_query(text)
    assert (row.compute_cap, row.memory_total_mib, row.memory_used_mib) == (None, 23028, None)
    assert smi_value(" [N/A] ") is None and smi_int("[Not Supported]") is None and smi_int("81559 MiB") == 81559


def test_process_name_with_comma_is_kept_whole() -> None:
    [proc] = parse_apps_query("77, python3 -m x, y, 100, GPU-1\n")
    assert (proc.pid, proc.process_name, proc.used_memory_mib, proc.gpu_uuid) == (77, "python3 -m x, y", 100, "GPU-1")
