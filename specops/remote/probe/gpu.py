"""NVIDIA observations as RAW text: the nvidia-smi header, two CSV queries, /proc/driver/nvidia/version.

Why raw: the formats drift between driver branches, so interpretation lives in the operator-side parser
(specops/probe/parse.py), where recorded outputs can pin it in unit tests.
"""

from __future__ import annotations

from typing import Any

from specops.remote.probe.common import map_in_threads, read_text, run_command

GPU_QUERY = "--query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used,uuid"
APPS_QUERY = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"
CSV_FORMAT = "--format=csv,noheader,nounits"
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"


def gather_nvidia(request: dict[str, Any]) -> dict[str, Any]:
    """The three nvidia-smi calls run side by side: each can take a second on a driver without persistence mode."""
    argvs = [["nvidia-smi"], ["nvidia-smi", GPU_QUERY, CSV_FORMAT], ["nvidia-smi", APPS_QUERY, CSV_FORMAT]]
    header, query_gpu, query_apps = map_in_threads(run_command, argvs, workers=3)
    facts: dict[str, Any] = {"header": header}
    if header["found"]:
        facts["query_gpu"] = query_gpu
        facts["query_apps"] = query_apps
    proc_path = request.get("proc_driver_version_path") or PROC_DRIVER_VERSION
    facts["proc_version"] = read_text(proc_path, 10000)
    return facts
