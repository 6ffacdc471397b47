"""Rollback: put a verified release back in front of users, then prove it with the same gates as a deploy.

Automatic after a failed deploy, or on demand (`specops rollback HOST [--to ID]`). The host-side script does
the switch, restores the unit and env file recorded with that release, and restarts in one round trip; then
readiness and smoke run exactly as for a new release, so a rollback into a broken environment says why instead
of hanging.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from specops.commands.manifest import Figures
from specops.commands.planned import HostCommand, by_role
from specops.commands.release import Listing, ReleaseInfo
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.deploy import step_commands as cmds
from specops.deploy.rollback_restore import Restoration, restore_serving, serve_after_interruption, stays_dark
from specops.deploy.serving import Serving, rollback_failed_line
from specops.engine.gates import GateResult, restart_and_gate
from specops.engine.readiness import journal_position
from specops.engine.readiness_commands import ReadinessCommands
from specops.errors import SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops import interrupts
from specops.ops.engine_stop import Confirm, GpusBusy, StopResult, no_lock, stop_engine
from specops.ops.lock import LockLost
from specops.ops.planned import script_reply
from specops.ops.release import read_listing, run_script
from specops.ops.release_changes import ROLLBACK_TIMEOUT_S, update_manifest
from specops.ops.stop_commands import StopCommands

ProfileFor = Callable[[str | None], Profile]
SWITCHING = "switching current"  # the confirm before the switch: every rank of an engine has stopped by then
Gate = Callable[..., GateResult]  # restart_and_gate's signature


@dataclass
class RollbackResult:
    ok: bool
    from_release: str | None = None
    to_release: str | None = None
    gates: GateResult | None = None
    error: str | None = None
    marked_bad: str | None = None  # the release the rollback left, now never a rollback target
    stop: StopResult | None = None  # the drain of the engine it replaced, and the GPUs' check
    stopped: bool = False  # the serving engine was stopped (a failure after that restores it or says so)
    restored: str | None = None  # failed after the stop: the release started again, serving as before
    dark: str | None = None  # failed after the stop and nothing serves: says so, and how to start it
    not_marked: str = ""  # why the release it left is not marked bad (deploy/blame.py), "" when it is
    env: str = ""  # the host's word for the env file: "restored", "same" or "not recorded" (an older release)
    serving: Serving | None = None  # what serves at the end, read from the host (a manual rollback reads it)

    @property
    def failed_after_stop(self) -> bool:
        """The rollback failed once it had stopped the engine and nothing it had was started again: no verified
        release serves (`rollback-failed`)."""
        return not self.ok and self.stopped and self.restored is None

    def final_line(self, host: str) -> str:
        """The last line: what serves, as read at the end; a failed rollback says that nothing verified does."""
        if self.failed_after_stop:
            return self.failed_line(host)
        return f"{host}: {self.serving.line()}" if self.serving is not None else ""

    def failed_line(self, host: str) -> str:
        cause = self.error or (self.gates.cause if self.gates else "its gates failed")
        return self.dark or f"{host}: {rollback_failed_line(host, self.to_release, cause)}"

    @property
    def summary(self) -> str:
        if self.error:
            return f"rollback failed: {self.error}" + self._after_stop()
        verdict = "verified" if self.ok else f"NOT healthy: {self.gates.cause if self.gates else '?'}"
        marked = f"; {self.marked_bad} marked bad" if self.marked_bad else ""
        kept = f"; {self.from_release} not marked bad: {self.not_marked}" if self.not_marked else ""
        return f"rolled back {self.from_release} -> {self.to_release}: {verdict}{marked}{kept}{self._env_note()}"

    def _env_note(self) -> str:
        if self.env != "not recorded":
            return ""
        return (
            f"; {self.to_release} has no env file of its own (made by an older specops): the live one is left as it was"
        )

    def _after_stop(self) -> str:
        if self.dark:
            return f"\n{self.dark}"
        if self.restored:
            return f"\nthe engine was stopped, then started again: {self.restored} serves as before"
        return ""

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "from": self.from_release,
            "to": self.to_release,
            "gates": self.gates.to_json() if self.gates else None,
            "error": self.error,
            "marked_bad": self.marked_bad,
            "not_marked": self.not_marked or None,
            "env": self.env or None,
            "drain": self.stop.drain.to_json() if self.stop else None,
            "gpus": self.stop.gpus.to_json() if self.stop else None,
            "stopped": self.stopped,
            "restored": self.restored,
            "nothing_serves": self.dark,
            "serving": self.serving.to_json() if self.serving else None,
        }


def smoke_figures(release: ReleaseInfo | None) -> Figures | None:
    """The figures a verified release recorded in its manifest (the regression baseline)."""
    return release.gates.figures if release else None


def rollback_host(
    host: Host, spec: HostSpec, profile_for: ProfileFor, target_id: str, reason: str, reporter: Reporter,
    *, force: bool = False, reap: bool = False, listing: Listing | None = None, confirm: Confirm = no_lock,
    not_marked: str = "", planned: Sequence[HostCommand] = (), cause: str = "", gate: Gate = restart_and_gate,
) -> RollbackResult:  # fmt: skip
    """Drain and stop what serves, switch back to `target_id` (chosen and checked by the caller: the host's own
    refusal is a safety net), restart, gate. Never raises for a host-side refusal or GPUs that stay busy: the
    result says what happened, and a failure after the stop starts the engine that served again or says loudly
    that nothing serves (rollback_restore.py). `listing`: the host's, when the caller just read it. `confirm`: the
    lock's check, before each command that stops or switches (lost: LockLost, nothing more changes). Interrupted
    (SIGINT, SIGTERM, SIGHUP): the verified release `current` names (what served, or the target) is started
    again unless it runs, the line saying so is noted, and the interruption goes on. `not_marked`: why the
    release it leaves is not marked bad (deploy/blame.py; "": it is marked). `planned`: the plan's rollback step
    (a deploy's), whose commands run as they are, `cause` filled into its reason's slot; without one (`specops
    rollback`, which prints no steps) the same commands are made here with the step's own builder. `gate`: how the
    restored release is proven (a worker rank of an engine: by rank 0's gates and its own journal)."""
    if not planned:  # the drain budget is only the plan's note: no plan is shown here
        planned = cmds.rollback_commands(spec, target_id, reason, 0, bool(not_marked), force)
    commands = _Commands(planned, cause, bool(not_marked))
    before = listing if listing is not None else read_listing(host, spec, commands.listing)
    try:
        result = _rollback(host, spec, profile_for, target_id, reporter, reap, before, confirm, commands, gate)
        result.not_marked = not_marked if result.error is None else ""
        return result
    except KeyboardInterrupt as interruption:  # SIGINT, SIGTERM, SIGHUP: end serving a verified release
        restoration = serve_after_interruption(host, spec, profile_for, reporter, confirm, stopped=True,
                                               action="rollback")  # fmt: skip
        interrupted_serving(interruption, restoration.said(spec))
        raise


def interrupted_serving(interruption: KeyboardInterrupt, line: str) -> None:
    """Say (now, and with the exit code) what serves after the interruption; the line goes into its audit too."""
    interrupts.note(line)
    interruption.add_note(line)


class _Commands:
    """The rollback step's commands, by part: the listing, the stop, the journal position and readiness, the
    host-side rollback (the one that marks the release it leaves bad, or the one that does not), the record."""

    def __init__(self, planned: Sequence[HostCommand], cause: str, keep_unmarked: bool) -> None:
        self.planned = tuple(planned)
        parts = by_role(planned)
        self.listing = parts[cmds.LISTING]
        self.stop = StopCommands.planned(planned)
        self.readiness = ReadinessCommands.planned(planned)
        switch = parts[cmds.ROLLBACK_UNMARKED if keep_unmarked else cmds.ROLLBACK_MARKING]
        self.switch = switch.filled(cause=cause) if cause else switch
        self.record = parts[cmds.MANIFEST]


def _rollback(host: Host, spec: HostSpec, profile_for: ProfileFor, target_id: str, reporter: Reporter, reap: bool,
              before: Listing, confirm: Confirm, commands: _Commands, gate: Gate) -> RollbackResult:  # fmt: skip
    serving = next((r for r in before.releases if r.id == before.current), None)
    try:
        stopped = stop_engine(host, spec, profile_for(serving.profile if serving else None), reporter, reap=reap,
                              confirm=confirm, commands=commands.stop)  # fmt: skip
    except LockLost:  # someone else changes the host now: nothing more is done here, not even a restore
        raise
    except GpusBusy as busy:  # stopped, and starting it again would meet the same busy GPUs
        return _failed(spec, before, f"{busy.message} ({busy.hint})", stays_dark(spec, "its GPUs are not free"),
                       reporter)  # fmt: skip
    except SpecopsError as error:
        restoration = restore_serving(host, spec, profile_for, before, reporter, confirm)
        return _failed(spec, before, error.message, restoration, reporter)
    reporter.event(Event(spec.name, "rollback", f"switching current to {target_id}, putting back its unit and env "
                                                f"file, restarting {spec.unit_name}"))  # fmt: skip
    try:
        confirm(SWITCHING)
        cursor = journal_position(host, commands=commands.readiness)
        reply = run_script(host, spec, list(commands.switch.argv), timeout=ROLLBACK_TIMEOUT_S)
    except LockLost:  # as above: whoever holds the lock now changes the host
        raise
    except SpecopsError as error:
        restoration = restore_serving(host, spec, profile_for, before, reporter, confirm)
        return _failed(spec, before, error.message, restoration, reporter, stopped)
    to_id = str(reply.get("current"))
    target = next((r for r in before.releases if r.id == to_id), None)
    profile = profile_for(target.profile if target else None)
    gates = gate(host, spec, profile, smoke_figures(target), reporter, do_restart=False, cursor=cursor,
                             planned=commands.planned)  # fmt: skip
    if gates.passed and to_id == target_id:
        script_reply(host, spec, commands.record, {"last_gates": gates.to_json()})
    elif gates.passed:  # the host chose another release than the one planned (no target named: the newest)
        update_manifest(host, spec, to_id, {"last_gates": gates.to_json()})
    marked = reply.get("marked_bad")
    return RollbackResult(gates.passed, reply.get("previous"), to_id, gates, stopped=True,
                          marked_bad=marked if isinstance(marked, str) else None, stop=stopped,
                          env=str(reply.get("env") or ""))  # fmt: skip


def _failed(spec: HostSpec, before: Listing, error: str, restoration: Restoration, reporter: Reporter,
            stopped: StopResult | None = None) -> RollbackResult:  # fmt: skip
    """A rollback that failed after the stop, with what serves now (named on screen at once when nothing does)."""
    if restoration.dark:
        reporter.event(Event(spec.name, "rollback", restoration.dark, level="error"))
    return RollbackResult(False, before.current, None, None, error, stop=stopped, stopped=True,
                          restored=restoration.restored, dark=restoration.dark)  # fmt: skip
