"""After a failed start: did a GPU the engine uses fail under it? The kernel journal since the start says.

Why: a GPU that falls off the bus (Xid 79) or whose GSP hangs (Xid 119) while the engine loads kills the engine
with CUDA errors that read like the release's bug, and the unit's own journal never names the GPU. The driver
names it in the kernel journal only. When that journal holds a reboot- or reset-class Xid (commands/xid_catalog.py)
for a GPU the engine uses, since the start, that is the cause: a signature of family "gpu-host", so the deploy's
blame (deploy/blame.py) marks no release bad for it and `diagnose` names the host. One round trip: the kernel
journal lines and nvidia-smi's index/bus-id table (to name the GPU by its index), in one `sh -c` whose script is
a constant (the journal position and nothing else are its arguments).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from specops.commands.kernel_log import MARKER, XidEvent, parse_gpu_bus_ids, parse_kernel_log, since_word
from specops.commands.xid_catalog import xid_info
from specops.engine.signatures.model import Match, Signature
from specops.errors import SpecopsError

if TYPE_CHECKING:
    from specops.commands.planned import HostCommand
    from specops.config.inventory import HostSpec
    from specops.engine.readiness import Readiness
    from specops.host.base import Host

SIGNATURE_ID = "gpu-xid"
FAMILY = "gpu-host"
HOST_NOT_RELEASE = "the host, not the release"
TIMEOUT_S = 20.0


def engine_gpus(spec: HostSpec) -> set[int] | None:
    """The GPU indexes the unit sees (CUDA_VISIBLE_DEVICES from `gpus`), None for every GPU."""
    if not spec.gpus:
        return None
    return {int(part) for part in spec.gpus.split(",") if part.strip().isdigit()}


def host_fault(events: list[XidEvent], bus_ids: dict[str, int], gpus: set[int] | None) -> XidEvent | None:
    """The first reboot- or reset-class fault on a GPU the engine uses (a GPU nvidia-smi no longer lists counts:
    one that fell off the bus is gone from its table)."""
    for event in events:
        index = bus_ids.get(event.bus_id or "")
        if xid_info(event.code).host_fault and (gpus is None or index is None or index in gpus):
            return event
    return None


def fault_match(event: XidEvent, index: int | None) -> Match:
    """The failed start's cause: 'GPU 2 (0000:3b:00.0) fell off the bus (Xid 79) at ...: the host, not ...'."""
    info = xid_info(event.code)
    bus = f"{event.bus_id}.0" if event.bus_id else "an unnamed bus id"
    gpu = f"GPU {index} ({bus})" if index is not None else f"the GPU at {bus}"
    what = "fell off the bus" if event.code == 79 else f"logged {info.name}"
    when = f" at {event.time}" if event.time else ""
    cause = f"{gpu} {what} (Xid {event.code}){when}: {HOST_NOT_RELEASE}"
    hint = f"{info.action}; then deploy again (`specops doctor HOST` checks the GPUs first)"
    signature = Signature(SIGNATURE_ID, "fatal", re.compile(re.escape(event.line)), cause, hint, family=FAMILY)
    return Match(0, event.line, signature)


def gpu_fault_since(host: Host, spec: HostSpec, position: str, planned: HostCommand) -> Match | None:
    """The GPU fault that explains a failed start, or None (none logged, or the journal cannot be read).
    `planned`: the plan's kernel-journal read (its position slots filled here)."""
    since = since_word(position)
    if since is None:
        return None
    result = host.run(planned.filled(cursor=since).argv, timeout=TIMEOUT_S, check=False)
    journal, _, table = result.text.partition(MARKER + "\n")
    bus_ids = parse_gpu_bus_ids(table)
    event = host_fault(parse_kernel_log(journal), bus_ids, engine_gpus(spec))
    return fault_match(event, bus_ids.get(event.bus_id or "")) if event else None


def with_gpu_fault(
    host: Host, spec: HostSpec, position: str | None, readiness: Readiness, planned: HostCommand
) -> Readiness:
    """A failed readiness with its cause replaced by a GPU fault of the host when the kernel journal shows one:
    the engine's own last words (a CUDA error) are then the consequence, kept in `problems`."""
    if readiness.ok or not position:
        return readiness
    try:
        fault = gpu_fault_since(host, spec, position, planned)
    except (SpecopsError, OSError):  # the journal read is extra evidence for a failed start, never a new failure
        return readiness
    if fault is None:
        return readiness
    reason = f"{readiness.reason}; the kernel journal shows why: {fault.summary}"
    return replace(readiness, cause=fault, reason=reason)
