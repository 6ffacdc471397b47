"""gpu.xid: GPU faults the NVIDIA driver logged in the kernel journal since this boot (Xid lines).

Why: no nvidia-smi field holds Xid history; a GPU that fell off the bus or whose GSP hung earlier in this boot
fails the next engine start in ways that look like the release's fault. A reboot-or-reset class Xid on a GPU the
host serves with FAILs (a reboot since clears it: the journal is read for this boot only; a GPU reset clears it
too, which the journal cannot show, so the hint says so). Application-class Xids (the engine's own kernels
faulting) that repeat on one GPU WARN. Floods of Xid 45 (cleanup after another fault) are shown once, counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from specops.commands.xid_catalog import APPLICATION, xid_info
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts_kernel import XidFact

CHECK_ID = "gpu.xid"
JOURNAL_GROUP = "systemd-journal"
REBOOT_HINT = (
    "reboot before deploying; a GPU reset since then also clears it (nvidia-smi -r -i N, as root, with no process "
    "on the GPU)"
)
MAX_EVIDENCE = 12


def gpu_name(event: XidFact) -> str:
    """'GPU 2 (0000:3b:00.0)', or the bus id alone when nvidia-smi does not list it (a GPU that fell off)."""
    bus = f"{event.bus_id}.0" if event.bus_id else "unknown bus id"
    return f"GPU {event.gpu_index} ({bus})" if event.gpu_index is not None else f"the GPU at {bus}"


def describe(event: XidFact) -> str:
    """'GPU 2 (0000:3b:00.0): Xid 79 (GPU has fallen off the bus) at 2026-...'."""
    when = f" at {event.time}" if event.time else ""
    return f"{gpu_name(event)}: Xid {event.code} ({xid_info(event.code).name}){when}"


def served(event: XidFact, gpus: str | None) -> bool:
    """On a GPU the host serves with (`gpus`, or every GPU when it names none); an unknown index counts."""
    if not gpus or event.gpu_index is None:
        return True
    return str(event.gpu_index) in {part.strip() for part in gpus.split(",")}


def evidence_lines(events: list[XidFact]) -> list[str]:
    """Each distinct fault once; a code repeated on one GPU (a flood of 45) as one line with its count."""
    counts = Counter((e.bus_id, e.code) for e in events)
    lines, seen = [], set()
    for event in events:
        key = (event.bus_id, event.code)
        if key in seen and counts[key] > 1:
            continue
        seen.add(key)
        times = f" ({counts[key]} times, last at {_last(events, key)})" if counts[key] > 1 else ""
        lines.append(f"{describe(event)}{times}: {event.line}")
    return lines[:MAX_EVIDENCE]


def _last(events: list[XidFact], key: tuple[str | None, int]) -> str:
    return [e.time for e in events if (e.bus_id, e.code) == key][-1] or "?"


def _unreadable(ctx: CheckContext) -> CheckResult | None:
    log = ctx.facts.kernel_log
    if not ctx.gpu_host:
        return skipped(CHECK_ID, "not a GPU host")
    if log is None:
        return skipped(CHECK_ID, ctx.facts.errors.get("kernel_log", "the probe did not read the kernel journal"))
    if log.denied:
        user = log.user or "the login user"
        why = f"{user} may not read the kernel journal (not root, not in group {JOURNAL_GROUP} or adm)"
        return skipped(CHECK_ID, f"{why}: `usermod -aG {JOURNAL_GROUP} {user}` on the host lets the doctor see Xids")
    if not log.readable:
        return skipped(CHECK_ID, f"the kernel journal could not be read: {log.error or 'unknown error'}")
    return None


@check(CHECK_ID, "no GPU the host serves with logged a reboot- or reset-class Xid since boot")
def gpu_xid(ctx: CheckContext) -> CheckResult:
    unreadable = _unreadable(ctx)
    if unreadable is not None or ctx.facts.kernel_log is None:
        return unreadable or skipped(CHECK_ID, "no kernel journal")
    events = ctx.facts.kernel_log.events
    gpus = ctx.host.gpus if ctx.host is not None else None
    faults = [e for e in events if xid_info(e.code).host_fault]
    ours = [e for e in faults if served(e, gpus)]
    if ours:
        first = ours[0]
        info = xid_info(first.code)
        more = f" (and {len(ours) - 1} more)" if len(ours) > 1 else ""
        return failed(CHECK_ID, f"{describe(first)}{more}: {REBOOT_HINT.split(';')[0]}",
                      f"{info.action}; {REBOOT_HINT}", evidence_lines(ours + _others(events, ours)))  # fmt: skip
    repeated = _repeated_application(events)
    if repeated or faults:
        return _warning(repeated, faults)
    if events:
        return passed(CHECK_ID, f"no reboot- or reset-class Xid since boot ({len(events)} other line(s))",
                      evidence_lines(events))  # fmt: skip
    return passed(CHECK_ID, "no Xid since boot")


def _others(events: list[XidFact], shown: list[XidFact]) -> list[XidFact]:
    """The lines besides `shown` (what followed the fault: Xid 45 cleanup, the engine's own Xids), in order."""
    ids = {id(event) for event in shown}
    return [event for event in events if id(event) not in ids]


def _repeated_application(events: list[XidFact]) -> list[XidFact]:
    """Application-class Xids seen more than once on the same GPU: a bug that keeps hitting, or a weak GPU."""
    per_gpu: dict[str | None, list[XidFact]] = defaultdict(list)
    for event in events:
        if xid_info(event.code).kind == APPLICATION:
            per_gpu[event.bus_id].append(event)
    return [event for found in per_gpu.values() if len(found) > 1 for event in found]


def _warning(repeated: list[XidFact], elsewhere: list[XidFact]) -> CheckResult:
    if repeated:
        first = repeated[0]
        summary = f"application-class Xids repeat on {gpu_name(first)} since boot ({len(repeated)} lines)"
        hint = (f"{xid_info(first.code).action}; if it keeps repeating on this GPU only while other GPUs run the "
                "same engine, suspect the GPU")  # fmt: skip
        return warned(CHECK_ID, summary, hint, evidence_lines(repeated + elsewhere))
    first = elsewhere[0]
    return warned(CHECK_ID, f"{describe(first)}, a GPU this host does not serve with",
                  f"{xid_info(first.code).action}; {REBOOT_HINT}", evidence_lines(elsewhere))  # fmt: skip
