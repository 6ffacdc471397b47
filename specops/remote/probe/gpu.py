"""NVIDIA observations as RAW text: the nvidia-smi header, CSV queries, `-L`, /proc/driver/nvidia/version.

Why raw: the formats drift between driver branches, so interpretation lives in the operator-side parser
(specops/probe/parse.py), where recorded outputs can pin it in unit tests.

The health query asks only for fields this driver knows: one unknown field makes a real nvidia-smi fail the
whole query ("Field ... is not a valid field to query."), and field names changed across driver branches
(clocks_throttle_reasons.* became clocks_event_reasons.*). The known names come from
`nvidia-smi --help-query-gpu`, read once per host and driver version and kept in a small cache file.
"""

from __future__ import annotations

import os
import re
from typing import Any

from specops.remote.probe.common import map_in_threads, read_text, run_command

GPU_QUERY = "--query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used,uuid"
APPS_QUERY = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"
CSV_FORMAT = "--format=csv,noheader,nounits"
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
FIELDS_CACHE_DIR = "~/.cache/specops"
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager.service"

# Hardware-health fields, in the order asked; those the driver lacks are left out of the query.
HEALTH_FIELDS = (
    "index",
    "pci.bus_id",
    "remapped_rows.pending",
    "remapped_rows.failure",
    "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.total",
    "gpu_recovery_action",
    "mig.mode.current",
    "compute_mode",
    "persistence_mode",
    "fabric.state",
    "fabric.status",
    "clocks_event_reasons.hw_slowdown",
    "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown",
    "clocks_throttle_reasons.hw_slowdown",
    "clocks_throttle_reasons.hw_thermal_slowdown",
    "clocks_throttle_reasons.hw_power_brake_slowdown",
    "clocks_throttle_reasons.sw_thermal_slowdown",
    "pcie.link.width.current",
    "pcie.link.width.max",
)
_EVENT_PREFIX = "clocks_event_reasons."
_THROTTLE_PREFIX = "clocks_throttle_reasons."
_DRIVER_RE = re.compile(r"Kernel Module(?: for [\w-]+)?\s+(\d+(?:\.\d+)+)")
_QUOTED_RE = re.compile(r'"([a-z0-9_.]+)"')


def help_fields(text: str) -> list[str]:
    """Field names from `--help-query-gpu`: each entry's first line lists its quoted names ("a" or "b")."""
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith('"'):
            names.extend(_QUOTED_RE.findall(line))
    return names


def health_fields(known: set[str]) -> list[str]:
    """The health fields this driver knows, in HEALTH_FIELDS order; the older clock names only as fallback.

    Fewer than three (index and bus id alone) is no health query at all: []."""
    has_events = any(name.startswith(_EVENT_PREFIX) for name in known)
    chosen = [
        name for name in HEALTH_FIELDS if name in known and not (has_events and name.startswith(_THROTTLE_PREFIX))
    ]
    return chosen if len(chosen) > 2 else []


def health_query(known: set[str]) -> str | None:
    """The --query-gpu argument for health_fields(known), or None when there is nothing to ask."""
    chosen = health_fields(known)
    return "--query-gpu=" + ",".join(chosen) if chosen else None


def _cache_path(driver: str) -> str:
    folder = os.path.expanduser(FIELDS_CACHE_DIR)
    return os.path.join(folder, f"nvidia-query-gpu-fields-{driver}.txt")


def known_fields(driver: str | None) -> tuple[list[str], dict[str, Any] | None]:
    """The driver's field names: from the cache for this driver version, else `--help-query-gpu` (then cached)."""
    path = _cache_path(driver) if driver else None
    cached = read_text(path, 200000) if path else None
    if cached:
        return cached.split(), None
    helped = run_command(["nvidia-smi", "--help-query-gpu"])
    names = help_fields(helped.get("out") or "") if helped.get("rc") == 0 else []
    if names and path:
        _write_cache(path, names)
    return names, helped


def _write_cache(path: str, names: list[str]) -> None:
    """Best effort: a read-only home only costs one more --help-query-gpu next time."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            handle.write("\n".join(names) + "\n")
        os.replace(path + ".tmp", path)
    except OSError:
        pass


def gather_nvidia(request: dict[str, Any]) -> dict[str, Any]:
    """The nvidia-smi calls run side by side: each can take a second on a driver without persistence mode."""
    proc_path = request.get("proc_driver_version_path") or PROC_DRIVER_VERSION
    proc_text = read_text(proc_path, 10000)
    match = _DRIVER_RE.search(proc_text or "")
    names, helped = known_fields(match.group(1) if match else None)
    fields = health_fields(set(names))
    query = "--query-gpu=" + ",".join(fields) if fields else None
    argvs = [
        ["nvidia-smi"],
        ["nvidia-smi", GPU_QUERY, CSV_FORMAT],
        ["nvidia-smi", APPS_QUERY, CSV_FORMAT],
        ["nvidia-smi", "-L"],
        ["systemctl", "is-active", FABRIC_MANAGER_UNIT],
    ]
    if query:
        argvs.append(["nvidia-smi", query, CSV_FORMAT])
    results = map_in_threads(run_command, argvs, workers=len(argvs))
    header = results[0]
    facts: dict[str, Any] = {"header": header, "proc_version": proc_text}
    if header["found"]:
        facts.update(query_gpu=results[1], query_apps=results[2], list_gpus=results[3])
        facts.update(fabric_manager=results[4], known_fields=names, help_query=helped)
        facts["query_health"] = results[5] if query else None
        facts["health_fields"] = fields  # the exact columns of query_health, so the parser never guesses
    return facts
