"""Readiness then smoke, as one step: restart-to-verdict for a release that was just made current.

Used by deploy (the new release), by rollback (the restored one) and by `specops smoke`-like checks, so
every path that puts a release in front of users proves real generation the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specops.commands.manifest import Figures
from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.engine.gpu_fault import with_gpu_fault
from specops.engine.readiness import Readiness, journal_position, unit_problems, wait_ready
from specops.engine.readiness_commands import ReadinessCommands
from specops.engine.smoke import SmokeResult, run_smoke, smoke_line, with_cause
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops.unit import restart


@dataclass(frozen=True)
class GateResult:
    readiness: Readiness
    smoke: SmokeResult | None

    @property
    def passed(self) -> bool:
        return self.readiness.ok and self.smoke is not None and self.smoke.passed

    @property
    def cause(self) -> str:
        """One line naming why it failed (the journal signature when known)."""
        if not self.readiness.ok:
            cause = self.readiness.cause.summary if self.readiness.cause else ""
            return f"not ready: {self.readiness.reason}" + (
                f" ({cause})" if cause and cause not in self.readiness.reason else ""
            )
        return self.smoke.reason if self.smoke else "no smoke result"

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "readiness": self.readiness.to_json(),
            "smoke": self.smoke.to_json() if self.smoke else None,
        }


def restart_and_gate(
    host: Host,
    spec: HostSpec,
    profile: Profile,
    previous_figures: Figures | None,
    reporter: Reporter,
    *,
    do_restart: bool = True,
    cursor: str | None = None,
    cancel: threading.Event | None = None,
    speedup_baseline: Figures | None = None,
    planned: Sequence[HostCommand] = (),
) -> GateResult:
    """Restart (unless the caller already did), wait until ready or a known failure, then run the smoke gate.
    `previous_figures`: the regression baseline; `speedup_baseline`: the profile's baseline_release figures.
    `planned`: the plan's gates commands (a deploy's, a restart's, a rollback's), run as they are, the journal's
    position filled into the poll."""
    commands = ReadinessCommands.planned(planned) if planned else ReadinessCommands.built(spec)
    if do_restart:
        cursor = journal_position(host, commands=commands)
        reporter.event(Event(spec.name, "restart", f"restarting {spec.unit_name}"))
        restart(host, spec, planned)

    def progress(phase: str, line: str) -> None:
        if cancel is not None and cancel.is_set():  # Ctrl-C while deploying several hosts in threads
            raise KeyboardInterrupt
        reporter.event(Event(spec.name, "readiness", line, level="progress", data={"phase": phase}))

    readiness = wait_ready(host, spec, profile, since_cursor_or_time=cursor, on_progress=progress, commands=commands)
    if not readiness.ok:
        # a GPU of the host that failed under the start (the kernel journal since the restart) is the cause
        failed = GateResult(with_gpu_fault(host, spec, cursor, readiness, commands.gpu_fault), None)
        # named on screen the moment it is known, before the failure's own steps (record, rollback) run
        reporter.event(Event(spec.name, "readiness", failed.cause, level="error"))
        return failed
    from specops.engine.client import EngineClient

    reporter.event(Event(spec.name, "smoke", "running the smoke gate"))
    client = EngineClient(host, spec)
    try:
        smoke = run_smoke(client, profile, spec, previous_figures, baseline=speedup_baseline)
    finally:
        client.close()
    if not smoke.passed:
        smoke = with_cause(smoke, unit_problems(host, spec, commands=commands))
    reporter.event(Event(spec.name, "smoke", smoke_line(smoke), level="info" if smoke.passed else "error",
                         data={"figures": dict(smoke.figures)}))  # fmt: skip
    return GateResult(readiness, smoke)
