"""Deploy one host: take the lock, read the host, plan (specops/deploy/plan.py), then execute the plan's steps.

Either a verified new release is serving at the end, or the last verified one is back (and says why), or,
with --no-rollback, the failed release is left running for debugging. Every exit path releases the lock
(Ctrl-C included) and the host-side guard covers the paths where this process cannot (kill -9). Between
steps the deploy stops when it was interrupted or when its lock was lost (someone removed or took it over):
it can no longer be sure it is the only one changing this host.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from specops.commands.cache import cache_key
from specops.commands.conversation import CONVERSATION_TIMEOUT_S
from specops.config.secrets import Secret
from specops.deploy import engine_start, stop_step
from specops.deploy.blame import environment_hint, failed_gates_blame
from specops.deploy.engine_run import Arrival
from specops.deploy.engine_steps import EngineSteps
from specops.deploy.fixed_steps import FixedSteps
from specops.deploy.host_state import bad_build_warnings, read_state
from specops.deploy.outcome import HostOutcome, Outcome, PushFigures
from specops.deploy.plan import DeployOptions, DeployPlan, HostPlan, lock_steps, plan_steps
from specops.deploy.preflight_step import PreflightStep
from specops.deploy.record import record_outcome, record_stop
from specops.deploy.rollback import ProfileFor, interrupted_serving, rollback_host
from specops.deploy.rollback_restore import serve_after_interruption
from specops.deploy.smoke_baseline import last_verified_figures, release_figures
from specops.deploy.step_commands import CONVERSATION, PUSH_SESSION
from specops.deploy.steps import Action, Handler, HostSteps, Step, step_applies
from specops.engine.gates import GateResult
from specops.errors import ConnectError, ExitCode, RemoteTimeout, SpecopsError
from specops.events import DONE_PHASE, ByteProgress, Event, Reporter
from specops.host.base import Host
from specops.host.conversation import conversation
from specops.ops import cache as compile_cache
from specops.ops import interrupts, lock
from specops.ops.lock import LockLost
from specops.ops.release import PushSession, open_push

__all__ = ["DeployOptions", "HostOutcome", "LockLost", "Outcome", "deploy_host"]

PARTIAL_OUTCOME = "host_outcome"  # on a SpecopsError that stopped a deploy: the HostOutcome as far as it got
PHASE_MESSAGES = {
    "push": "sending the release",
    "preflight": "running the doctor's checks on the candidate",
    "unit": "recording the release's env file, installing the unit",
    "env": "writing the env file",
    "gates": "waiting for readiness, then the smoke gate",
}


def deploy_host(
    plan: DeployPlan,
    host_plan: HostPlan,
    options: DeployOptions,
    reporter: Reporter,
    open_host: Callable[[], AbstractContextManager[Host]],
    profile_for: ProfileFor,
) -> HostOutcome:
    """The whole deploy on one host; connection/lock errors propagate (the fleet runner maps them)."""
    spec = host_plan.target.host
    outcome = HostOutcome(host=spec.name, outcome=Outcome.ERROR)

    def say(text: str) -> None:
        reporter.event(Event(spec.name, "lock", text))

    holder = lock.LockHolder.current(options.command)
    locking = lock_steps(spec, Secret(holder.token), options.lock_wait_s)  # the plan's own lock and unlock steps
    (talk,), (push,) = locking[0].part(CONVERSATION), locking[0].part(PUSH_SESSION)
    locked = False
    deploy: _HostDeploy | None = None
    engine = options.engine  # a rank of a multi-node engine: its lock waits for the lower ranks' (engine_run.py)
    try:
        if engine is not None:
            engine.take_turn(engine.rank(spec.name))
        # Both execs start at once (two login shells side by side); the push session lists the releases only
        # once the lock is held, and the conversation answers its first request (the lock) once it is up.
        with open_host() as connection, conversation(connection, talk.argv,
                                                      lifetime_s=CONVERSATION_TIMEOUT_S) as host:  # fmt: skip
            with (
                open_push(host, spec, max_bytes=plan.staged.total_bytes, on_request=True,
                          wait_s=options.lock_wait_s, planned=push) as session,
                lock.acquire(host, holder, wait_s=options.lock_wait_s, on_event=say,
                             commands=lock.LockCommands.planned(locking[0].commands + locking[1].commands)) as held,
            ):  # fmt: skip
                locked = True
                if engine is not None:
                    engine.arrive("lock", engine.rank(spec.name), Arrival(True))
                outcome.lock_taken_over = held.takeover_note
                deploy = _HostDeploy(host, held, plan, host_plan, options, outcome, reporter, profile_for, locking)
                deploy.run(session)
            steps: HostSteps | None = getattr(deploy, "steps", None)  # None: a deploy that stopped before its plan
            serving, record = (steps.step("serving"), steps.step("record")) if steps else (None, None)
            outcome.read_serving(host, spec, serving.commands if serving else ())
            record_outcome(open_host, host_plan, options, outcome, host=host, record=record)
    except BaseException as error:  # the summary names the cause; this only ends the host's live row
        if locked and isinstance(error, SpecopsError | KeyboardInterrupt):
            planned: HostSteps | None = getattr(deploy, "steps", None)  # its record step, once it planned
            record_stop(open_host, host_plan, options, outcome, error, reporter, lock_lost=isinstance(error, LockLost),
                        record=planned.step("record") if planned else None)  # fmt: skip
        if deploy is not None and isinstance(error, RemoteTimeout | ConnectError):  # the host stopped answering
            outcome.after = outcome.lost(deploy.phase)
        if isinstance(error, SpecopsError | KeyboardInterrupt):  # what it knew reaches the summary and --json
            setattr(error, PARTIAL_OUTCOME, outcome)  # an attribute the exception itself does not declare
        reporter.event(Event(spec.name, DONE_PHASE, f"stopped: {ExitCode.cause(error)}", level="error"))
        if engine is not None:
            engine.leave(engine.rank(spec.name), f"stopped: {ExitCode.cause(error)}")
        raise
    finally:
        if engine is not None:  # the other ranks no longer wait for this one
            engine.leave(engine.rank(spec.name), outcome.cause or "ended")
    now = outcome.final_line().removeprefix(f"{spec.name}: ") or f"serving {outcome.release or 'no release'}"
    message = f"{outcome.outcome}; {now}"
    reporter.event(Event(spec.name, DONE_PHASE, message, level="info" if outcome.ok else "warn"))
    return outcome


@dataclass
class _HostDeploy(FixedSteps, PreflightStep, EngineSteps):
    """One locked deploy on one connected host: reads the host, plans, and runs the plan's steps in order."""

    host: Host
    held: lock.HostLock
    plan: DeployPlan
    host_plan: HostPlan
    options: DeployOptions
    outcome: HostOutcome
    reporter: Reporter
    profile_for: ProfileFor
    locking: tuple[Step, Step]  # the lock and unlock steps the lock was taken with: the plan holds these

    def __post_init__(self) -> None:
        self.spec = self.host_plan.target.host
        self.profile = self.host_plan.target.profile
        self.checks_ok = True
        self.gates: GateResult | None = None
        self.facts_record: dict[str, object] = {}  # the candidate's environment fingerprint, for the manifest
        self.cache_key = cache_key(None, None, [])  # replaced by the preflight's facts
        self.stop_asked = False  # the serving engine's stop may have begun: an interruption starts it again
        self.guarded = False  # the host-side rollback guard is armed (it acts once the lock is released)
        self.phase = "lock"  # the phase under way: a host that stops answering is said lost in it

    def run(self, session: PushSession) -> None:
        """The deploy; interrupted (SIGINT, SIGTERM, SIGHUP), it leaves a verified release serving (or says who
        puts one back, or that nothing serves) before the lock is released, and notes which."""
        try:
            self._run(session)
        except KeyboardInterrupt as interruption:
            if not getattr(interruption, "__notes__", None):  # the automatic rollback has not said it already
                restoration = serve_after_interruption(self.host, self.spec, self.profile_for, self.reporter,
                                                       self.held.confirm, stopped=self.stop_asked, action="deploy",
                                                       guarded=self.guarded)  # fmt: skip
                interrupted_serving(interruption, self.outcome.after_interruption(restoration, self.spec))
            self.outcome.after = interruption.__notes__[-1]
            raise

    def _run(self, session: PushSession) -> None:
        """`session`: the push conversation, started with the deploy; the listing is read from it now (locked)."""
        self.state = read_state(self.host, session, self.plan.staged, self.host_plan)
        token = Secret(self.held.holder.token)
        self.steps = plan_steps(self.plan.staged, self.host_plan, self.state, self.options, token, self.locking)
        self.outcome.previous = self.outcome.release = self.state.listing.current
        for line in bad_build_warnings(
            self.state.listing, self.plan.staged.tree_hash, self.profile.name, self.spec.name
        ):
            self.reporter.event(Event(self.spec.name, "read", line, level="warn"))
        self.outcome.attempted = self.steps.release
        self._engine_planned()  # a rank: every rank plans the same release, or none goes on
        if self.steps.action is Action.UNCHANGED:
            self.outcome.outcome, self.outcome.cause = Outcome.UNCHANGED, self.steps.reason
            return
        push = self.steps.step("push")  # None: the same release, its stopped engine started (Action.START)
        if push is not None:
            self._run_step(push, lambda: self._push(session))  # on the conversation the listing came from
        session.close()  # pushed (or nothing to push): the host script exits
        for step in self.steps.steps:
            if step.handler not in (Handler.OUTSIDE, Handler.PUSH) and self._applies(step):
                self._engine_before(step)
                self._run_step(step, functools.partial(self._handlers()[step.handler], step))
                self._engine_after(step)

    def _applies(self, step: Step) -> bool:
        return step_applies(step.when, self.checks_ok, self.gates)

    def _run_step(self, step: Step, handler: Callable[[], None]) -> None:
        """A step boundary: stop here when interrupted or when the lock is no longer ours."""
        if self.options.cancel is not None and self.options.cancel.is_set():
            raise interrupts.again()  # a worker thread stops at the next step, put back what served, unlocks
        self.held.confirm(f"the {step.name} step")  # LockLost: someone else may be changing this host now
        if step.phase is None:
            handler()
            return
        with self._phase(step.phase, self._message(step)):
            handler()

    def _message(self, step: Step) -> str:
        if step.name == "switch":
            return f"switching current to {self.steps.release} and restarting"
        if step.name == "rollback":
            return f"rolling back to {self.steps.rollback_to}"
        if step.name == "stop":
            return f"draining and stopping {self.spec.unit_name}"
        return PHASE_MESSAGES.get(step.name, step.summary)

    @contextmanager
    def _phase(self, name: str, message: str) -> Iterator[None]:
        self.reporter.event(Event(self.spec.name, name, message))
        self.phase = name
        started = time.monotonic()
        try:
            yield
        finally:
            self.outcome.phases[name] = time.monotonic() - started

    def _handlers(self) -> dict[Handler, Callable[[Step], None]]:
        """What runs each step the plan names (Step.handler); a handler runs its step's own commands."""
        return {
            Handler.PREFLIGHT: self._preflight, Handler.UNIT: self._unit, Handler.ARM: self._arm,
            Handler.SWITCH: self._switch, Handler.GATES: self._gates, Handler.VERIFIED: self._verified,
            Handler.FAILED: self._failed, Handler.ROLLBACK: self._rollback, Handler.DISARM: self._disarm,
            Handler.WATCH: self._watch, Handler.PRE_STOP: self._pre_stop, Handler.STOP: self._stop,
            Handler.POST_START: self._post_start, Handler.ENV: self._env, Handler.STARTED: self._started,
            Handler.START_FAILED: self._start_failed, Handler.DIST_PORT: self._dist_port,
        }  # fmt: skip

    def _start_failed(self, _step: Step) -> None:
        assert self.gates is not None
        engine_start.start_failed(self.spec, self.steps.release, self.gates, self.outcome, self.state.engine)

    def _pre_stop(self, _step: Step) -> None:
        self.checks_ok = stop_step.pre_stop(self.spec, self.steps.release, self.outcome, self.reporter)

    def _stop(self, step: Step) -> None:
        """A stop that leaves the GPUs busy ends the deploy: no engine is started on them, and the guard (which
        would start the last verified release on them) is disarmed; the outcome names the holders and the fix."""
        self.stop_asked = True
        if stop_step.stop(self.host, self.spec, self.profile, self.outcome, self.reporter, self.options.reap,
                          self.held.confirm, step):  # fmt: skip
            return
        self.checks_ok = False
        disarm = self.steps.step("disarm")  # planned with every guard
        if self.steps.guard and disarm is not None:
            self._disarm(disarm)

    def _post_start(self, _step: Step) -> None:
        stop_step.post_start(self.spec, self.outcome, self.reporter)

    def _push(self, session: PushSession) -> None:
        push = self.steps.push
        if push is None:  # this exact tree is on the host already
            return
        base = next((r for r in self.state.listing.releases if r.id == push.base), None)  # None: send everything
        on_bytes = ByteProgress(self.reporter, self.spec.name, "push")
        result = session.push(self.plan.staged, base=base, on_bytes=on_bytes)
        self.outcome.push = PushFigures(result.sent_files, result.sent_bytes, result.linked_files, result.base_id,
                                        result.seconds)  # fmt: skip

    def _gates(self, step: Step) -> None:
        listing, release = self.state.listing, self.steps.release
        starts = self.steps.action is Action.START  # the same release again: its own figures are the baseline
        previous = last_verified_figures(listing, self.profile.name, exclude=None if starts else release)
        speedup_baseline = release_figures(listing, self.profile.smoke.baseline_release)
        expected = compile_cache.expected_downtime(listing.releases, listing.current)
        if expected is not None:
            self.reporter.event(Event(self.spec.name, "gates", expected))
        self.gates = self._gate_fn("gates")(self.host, self.spec, self.profile, previous, self.reporter,
                                      cancel=self.options.cancel, speedup_baseline=speedup_baseline,
                                      planned=step.commands)  # fmt: skip
        self.outcome.gates = self.gates

    def _rollback(self, step: Step) -> None:
        assert self.gates is not None and self.steps.rollback_to is not None
        blame = failed_gates_blame(self.host, self.spec, self.steps.config, self.gates, self.steps.rollback_to,
                                   self.facts_record)  # fmt: skip
        self.outcome.culprit = blame.culprit
        if not blame.roll_back:  # the host's fault, and the target would meet it too: nothing is marked
            self.outcome.blame = blame.reason
            self.outcome.hint = environment_hint(self.spec.name, self.gates)
            self.reporter.event(Event(self.spec.name, "rollback", blame.reason, level="warn"))
            return
        reason = f"deploy of {self.steps.release} failed: {self.gates.cause}"
        result = rollback_host(self.host, self.spec, self.profile_for, self.steps.rollback_to, reason, self.reporter,
                               reap=self.options.reap, confirm=self._rollback_confirm(self.held.confirm),
                               not_marked="" if blame.marks_bad else blame.reason, planned=step.commands,
                               cause=self.gates.cause, gate=self._gate_fn("rollback"))  # fmt: skip
        self.outcome.rolled_back(result)
