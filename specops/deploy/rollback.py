"""Rollback: put a verified release back in front of users, then prove it with the same gates as a deploy.

Automatic after a failed deploy, or on demand (`specops rollback HOST [--to ID]`). The host-side script does
the switch, restores the unit recorded with that release, and restarts in one round trip; then readiness and
smoke run exactly as for a new release, so a rollback into a broken environment says why instead of hanging.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specops.commands.release import ReleaseInfo
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.engine.gates import GateResult, restart_and_gate
from specops.engine.readiness import journal_position
from specops.errors import SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops.engine_stop import GpusBusy, StopResult, stop_engine
from specops.ops.release import read_listing, rollback_release, update_manifest

ProfileFor = Callable[[str | None], Profile]


@dataclass
class RollbackResult:
    ok: bool
    from_release: str | None = None
    to_release: str | None = None
    gates: GateResult | None = None
    error: str | None = None
    marked_bad: str | None = None  # the release the rollback left, now never a rollback target
    stop: StopResult | None = None  # the drain of the engine it replaced, and the GPUs' check

    @property
    def summary(self) -> str:
        if self.error:
            return f"rollback failed: {self.error}"
        verdict = "verified" if self.ok else f"NOT healthy: {self.gates.cause if self.gates else '?'}"
        marked = f"; {self.marked_bad} marked bad" if self.marked_bad else ""
        return f"rolled back {self.from_release} -> {self.to_release}: {verdict}{marked}"

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "from": self.from_release,
            "to": self.to_release,
            "gates": self.gates.to_json() if self.gates else None,
            "error": self.error,
            "marked_bad": self.marked_bad,
            "drain": self.stop.drain.to_json() if self.stop else None,
            "gpus": self.stop.gpus.to_json() if self.stop else None,
        }


def smoke_figures(release: ReleaseInfo | None) -> dict[str, Any] | None:
    """The figures a verified release recorded in its manifest (the regression baseline)."""
    if release is None:
        return None
    smoke = release.gates.get("smoke") if isinstance(release.gates, dict) else None
    figures = smoke.get("figures") if isinstance(smoke, dict) else None
    return figures if isinstance(figures, dict) else None


def rollback_host(
    host: Host, spec: HostSpec, profile_for: ProfileFor, target_id: str | None, reason: str, reporter: Reporter,
    *, force: bool = False, reap: bool = False,
) -> RollbackResult:  # fmt: skip
    """Drain and stop what serves, switch back, restart, gate. Never raises for a host-side refusal or GPUs that
    stay busy: the result says what happened. The host marks the release it leaves bad; `force` allows a
    `target_id` that is marked bad itself."""
    listing = read_listing(host, spec)
    serving = next((r for r in listing.releases if r.id == listing.current), None)
    try:
        stopped = stop_engine(host, spec, profile_for(serving.profile if serving else None), reporter, reap=reap)
    except GpusBusy as busy:
        return RollbackResult(False, listing.current, None, None, f"{busy.message} ({busy.hint})")
    cursor = journal_position(host)
    reporter.event(Event(spec.name, "rollback", f"rolling back ({reason})"))
    try:
        reply = rollback_release(host, spec, target_id, reason, force=force)
    except SpecopsError as error:
        return RollbackResult(False, listing.current, None, None, error.message, stop=stopped)
    to_id = str(reply.get("current"))
    target = next((r for r in listing.releases if r.id == to_id), None)
    profile = profile_for(target.profile if target else None)
    gates = restart_and_gate(host, spec, profile, smoke_figures(target), reporter, do_restart=False, cursor=cursor)
    if gates.passed:
        update_manifest(host, spec, to_id, {"last_gates": gates.to_json()})
    marked = reply.get("marked_bad")
    return RollbackResult(gates.passed, reply.get("previous"), to_id, gates,
                          marked_bad=marked if isinstance(marked, str) else None, stop=stopped)  # fmt: skip
