"""NVIDIA observations as RAW text: the nvidia-smi header, CSV queries, `-L`, /proc/driver/nvidia/version.

Why raw: the formats drift between driver branches, so interpretation lives in the operator-side parser
(specops/probe/parse.py), where recorded outputs can pin it in unit tests.

The health query asks only for fields this driver knows: one unknown field makes a real nvidia-smi fail the
whole query ("Field ... is not a valid field to query."), and field names changed across driver branches
(clocks_throttle_reasons.* became clocks_event_reasons.*). The known names come from
`nvidia-smi --help-query-gpu`, read once per host and driver version and kept in a small cache file.

The cache is keyed by the driver version in /proc/driver/nvidia/version; where that file is missing (a container
or namespace that shares the host's driver), by the identity of the nvidia-smi file PATH finds (resolved path,
device, inode, size, mtime), which a driver upgrade replaces. Without either key the list is read every time.
A cached list that the driver refuses ("is not a valid field to query") is dropped, so the next probe re-reads.
"""

from __future__ import annotations

import contextlib
import hashlib
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
_REFUSED_FIELD = "is not a valid field to query"


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


def smi_identity() -> str | None:
    """The nvidia-smi file `nvidia-smi` runs (first executable on PATH, as exec finds it): its resolved path,
    device, inode, size and mtime; None when there is none. A driver upgrade replaces the file, so a new key."""
    for folder in os.get_exec_path():
        candidate = os.path.join(folder or ".", "nvidia-smi")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            real = os.path.realpath(candidate)
            try:
                info = os.stat(real)
            except OSError:
                return None
            return f"{real}\0{info.st_dev}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}"
    return None


def fields_cache_path(driver: str | None) -> str | None:
    """Where this driver's field names are kept: by driver version, else by nvidia-smi's identity, else nowhere."""
    if driver:
        key = driver
    else:
        identity = smi_identity()
        if identity is None:
            return None
        key = "smi-" + hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return os.path.join(os.path.expanduser(FIELDS_CACHE_DIR), f"nvidia-query-gpu-fields-{key}.txt")


def known_fields(path: str | None) -> tuple[list[str], dict[str, Any] | None]:
    """The driver's field names: from the cache file at path, else `--help-query-gpu` (then cached there)."""
    cached = read_text(path, 200000) if path else None
    if cached:
        return cached.split(), None
    helped = run_command(["nvidia-smi", "--help-query-gpu"])
    names = help_fields(helped.get("out") or "") if helped.get("rc") == 0 else []
    if names and path:
        _write_cache(path, names)
    return names, helped


def refused_field(command: dict[str, Any] | None) -> bool:
    """Did nvidia-smi refuse the query for a field it does not know (`Field "x" is not a valid field to query.`)?"""
    if not command or command.get("rc") in (0, None):
        return False
    return _REFUSED_FIELD in str(command.get("out") or "") + str(command.get("err") or "")


def _drop_cache(path: str) -> None:
    """A cached list the driver refuses is stale: remove it so the next probe asks --help-query-gpu again."""
    with contextlib.suppress(OSError):
        os.remove(path)


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
    cache = fields_cache_path(match.group(1) if match else None)
    names, helped = known_fields(cache)
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
    if query and cache and helped is None and refused_field(results[5]):
        _drop_cache(cache)
    facts: dict[str, Any] = {"header": header, "proc_version": proc_text}
    if header["found"]:
        facts.update(query_gpu=results[1], query_apps=results[2], list_gpus=results[3])
        facts.update(fabric_manager=results[4], known_fields=names, help_query=helped)
        facts["query_health"] = results[5] if query else None
        facts["health_fields"] = fields  # the exact columns of query_health, so the parser never guesses
    return facts
