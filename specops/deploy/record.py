"""The deploy's audit line: on the host and locally, for a deploy that ended with an outcome and for one that
stopped with an error after taking its lock (the audit log must explain every change to a host)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.plan import DeployOptions, HostPlan
from specops.deploy.step_commands import record_commands
from specops.deploy.steps import Step
from specops.errors import ConnectError, SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops import audit, interrupts
from specops.ops.interrupts import signal_name


def record_stop(
    open_host: Callable[[], AbstractContextManager[Host]], host_plan: HostPlan, options: DeployOptions,
    outcome: HostOutcome, error: SpecopsError | KeyboardInterrupt, reporter: Reporter, *, lock_lost: bool,
    record: Step | None = None,
) -> None:  # fmt: skip
    """A deploy that stopped with an error under its lock is audited too (outcome "error", the cause), and one
    interrupted by a signal (outcome "interrupted", the signal and what serves now): the log must explain every
    change to the host. Best effort: a second failure here never hides the first, nor does a second signal."""
    if isinstance(error, KeyboardInterrupt):
        what = "; ".join(getattr(error, "__notes__", [])) or "nothing was changed on the host"
        outcome.outcome, outcome.cause = Outcome.INTERRUPTED, f"interrupted ({signal_name(error)}): {what}"
    else:
        outcome.outcome = Outcome.LOCK_LOST if lock_lost else Outcome.ERROR
        outcome.cause = error.message
    try:
        with interrupts.shielded():
            record_outcome(open_host, host_plan, options, outcome, record=record)
    except Exception as failure:  # the deploy's own error is what the operator must see
        reporter.event(Event(host_plan.target.host.name, "record", f"audit not written: {failure}", level="warn"))


def record_outcome(
    open_host: Callable[[], AbstractContextManager[Host]], host_plan: HostPlan, options: DeployOptions,
    outcome: HostOutcome, host: Host | None = None, record: Step | None = None,
) -> None:  # fmt: skip
    """The audit line, on the host and locally: on the deploy's own connection (`host`) when it is given and
    still answers, else on a fresh one (after an error the deploy's may be gone); with the commands of the plan's
    record step (`record`; the same ones when no plan was made yet: the deploy stopped before it)."""
    planned = [command.argv for command in (record.commands if record else record_commands(host_plan.target.host))]
    entry = audit.new_entry(
        "deploy", outcome=str(outcome.outcome), from_release=outcome.previous, to_release=outcome.attempted,
        profile=host_plan.target.profile.name, phases=outcome.phases,
        gates=outcome.gates.to_json() if outcome.gates else {}, forced=options.force, message=outcome.cause,
    )  # fmt: skip
    entry.update({key: lines for key, lines in outcome.check_lines().items() if lines})  # what it went past
    if outcome.stop is not None:
        entry["drain"] = outcome.stop.drain.to_json()
    if outcome.rollback is not None:
        entry["rollback"] = outcome.rollback.to_json()
    if outcome.lock_taken_over:
        entry["lock_taken_over"] = outcome.lock_taken_over
    local = True
    if host is not None:
        try:
            audit.record(host, host_plan.target.host, entry, planned=planned)
            return
        except ConnectError:  # the connection died after the deploy: the host's line goes over a new one
            local = False  # the local line is written already
    with open_host() as fresh:
        audit.record(fresh, host_plan.target.host, entry, local=local, planned=planned)
