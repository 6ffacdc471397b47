"""`specops restart HOST`: restart the current release's engine under the host's lock, through the deploy's
drain and gates, with an audit line (action "restart").

Why a command of its own: an engine stopped on the host (`systemctl stop`, a crash systemd gave up on) must be
startable without a build in hand, and a restart that bypasses specops (`systemctl restart` on the host) skips
the lock, the drain, the gates and the audit log. The plan (`restart_plan`, pure) is what `--dry-run` prints
and what `restart_host` runs; the steps are the ones a deploy of the same build over a stopped engine runs
(specops/deploy/engine_start.py). Nothing is switched, pushed, marked bad or rolled back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specops.commands.conversation import CONVERSATION_TIMEOUT_S
from specops.commands.manifest import Figures
from specops.commands.release import Listing
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.config.secrets import Secret
from specops.deploy import engine_commands as ecmds
from specops.deploy import engine_start, stop_step
from specops.deploy import step_commands as cmds
from specops.deploy.engine_run import Arrival, EngineRun
from specops.deploy.engine_start import EngineState, read_engine_state
from specops.deploy.engine_steps import EngineSteps
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.rollback import ProfileFor, interrupted_serving, smoke_figures
from specops.deploy.rollback_restore import serve_after_interruption
from specops.deploy.steps import Action, Handler, HostSteps, Step, step_applies
from specops.engine.gates import GateResult
from specops.errors import ChecksFailed, SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.host.conversation import conversation
from specops.ops import audit, interrupts, lock
from specops.ops.lock import LockLost
from specops.ops.release import read_listing

DRY_RUN_TOKEN = Secret("dryrun")


@dataclass(frozen=True)
class RestartOptions:
    lock_wait_s: float = 0.0
    reap: bool = False  # stop orphans of the old engine that still hold the unit's GPUs
    command: str | None = None  # what the lock's holder record shows (default: this process's command line)
    engine: EngineRun | None = None  # a multi-node engine's meeting points: its ranks restart as one
    skip_checks: tuple[str, ...] = ()  # `--skip-check` ids: the engine's dist port test leaves these out


@dataclass
class HostRestart:
    """One host's restart: its outcome (the deploy's record: summary row, --json, audit) and the engine before."""

    outcome: HostOutcome
    before: EngineState = field(default_factory=EngineState)

    def to_json(self) -> dict[str, Any]:
        return {**self.outcome.to_json(), "action": "restart", "engine_before": self.before.describe()}


def lock_steps(spec: HostSpec, token: str, lock_wait_s: float) -> tuple[Step, Step]:
    """The lock and unlock steps, made before the lock is taken: the restart takes it with these commands."""
    lock_step = Step("lock", f"take the lock ({lock.lock_root()}), heartbeat while restarting",
                     (*cmds.conversation_commands(spec), *cmds.lock_commands(token, lock_wait_s)),
                     phase="lock")  # fmt: skip
    return lock_step, Step("unlock", "release the lock", tuple(cmds.unlock_commands(token)))


def read_step(spec: HostSpec) -> Step:
    """What a restart reads under its lock before it plans (`_locked` runs these very commands)."""
    return Step("read", "read the host's releases and whether the engine runs",
                (*cmds.listing_commands(spec), *ecmds.engine_read_commands(spec)))  # fmt: skip


def restart_plan(spec: HostSpec, profile_for: ProfileFor, listing: Listing, engine: EngineState,
                 options: RestartOptions, token: str,
                 locking: tuple[Step, Step] | None = None, read: Step | None = None) -> HostSteps:  # fmt: skip
    """The restart's steps for what the host said; refuses (ChecksFailed, nothing changed) without a current
    release: there is nothing to restart, and starting an unknown tree is a deploy's job. `locking`: the lock
    and unlock steps the restart took its lock with (lock_steps)."""
    current = next((r for r in listing.releases if r.id == listing.current), None)
    if current is None:
        raise ChecksFailed(f"{spec.name}: no current release to restart: nothing was changed",
                           hint=f"deploy one first: specops deploy {spec.name} --build PATH")  # fmt: skip
    profile = profile_for(current.profile)
    lock_step, unlock = locking or lock_steps(spec, token, options.lock_wait_s)
    read = read or read_step(spec)
    middle = [*_dist_port(spec, options), *engine_start.start_steps(spec, profile, current.id, engine, options.reap)]
    record = Step("record", f"append the outcome (action restart) to {spec.service_dir}/audit.jsonl and the local "
                  "audit log", tuple(cmds.record_commands(spec)))  # fmt: skip
    serving = cmds.serving_step(spec)
    verified = "verified" if current.verified else "NOT verified"
    what = "drain and restart" if engine.draining else "start"
    reason = f"{spec.unit_name} is {engine.describe()}: {what} release {current.id} ({verified}) through the gates"
    return HostSteps(host=spec.name, profile=profile.name, action=Action.RESTART, reason=reason,
                     current=listing.current, release=current.id, rollback_to=None, guard=False, push=None,
                     unit_changed=False, unit_diff="",
                     steps=(lock_step, read, *middle, record, serving, unlock))  # fmt: skip


def _dist_port(spec: HostSpec, options: RestartOptions) -> list[Step]:
    """A rank of an engine: the dist port test on every rank at once before any rank stops (engine_steps.py)."""
    run = options.engine
    if run is None or not run.dist_init_addr:
        return []
    step = ecmds.dist_port_step(spec, run.rank(spec.name), len(run.hosts), run.dist_init_addr, options.skip_checks)
    return [step] if step is not None else []


def preview(host: Host, spec: HostSpec, profile_for: ProfileFor, options: RestartOptions) -> HostSteps:
    """`restart --dry-run`: the plan from what the host says now, read without the lock, changing nothing."""
    return restart_plan(spec, profile_for, read_listing(host, spec), read_engine_state(host, spec), options,
                        DRY_RUN_TOKEN)  # fmt: skip


def restart_host(host: Host, spec: HostSpec, profile_for: ProfileFor, reporter: Reporter,
                 options: RestartOptions) -> HostRestart:  # fmt: skip
    """Take the lock (or raise LockHeld), read the host, restart through the gates, audit, release the lock.
    Its commands are requests on one command conversation, as a deploy's (host/conversation.py)."""
    holder = lock.LockHolder.current(options.command)

    def say(text: str) -> None:
        reporter.event(Event(spec.name, "lock", text))

    locking = lock_steps(spec, Secret(holder.token), options.lock_wait_s)
    (command,) = locking[0].part(cmds.CONVERSATION)
    talk = conversation(host, command.argv, lifetime_s=CONVERSATION_TIMEOUT_S)
    planned = lock.LockCommands.planned(locking[0].commands + locking[1].commands)
    run = options.engine  # a rank: locked after the lower ranks, met by the others (deploy/engine_run.py)
    try:
        with talk as on_host:
            if run is not None:
                run.take_turn(run.rank(spec.name))
            with lock.acquire(on_host, holder, wait_s=options.lock_wait_s, on_event=say, commands=planned) as held:
                if run is not None:
                    run.arrive("lock", run.rank(spec.name), Arrival(True))
                return _locked(on_host, spec, profile_for, reporter, options, held, locking)
    finally:
        if run is not None:
            run.leave(run.rank(spec.name), "its restart ended")


def _locked(host: Host, spec: HostSpec, profile_for: ProfileFor, reporter: Reporter, options: RestartOptions,
            held: lock.HostLock, locking: tuple[Step, Step]) -> HostRestart:  # fmt: skip
    read = read_step(spec)
    (listed,), engine_read = (
        read.part(cmds.LISTING),
        (*read.part(ecmds.ENGINE_READ), *read.part(ecmds.LAST_ENTRY)),
    )
    listing, engine = read_listing(host, spec, listed), read_engine_state(host, spec, planned=engine_read)
    steps = restart_plan(spec, profile_for, listing, engine, options, Secret(held.holder.token), locking, read)
    current = next(r for r in listing.releases if r.id == listing.current)
    outcome = HostOutcome(spec.name, Outcome.ERROR, release=current.id, attempted=current.id, previous=current.id,
                          lock_taken_over=held.takeover_note)  # fmt: skip
    run = _Restart(host, spec, profile_for(current.profile), steps, engine, outcome, reporter, options,
                   smoke_figures(current), current.verified, held)  # fmt: skip
    try:
        run.run()
    except KeyboardInterrupt as interruption:  # SIGINT, SIGTERM, SIGHUP: a verified engine serves before the unlock
        _interrupted(host, spec, profile_for, reporter, held, steps, run, interruption)
        raise
    except SpecopsError as error:  # the audit log explains every change to the host, this one too
        outcome.outcome = Outcome.LOCK_LOST if isinstance(error, LockLost) else Outcome.ERROR
        outcome.cause = error.message
        _audit(host, spec, steps, run)
        raise
    _audit(host, spec, steps, run)
    serving = steps.step("serving")  # the summary's last line: what serves now, as read from the host
    outcome.read_serving(host, spec, serving.commands if serving else ())
    return HostRestart(outcome, engine)


def _interrupted(host: Host, spec: HostSpec, profile_for: ProfileFor, reporter: Reporter, held: lock.HostLock,
                 steps: HostSteps, run: _Restart, interruption: KeyboardInterrupt) -> None:  # fmt: skip
    """Start the current release again when its stop had begun (or say why not), note what serves, audit it."""
    restoration = serve_after_interruption(host, spec, profile_for, reporter, held.confirm, stopped=run.stop_asked,
                                           action="restart")  # fmt: skip
    interrupted_serving(interruption, restoration.said(spec))
    run.outcome.outcome = Outcome.INTERRUPTED
    run.outcome.cause = f"interrupted ({interrupts.signal_name(interruption)}): {restoration.said(spec)}"
    with interrupts.shielded(), contextlib.suppress(SpecopsError, OSError):
        _audit(host, spec, steps, run)


@dataclass
class _Restart(EngineSteps):
    """The restart's steps in order, each in its phase (the live view and the timings); a rank of an engine meets
    the others between them (engine_steps.py: rank 0 drains first and proves the engine)."""

    host: Host
    spec: HostSpec
    profile: Profile
    steps: HostSteps
    engine: EngineState
    outcome: HostOutcome
    reporter: Reporter
    options: RestartOptions
    baseline: Figures | None  # the release's own recorded smoke figures: the regression gate's baseline
    verified: bool  # the release passed its gates before (a failure then points at the host)
    held: lock.HostLock
    checks_ok: bool = True
    gates: GateResult | None = None
    stop_asked: bool = False  # the engine's stop may have begun: an interruption starts it again

    def run(self) -> None:
        handlers: dict[Handler, Callable[[Step], None]] = {
            Handler.PRE_STOP: self._pre_stop, Handler.STOP: self._stop, Handler.GATES: self._gates,
            Handler.STARTED: self._started, Handler.START_FAILED: self._failed, Handler.POST_START: self._post_start,
            Handler.DIST_PORT: self._dist_port,
        }  # fmt: skip
        self._engine_planned()  # a rank: every rank restarts the same release
        for step in self.steps.steps:
            if step.handler is Handler.OUTSIDE or not step_applies(step.when, self.checks_ok, self.gates):
                continue
            self._engine_before(step)
            self.held.confirm(f"the {step.name} step")  # lost: no longer sure to be the only one changing it
            if step.phase is not None:
                self.reporter.event(Event(self.spec.name, step.phase, self._message(step)))
            started = time.monotonic()
            try:
                handlers[step.handler](step)
            finally:
                if step.phase is not None:
                    self.outcome.phases[step.phase] = time.monotonic() - started
            self._engine_after(step)

    def _message(self, step: Step) -> str:
        unit = self.spec.unit_name
        return {
            "stop": f"draining and stopping {unit}" if self.engine.draining else f"making sure {unit} is stopped",
            "gates": "restarting, then readiness and the smoke gate",
        }.get(step.name, step.summary)

    def _pre_stop(self, _step: Step) -> None:
        self.checks_ok = stop_step.pre_stop(self.spec, self.steps.release, self.outcome, self.reporter, "restart")

    def _stop(self, step: Step) -> None:
        self.outcome.release = None  # from here on nothing serves until the gates pass
        self.stop_asked = True
        self.checks_ok = stop_step.stop(self.host, self.spec, self.profile, self.outcome, self.reporter,
                                        self.options.reap, self.held.confirm, step)  # fmt: skip

    def _gates(self, step: Step) -> None:
        self.gates = self._gate_fn("gates")(self.host, self.spec, self.profile, self.baseline, self.reporter,
                                      planned=step.commands)  # fmt: skip
        self.outcome.gates = self.gates

    def _started(self, step: Step) -> None:
        assert self.gates is not None
        engine_start.record_started(self.host, self.spec, step, self.steps.release, self.gates, self.outcome,
                                    Outcome.RESTARTED)  # fmt: skip
        self.outcome.cause = engine_start.started_note(self.engine)

    def _failed(self, _step: Step) -> None:
        assert self.gates is not None
        engine_start.start_failed(self.spec, self.steps.release, self.gates, self.outcome, self.engine, self.verified)

    def _post_start(self, _step: Step) -> None:
        stop_step.post_start(self.spec, self.outcome, self.reporter, "restart")


def _audit(host: Host, spec: HostSpec, steps: HostSteps, run: _Restart) -> None:
    outcome = run.outcome
    entry = audit.new_entry("restart", outcome=str(outcome.outcome), from_release=steps.release,
                            to_release=steps.release, profile=steps.profile, phases=outcome.phases,
                            gates=outcome.gates.to_json() if outcome.gates else {}, message=outcome.cause)  # fmt: skip
    entry["engine_before"] = run.engine.describe()
    if outcome.stop is not None:
        entry["drain"] = outcome.stop.drain.to_json()
    if outcome.lock_taken_over:
        entry["lock_taken_over"] = outcome.lock_taken_over
    record = steps.step("record")
    audit.record(host, spec, entry, planned=[command.argv for command in record.commands] if record else ())
