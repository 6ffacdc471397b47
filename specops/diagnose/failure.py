"""What went wrong, read from the journal and the release's recorded gates: the signature, the area, the frames.

Why separate from the verdict: the same failure is read from two places (the journal of a crash-looping unit now,
or the gates a failed deploy recorded in its manifest before it was rolled back), and the verdict must not care
which.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from specops.commands.kernel_log import XidEvent
from specops.commands.manifest import Cause, GatesRecord, ReadinessRecord, SmokeRecord
from specops.engine.gpu_fault import fault_match, host_fault
from specops.engine.signatures import Match, match, primary_cause

if TYPE_CHECKING:
    from specops.probe.facts_kernel import KernelLogFacts

FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
# words in a signature id -> what part of the host it is about (first hit wins)
AREAS: tuple[tuple[str, str], ...] = (
    ("torchcodec", "loading torchcodec"),
    ("ffmpeg", "loading torchcodec"),
    ("driver", "the NVIDIA driver"),
    ("cudart", "the CUDA runtime libraries"),
    ("cuda-lib", "the CUDA runtime libraries"),
    ("oom", "memory"),
    ("killed", "memory"),
    ("address-in-use", "a port"),
    ("port", "a port"),
    ("nccl", "NCCL"),
    ("symbol", "a native extension's ABI"),
    ("abi", "a native extension's ABI"),
    ("import", "importing a package"),
    ("disk", "disk space"),
    ("gpu-", "a GPU"),
    ("fabric", "a GPU"),
)
GPU_AREA = "a GPU"  # the GPU or its driver failed (signatures/hardware.py, engine/gpu_fault.py): the host's fault
ENVIRONMENT_AREAS = frozenset(
    {"loading torchcodec", "the NVIDIA driver", "the CUDA runtime libraries", "NCCL", "a native extension's ABI"}
)
RESOURCE_AREAS = frozenset({"memory", "a port", "disk space"})
DEGENERATE = re.compile(r"degenerat|!!!!|repeated", re.IGNORECASE)


@dataclass(frozen=True)
class Failure:
    """The failure being explained; `present` is False when nothing failed."""

    present: bool
    summary: str = ""
    signature: str | None = None  # signature id
    hint: str = ""
    area: str = ""  # AREAS value, "" when unknown
    text: str = ""  # every line that explains it, lowercased, for tying to changes
    frames: tuple[str, ...] = ()  # file paths of traceback frames
    degenerate: bool = False  # the smoke gate saw degenerate output
    exit_status: int | None = None
    restarts: int = 0
    source: str = ""  # "journal" | "gates" | "unit" | "preflight" | "kernel"
    details: dict[str, str] = field(default_factory=dict)
    checks: tuple[dict[str, Any], ...] = ()  # preflight: the checks that stopped the deploy (id, summary, evidence)

    def to_json(self) -> dict[str, Any]:
        return {
            "present": self.present, "summary": self.summary, "signature": self.signature, "area": self.area,
            "frames": list(self.frames), "degenerate": self.degenerate, "exit_status": self.exit_status,
            "restarts": self.restarts, "source": self.source, "checks": list(self.checks),
        }  # fmt: skip


def area_of(signature_id: str) -> str:
    return next((area for word, area in AREAS if word in signature_id), "")


def _frames(lines: Sequence[str]) -> tuple[str, ...]:
    found: list[str] = []
    for line in lines:
        for hit in FRAME.finditer(line):
            if hit.group("path") not in found:
                found.append(hit.group("path"))
    return tuple(found)


def _from_match(cause: Match, lines: Sequence[str], source: str, **extra: Any) -> Failure:
    text = " ".join([cause.signature.id, cause.summary, cause.line, *cause.details.values()]).lower()
    return Failure(
        present=True, summary=cause.summary, signature=cause.signature.id, hint=cause.signature.hint,
        area=area_of(cause.signature.id), text=text, frames=_frames(lines), source=source,
        details=dict(cause.details), **extra,
    )  # fmt: skip


def from_journal(lines: Sequence[str], *, unit_failed: bool, exit_status: int | None, restarts: int) -> Failure:
    """The failure of the running (or crash-looping) unit, from the journal of its last start."""
    cause = primary_cause(match(lines))
    if cause is not None and (cause.fatal or cause.signature.kind == "error"):
        return _from_match(cause, lines, "journal", exit_status=exit_status, restarts=restarts)
    if unit_failed or restarts:
        area = "memory" if exit_status in (9, 137) else ""
        summary = f"the unit is down (exit status {exit_status}, {restarts} restart(s)) with no known signature"
        return Failure(True, summary, area=area, frames=_frames(lines), exit_status=exit_status, restarts=restarts,
                       source="unit", text=" ".join(lines[-20:]).lower())  # fmt: skip
    return Failure(False)


def from_kernel_log(
    kernel_log: KernelLogFacts | None, gpus: set[int] | None, *, exit_status: int | None, restarts: int
) -> Failure:
    """A reboot- or reset-class GPU fault this boot on a GPU the engine uses (`gpus`; None: every GPU), from the
    probe's kernel journal: while that GPU waits for its reset, every start fails with CUDA errors that read like
    the release's bug, and the unit's own journal never names the GPU. Not present when there is none."""
    if kernel_log is None:
        return Failure(False)
    events = [XidEvent(event.code, event.bus_id, event.time, event.text, event.line) for event in kernel_log.events]
    fault = host_fault(events, kernel_log.gpu_bus_ids, gpus)  # the rule a failed start's check applies
    if fault is None:
        return Failure(False)
    index = kernel_log.gpu_bus_ids.get(fault.bus_id or "")
    return _from_match(fault_match(fault, index), [], "kernel", exit_status=exit_status, restarts=restarts)


def from_gates(gates: GatesRecord) -> Failure:
    """The failure a deploy recorded in the release's manifest (`gates`): readiness cause, or the smoke's."""
    if not gates.recorded or gates.passed is True:
        return Failure(False)
    readiness, smoke = gates.readiness or ReadinessRecord(), gates.smoke or SmokeRecord()
    tail = list(readiness.tail)
    details = " ".join(gate.detail for gate in smoke.gates)
    cause = readiness.cause or smoke.cause
    if cause is not None:
        return _gate_failure(cause, tail, details)
    reason = smoke.reason or readiness.reason or "the gates failed"
    degenerate = bool(DEGENERATE.search(reason + " " + details))
    return Failure(True, reason, frames=_frames(tail), degenerate=degenerate, source="gates",
                   text=(reason + " " + details).lower())  # fmt: skip


def _gate_failure(cause: Cause, tail: list[str], details: str) -> Failure:
    summary = cause.summary or cause.id
    text = " ".join([cause.id, summary, cause.line, details]).lower()
    return Failure(
        True, summary, signature=cause.id, hint=cause.hint, area=area_of(cause.id), text=text,
        frames=_frames(tail), degenerate=bool(DEGENERATE.search(text)), source="gates",
    )  # fmt: skip


def from_preflight(record: object) -> Failure:
    """A deploy the doctor's checks stopped before the release ever ran: the manifest's `preflight` record
    (deploy/preflight.py preflight_record). Not present when it has none or it passed."""
    if not isinstance(record, dict) or record.get("passed") is not False:
        return Failure(False)
    checks = tuple(c for c in record.get("failed") or [] if isinstance(c, dict) and c.get("id"))
    summary = "; ".join(f"{c['id']}: {c.get('summary') or 'failed'}" for c in checks) or "the preflight failed"
    hint = next((str(c.get("hint")) for c in checks if c.get("hint")), "")
    return Failure(True, f"the doctor's checks stopped the deploy: {summary}", hint=hint, area="the host",
                   text=summary.lower(), source="preflight", checks=checks)  # fmt: skip
