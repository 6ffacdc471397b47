"""The kernel journal's GPU faults of this boot (Xid lines), as the probe read them and parsed here.

Why apart from facts.py: the kernel log is its own source (journalctl, not nvidia-smi) with its own failure mode:
a login user outside root, `adm` and `systemd-journal` reads nothing, and the doctor says so instead of passing.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from specops.commands.kernel_log import XidEvent, parse_gpu_bus_ids, parse_kernel_log, permission_denied


class XidFact(BaseModel):
    """One fault line: the Xid (79 for "fallen off the bus"), the GPU by bus id and, where nvidia-smi lists it,
    by index."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: int
    bus_id: str | None = None  # "0000:3b:00"
    gpu_index: int | None = None
    time: str = ""
    text: str = ""
    line: str = ""


class KernelLogFacts(BaseModel):
    """`journalctl -k -b` filtered to the NVIDIA driver's fault lines. readable=False: see `denied` or `error`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    readable: bool = False
    denied: bool = False  # the user may not read the system journal
    user: str | None = None  # who the probe ran as
    euid: int | None = None
    error: str | None = None  # journalctl missing or failing for another reason
    method: str = "grep"  # "grep" (journalctl filtered) or "python" (an older journalctl: filtered by the probe)
    events: list[XidFact] = []
    gpu_bus_ids: dict[str, int] = {}  # bus id -> GPU index, from nvidia-smi


def _bus_ids(nvidia: dict[str, Any]) -> dict[str, int]:
    """The health query's first two columns are index and pci.bus_id (remote/probe/gpu.py HEALTH_FIELDS)."""
    query = nvidia.get("query_health") or {}
    return parse_gpu_bus_ids(str(query.get("out") or "")) if query.get("rc") == 0 else {}


def _fact(event: XidEvent, bus_ids: dict[str, int]) -> XidFact:
    index = bus_ids.get(event.bus_id or "")
    return XidFact(code=event.code, bus_id=event.bus_id, gpu_index=index, time=event.time, text=event.text,
                   line=event.line)  # fmt: skip


def parse_kernel_log_facts(raw: dict[str, Any] | None, nvidia: dict[str, Any]) -> KernelLogFacts | None:
    """The probe's `kernel_log` section -> KernelLogFacts (None from an older probe that did not read it)."""
    if not raw:
        return None
    journal = raw.get("journal") or {}
    user, euid = raw.get("user"), raw.get("euid")
    base = {"user": user if isinstance(user, str) else None, "euid": euid if isinstance(euid, int) else None,
            "method": str(raw.get("method") or "grep")}  # fmt: skip
    err = str(journal.get("err") or "")
    if not journal.get("found"):
        return KernelLogFacts(error="journalctl: command not found (no systemd journal)", **base)
    if permission_denied(err):
        return KernelLogFacts(denied=True, error=err.strip().splitlines()[-1], **base)
    out = str(journal.get("out") or "")
    if journal.get("timed_out") or (journal.get("rc") not in (0, 1)) or (journal.get("rc") == 1 and not out and err):
        lines = err.strip().splitlines()
        return KernelLogFacts(error=lines[-1] if lines else f"journalctl exited {journal.get('rc')}", **base)
    bus_ids = _bus_ids(nvidia)
    events = [_fact(event, bus_ids) for event in parse_kernel_log(out)]
    return KernelLogFacts(readable=True, events=events, gpu_bus_ids=bus_ids, **base)
