"""The gates of a multi-node engine's worker rank (rank >= 1): it serves no HTTP, so it cannot answer readiness or
smoke itself. Rank 0 proves the engine; a worker is ready once rank 0 has decided and its own unit is still active
with no fatal line in its journal.

Why the worker waits on its own journal while rank 0 decides: a worker that dies (an NCCL abort, a missing library
on that host only) takes rank 0 down as a lost peer, and rank 0's own cause would then only say "lost connection".
Polling the worker's journal at the same time names the rank that died with its own cause.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.engine.gates import GateResult
from specops.engine.readiness import wait_ready
from specops.engine.readiness_commands import ReadinessCommands
from specops.events import Event, Reporter
from specops.host.base import Host

# what rank 0's gates said: None while rank 0 has not decided; a failure text when rank 0 stopped without gates
RankZero = Callable[[], GateResult | str | None]
HTTP_OK, NOT_YET = 200, 503


def worker_gate(
    host: Host,
    spec: HostSpec,
    profile: Profile,
    reporter: Reporter,
    rank0: RankZero,
    *,
    cursor: str | None,
    cancel: threading.Event | None = None,
    planned: Sequence[HostCommand] = (),
) -> GateResult:
    """Once the caller restarted the worker (`cursor`: the journal's position before), wait until rank 0's gates
    decide, the worker's journal shows a fatal error, or its process ends. Passed only when rank 0 passed and the
    worker still runs."""
    commands = ReadinessCommands.planned(planned) if planned else ReadinessCommands.built(spec)

    def decided() -> int:
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt
        return NOT_YET if rank0() is None else HTTP_OK

    def progress(phase: str, line: str) -> None:
        reporter.event(Event(spec.name, "readiness", line, level="progress", data={"phase": phase}))

    started = time.monotonic()

    def clock() -> float:
        """The worker waits as long as rank 0 does (rank 0's own deadline bounds it): its clock runs once rank 0
        has decided, so a rank 0 whose load runs long on progress lines never sees its worker time out first."""
        return started if rank0() is None else time.monotonic()

    own = wait_ready(host, spec, profile, since_cursor_or_time=cursor, on_progress=progress, health=decided,
                     clock=clock, commands=commands)  # fmt: skip
    verdict = rank0()
    if not own.ok:
        failed = GateResult(own, None)
        reporter.event(Event(spec.name, "readiness", f"this rank's engine failed: {failed.cause}", level="error"))
        return failed
    if isinstance(verdict, GateResult) and verdict.passed:
        ready = replace(own, reason="rank 0 passed readiness and smoke; this rank's unit is active")
        return GateResult(ready, verdict.smoke)
    why = verdict.cause if isinstance(verdict, GateResult) else (verdict or "rank 0 did not decide")
    reason = f"rank 0 failed its gates: {why}"
    return GateResult(replace(own, ok=False, reason=reason), None)
