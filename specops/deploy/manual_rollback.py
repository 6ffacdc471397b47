"""`specops rollback HOST`: the operator's rollback, under the host's lock, with an audit line.

The automatic rollback runs inside a deploy, which already holds the lock and writes the audit entry; a
manual one must do both itself, so that two operators cannot roll back and deploy the same host at once and
the audit log says who put which release back.

It plans before it acts (deploy/rollback_plan.py): the host's listing is read and the target chosen and checked
before the lock is taken (taking it ends the guard's watch), so a rollback that cannot happen changes nothing;
under the lock the listing is read and checked again, and the host-side op gets the chosen target by name.
"""

from __future__ import annotations

import contextlib

from specops.commands.conversation import CONVERSATION_TIMEOUT_S
from specops.commands.release import Listing
from specops.config.inventory import HostSpec
from specops.deploy.engine_run import Arrival, EngineRun
from specops.deploy.notify_events import send_rollback_event
from specops.deploy.rollback import Gate, ProfileFor, RollbackResult, interrupted_serving, rollback_host
from specops.deploy.rollback_plan import RollbackPlan, plan_rollback
from specops.deploy.serving import read_serving
from specops.deploy.step_commands import conversation_commands
from specops.engine.gates import restart_and_gate
from specops.errors import SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.host.conversation import conversation
from specops.ops import audit, interrupts, lock
from specops.ops.engine_stop import Confirm
from specops.ops.hooks import run_hook
from specops.ops.interrupts import signal_name
from specops.ops.release import read_listing


def plan_manual_rollback(host: Host, spec: HostSpec, profile_for: ProfileFor, target_id: str | None,
                         force: bool) -> RollbackPlan:  # fmt: skip
    """The plan from the host's listing, read without the lock (taking it would end the guard's watch) and
    without changing anything; raises RollbackRefused when there is nothing to roll back to. `--dry-run`."""
    return plan_rollback(spec, read_listing(host, spec), profile_for, target_id, force)


def manual_rollback(
    host: Host,
    spec: HostSpec,
    profile_for: ProfileFor,
    target_id: str | None,
    reporter: Reporter,
    *,
    lock_wait_s: float = 0.0,
    command: str | None = None,
    force: bool = False,
    reap: bool = False,
    engine: EngineRun | None = None,
) -> RollbackResult:
    """Plan (refused: RollbackRefused, before the lock), take the lock (or raise LockHeld), plan again from a
    fresh listing, roll back to the planned release and gate, audit the outcome, release the lock.

    `command` is what the lock's holder record shows (default: this process's command line); `force` allows a
    `target_id` marked bad. The release left is marked bad with this rollback as the reason. Its commands are
    requests on one command conversation, as a deploy's (host/conversation.py). `engine`: this host is a rank of
    an engine rolled back as one (deploy/engine_run.py): locked in rank order, restarted once every rank stopped,
    proven by rank 0's gates."""
    holder = lock.LockHolder.current(command)

    def say(text: str) -> None:
        reporter.event(Event(spec.name, "lock", text))

    (opening,) = conversation_commands(spec)  # the deploy's own conversation command
    talk = conversation(host, opening.argv, lifetime_s=CONVERSATION_TIMEOUT_S)
    with talk as on_host:
        plan_manual_rollback(on_host, spec, profile_for, target_id, force)  # refused: the lock is never taken
        if engine is not None:
            engine.take_turn(engine.rank(spec.name))
        with lock.acquire(on_host, holder, wait_s=lock_wait_s, on_event=say) as held:
            if engine is not None:
                engine.arrive("lock", engine.rank(spec.name), Arrival(True))
            listing = read_listing(on_host, spec)  # another specops may have changed the host meanwhile
            plan = plan_rollback(spec, listing, profile_for, target_id, force)
            reporter.event(Event(spec.name, "rollback", f"rolling back {plan.from_release or 'none'} -> "
                                                        f"{plan.to_release} ({plan.why})"))  # fmt: skip
            reason = f"specops rollback by {holder.who}"
            try:
                confirm = held.confirm if engine is None else engine.rollback_confirm(spec.name, held.confirm)
                gate = restart_and_gate if engine is None else engine.gate(spec.name, "rollback")
                result = _bracketed(on_host, spec, profile_for, plan, listing, reporter, reason, reap=reap,
                                    confirm=confirm, gate=gate)  # fmt: skip
            except KeyboardInterrupt as interruption:  # rollback_host put back a verified release, or said why not
                _audit_interrupted(on_host, spec, plan, interruption)
                raise
            _audit(on_host, spec, result, force, held.takeover_note)
            send_rollback_event(spec.name, result, plan.profile)  # in the background: [notify]
            result.serving = read_serving(on_host, spec)
        _remember_environment(on_host, spec, result)  # after the lock: the next deploy need not wait for it
    return result


def _audit(host: Host, spec: HostSpec, result: RollbackResult, force: bool, taken_over: str) -> None:
    entry = audit.new_entry(
        "rollback",
        outcome="verified" if result.ok else "failed",
        from_release=result.from_release,
        to_release=result.to_release,
        gates=result.gates.to_json() if result.gates else {},
        message=result.summary,
        forced=force,
    )
    if result.stop is not None:
        entry["drain"] = result.stop.drain.to_json()
    if taken_over:  # a killed deploy's lock, taken over: the log says whose and why
        entry["lock_taken_over"] = taken_over
    audit.record(host, spec, entry)


def _audit_interrupted(host: Host, spec: HostSpec, plan: RollbackPlan, interruption: KeyboardInterrupt) -> None:
    """The audit line of an interrupted rollback (outcome "interrupted", the signal, what serves now); a second
    signal does not cut it short, and a failure to write it never hides the interruption."""
    notes = getattr(interruption, "__notes__", [])
    if not notes:  # interrupted before anything was stopped (the pre_stop hook)
        line = f"{spec.name}: {plan.from_release or 'no release'} serves as before (nothing was stopped)"
        interrupted_serving(interruption, line)
        notes = [line]
    entry = audit.new_entry("rollback", outcome="interrupted", from_release=plan.from_release,
                            to_release=plan.to_release, message=f"interrupted ({signal_name(interruption)}): "
                            + "; ".join(notes))  # fmt: skip
    with interrupts.shielded(), contextlib.suppress(SpecopsError, OSError):
        audit.record(host, spec, entry)


def _bracketed(
    host: Host, spec: HostSpec, profile_for: ProfileFor, plan: RollbackPlan, listing: Listing, reporter: Reporter,
    reason: str, *, reap: bool, confirm: Confirm, gate: Gate,
) -> RollbackResult:  # fmt: skip
    """The rollback between the host's pre_stop and post_start hooks (specops.ops.hooks), as a deploy runs them."""
    if spec.pre_stop:
        hook = run_hook("pre_stop", spec.pre_stop, host=spec.name, release=plan.to_release, action="rollback")
        reporter.event(Event(spec.name, "pre_stop", hook.summary(), level="info" if hook.ok else "error"))
        if not hook.ok:
            return RollbackResult(False, plan.from_release, error=f"{hook.summary()}; nothing on the host was changed")
    result = rollback_host(host, spec, profile_for, plan.to_release, reason, reporter, reap=reap, force=plan.forced,
                           listing=listing, confirm=confirm, gate=gate)  # fmt: skip
    if spec.post_start and result.ok:
        hook = run_hook("post_start", spec.post_start, host=spec.name, release=result.to_release, action="rollback")
        reporter.event(Event(spec.name, "post_start", hook.summary(), level="info" if hook.ok else "warn"))
    elif spec.post_start:
        reporter.event(Event(spec.name, "post_start", "post_start hook not run: no verified engine serves",
                             level="warn"))  # fmt: skip
    return result


def _remember_environment(host: Host, spec: HostSpec, result: RollbackResult) -> None:
    """What the host is made of right after the rollback, kept locally for `specops diff` and `diagnose`: when
    the release that was put back fails later, this says whether the host changed since. One probe round trip;
    a probe that fails costs the rollback nothing (the rollback's own outcome is already decided and audited)."""
    from specops.diagnose.fingerprint import fingerprint_from_facts
    from specops.diagnose.store import remember
    from specops.probe.run import probe

    try:
        facts = probe(host, spec)
    except SpecopsError:
        return
    remember(spec.name, fingerprint_from_facts(facts, host=spec.name, release=result.to_release))
