"""Pure parsers of nvidia-smi's health answers: the health CSV, `-L`, lost GPUs, the NVML mismatch.

Why the probe sends the exact list of fields it asked for (`health_fields`): the columns depend on the driver
(one unknown field fails a real query, so the probe leaves those out), and guessing them from a count would
shift every value by one when a driver lacks a field.
"""

from __future__ import annotations

import re
from typing import Any

from specops.probe.facts_gpu import CLOCK_PREFIXES, GpuHealth, LostGpu, NvidiaHealth

Raw = dict[str, Any]
NVML_MISMATCH_EXIT = 18  # NVML_ERROR_LIB_RM_VERSION_MISMATCH
MISMATCH_TEXT = "Driver/library version mismatch"
_NOT_AVAILABLE = {"", "[n/a]", "n/a", "[not supported]", "not supported"}
_ERROR = {"err!", "[unknown error]", "unknown error", "[gpu is lost]"}
_LOST_RE = re.compile(r"Unable to determine the device handle for (?:GPU\s*)?([0-9A-Fa-f]+:[0-9A-Fa-f:.]+):\s*(.+)")
_LISTED_RE = re.compile(r"^GPU \d+: ", re.MULTILINE)
_LIBRARY_RE = re.compile(r"NVML library version:\s*([0-9][0-9.]*)")
# query field -> GpuHealth attribute, by kind
_FLAGS = {"remapped_rows.pending": "remap_pending", "remapped_rows.failure": "remap_failure"}
_INTS = {
    "ecc.errors.uncorrected.volatile.total": "ecc_volatile_uncorrected",
    "ecc.errors.uncorrected.aggregate.total": "ecc_aggregate_uncorrected",
    "pcie.link.width.current": "pcie_width_current",
    "pcie.link.width.max": "pcie_width_max",
}
_TEXTS = {
    "pci.bus_id": "bus_id",
    "gpu_recovery_action": "recovery_action",
    "mig.mode.current": "mig_current",
    "compute_mode": "compute_mode",
    "persistence_mode": "persistence",
    "fabric.state": "fabric_state",
    "fabric.status": "fabric_status",
}


def _text(command: Raw | None) -> str:
    return str((command or {}).get("out") or "") + "\n" + str((command or {}).get("err") or "")


def is_nvml_mismatch(header: Raw) -> bool:
    """nvidia-smi exit 18, or its text: the kernel module and the user-space NVML are different versions."""
    return header.get("rc") == NVML_MISMATCH_EXIT or MISMATCH_TEXT in _text(header)


def nvml_library_version(header: Raw) -> str | None:
    """'550.144' from the 'NVML library version: 550.144' line newer nvidia-smi prints after a mismatch."""
    match = _LIBRARY_RE.search(_text(header))
    return match.group(1) if match else None


def _cell(text: str) -> str | None:
    value = text.strip()
    return None if value.lower() in _NOT_AVAILABLE else value


def _row(fields: list[str], cells: list[str]) -> GpuHealth:
    values: dict[str, Any] = {"clock_events": {}, "err_fields": []}
    for name, raw in zip(fields, cells, strict=True):
        value = _cell(raw)
        if value is not None and value.lower() in _ERROR:
            values["err_fields"].append(name)
            value = None
        if name == "index":
            values["index"] = int(value) if value and value.isdigit() else None
        elif name in _FLAGS:
            values[_FLAGS[name]] = None if value is None else value.lower() == "yes"
        elif name in _INTS:
            values[_INTS[name]] = int(value) if value and value.isdigit() else None
        elif name in _TEXTS:
            values[_TEXTS[name]] = value or ("" if name == "pci.bus_id" else None)
        elif name.startswith(CLOCK_PREFIXES) and value is not None:
            values["clock_events"][name.split(".", 1)[1]] = value.lower() == "active"
    return GpuHealth(**values)


def parse_health_csv(fields: list[str], text: str) -> list[GpuHealth]:
    """One GpuHealth per CSV line whose cell count matches the fields asked (noheader, nounits)."""
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if fields and len(cells) == len(fields):
            rows.append(_row(fields, cells))
    return rows


def lost_gpus(*commands: Raw | None) -> list[LostGpu]:
    """'Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost' lines, once per bus id."""
    found: dict[str, LostGpu] = {}
    for command in commands:
        for match in _LOST_RE.finditer(_text(command)):
            bus = match.group(1).rstrip(".:")
            found.setdefault(bus.upper(), LostGpu(bus_id=bus, reason=match.group(2).strip()))
    return list(found.values())


def _first_line(command: Raw) -> str:
    lines = [line.strip() for line in _text(command).splitlines() if line.strip()]
    return lines[0] if lines else f"nvidia-smi exited {command.get('rc')}"


def parse_health(data: Raw) -> NvidiaHealth | None:
    """NvidiaHealth from the probe's nvidia section; None from a probe that did not read health."""
    if "known_fields" not in data:
        return None
    fields = [str(name) for name in data.get("health_fields") or []]
    query: Raw = data.get("query_health") or {}
    listed: Raw = data.get("list_gpus") or {}
    manager: Raw = data.get("fabric_manager") or {}
    return NvidiaHealth(
        queried=fields,
        gpus=parse_health_csv(fields, str(query.get("out") or "")),
        error=_first_line(query) if query and query.get("rc") != 0 else None,
        listed=len(_LISTED_RE.findall(str(listed.get("out") or ""))) if listed.get("rc") is not None else None,
        lost=lost_gpus(listed, query, data.get("query_gpu")),
        fabric_manager=(str(manager.get("out") or "").strip() or None) if manager.get("found") else None,
    )
