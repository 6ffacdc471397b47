"""Start the current release's engine again, through the same drain and gates as a deploy.

Two paths come here: a deploy whose exact build is current and verified, with this unit, but whose engine is
not running (someone stopped it on the host, or it died and systemd gave up): that deploy is not "unchanged",
it starts the engine (Action.START); and `specops restart HOST` (specops/deploy/restart.py). Both plan the same
steps (`start_steps`, pure: the dry run prints them) and end the same way: on success the release's manifest
records the new gates (`last_gates`); on failure the release stays verified and is not marked bad, because it
passed these gates before and nothing of it changed: the host is the suspect, and the outcome names the cause
the journal gave.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from specops.commands.unit import all_enabled, parse_show_units
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.deploy import engine_commands as ecmds
from specops.deploy import step_commands as cmds
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.steps import Condition, Handler, HostCommand, Step
from specops.engine.gates import GateResult
from specops.errors import ExitCode
from specops.host.base import Host
from specops.ops.planned import script_reply
from specops.ops.status import stopped_since

READ_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class EngineState:
    """The unit's state as systemd reports it before anything changes (`since`: when it last went inactive)."""

    active: str = "active"
    sub: str = "running"
    since: str = ""
    answering: bool = True  # an active unit's HTTP server answered (False: active, but nothing answers)
    enabled: bool = False  # the engine's unit and the boot unit are both enabled (UnitFileState): no enable needed

    @property
    def running(self) -> bool:
        """Active and answering: what a deploy may call unchanged."""
        return self.active == "active" and self.answering

    @property
    def draining(self) -> bool:
        """Whether a process of the engine may hold requests: then it is drained before the restart."""
        return self.active == "active"

    @property
    def verdict(self) -> str:
        """`inactive`, `failed`, `activating`... or `active but not answering`."""
        return "active but not answering" if self.active == "active" and not self.answering else self.active

    @property
    def shown(self) -> str:
        return f"{self.active}/{self.sub}"

    def describe(self) -> str:
        """`inactive/dead since Wed 2026-12-02 07:01:02 UTC` (without `since` when systemd gave no time)."""
        if self.active == "active":
            return self.shown + ("" if self.answering else ", its HTTP server not answering")
        return self.shown + (f" since {self.since}" if self.since else "")


def read_engine_state(host: Host, spec: HostSpec, *, ask_http: bool = True,
                      planned: Sequence[HostCommand] = ()) -> EngineState:  # fmt: skip
    """Whether the engine runs: one request, and for an active unit one HTTP request to the engine (through the
    SSH connection, no host command) unless `ask_http` is False (then an active unit counts as answering). An
    answer systemd could not give reads as not running. `planned`: the read step's commands (the plan's own;
    default: the same ones, ecmds.engine_read_commands)."""
    state, last = planned or ecmds.engine_read_commands(spec)
    result = host.run(state.argv, timeout=READ_TIMEOUT_S, check=False)
    units = parse_show_units(result.text) if result.ok else []
    show = units[0] if units else {}
    active = show.get("ActiveState", "").strip() or "unknown"
    since = stopped_since(host, show, spec.unit_name, last.argv) if active != "active" else ""
    answering = active != "active" or not ask_http or engine_answers(host, spec)
    return EngineState(active, show.get("SubState", "").strip() or "?", since, answering,
                       len(units) == 2 and all_enabled(units))  # fmt: skip


def engine_answers(host: Host, spec: HostSpec) -> bool:
    """An active unit's engine answers HTTP (one request through the SSH connection: no host command)."""
    from specops.engine.client import EngineClient

    with EngineClient(host, spec) as engine:
        return engine.answers()


def start_steps(spec: HostSpec, profile: Profile, release_id: str, engine: EngineState, reap: bool) -> list[Step]:
    """Drain (when something runs), restart, readiness and smoke; then record the gates, or name the cause."""
    ok, passed, failed = Condition.CHECKS_PASS, Condition.GATES_PASS, Condition.GATES_FAIL
    steps: list[Step] = []
    if engine.draining and spec.pre_stop:
        steps.append(pre_stop_step(spec, "here"))
    drain_s = profile.drain.timeout_s
    reap_note = "; --reap: stop orphans of the old engine" if reap else "; anything left there stops here"
    if engine.draining:
        stop = f"drain and stop {spec.unit_name} (SIGTERM, up to {drain_s} s for running requests)"
    else:
        stop = f"{spec.unit_name} is {engine.shown}: nothing to drain; make sure it is stopped"
    steps.append(Step("stop", f"{stop}, then wait for its cgroup and GPUs to be free{reap_note}",
                      tuple(ecmds.stop_commands(spec, drain_s)), ok, phase="drain", handler=Handler.STOP))  # fmt: skip
    gates = f"restart {spec.unit_name}, readiness (deadline {profile.readiness.timeout_s} s, extended while loading)"
    steps.append(Step("gates", gates + ", then the smoke gate", tuple(ecmds.gates_commands(spec)), ok, phase="gates",
                      handler=Handler.GATES))  # fmt: skip
    steps.append(Step("started", f"record the gates in {release_id}'s manifest (last_gates)",
                      (cmds.manifest_update(spec, release_id, '{"last_gates": ..., "last_started_at": ...}'),),
                      passed, handler=Handler.STARTED))  # fmt: skip
    steps.append(Step("start-failed", f"name the cause from the journal; {release_id} stays verified and is not "
                      "marked bad (it passed these gates before: the host is the suspect)", (), failed,
                      handler=Handler.START_FAILED))  # fmt: skip
    if spec.post_start:
        steps.append(post_start_step(spec))
    return steps


def pre_stop_step(spec: HostSpec, stops: str) -> Step:
    """The operator's pre_stop hook, run on this machine before the engine is drained; `stops`: what a failure
    stops ("here", "the deploy here")."""
    summary = f"run the pre_stop hook on this machine: {' '.join(spec.pre_stop or [])}; a failure stops {stops}"
    return Step("pre_stop", summary, (), Condition.CHECKS_PASS, phase="pre_stop", handler=Handler.PRE_STOP)


def post_start_step(spec: HostSpec) -> Step:
    """The operator's post_start hook, run on this machine once a verified engine serves."""
    summary = (
        f"run the post_start hook on this machine: {' '.join(spec.post_start or [])}; only once a verified "
        "engine serves"
    )
    return Step("post_start", summary, (), Condition.CHECKS_PASS, phase="post_start", handler=Handler.POST_START)


def record_started(host: Host, spec: HostSpec, step: Step, release_id: str, gates: GateResult,
                   outcome: HostOutcome, done: Outcome) -> None:  # fmt: skip
    """The gates passed: the manifest keeps them beside the deploy's own (which stay what verified it); `step`:
    the plan's "started" step, whose update-manifest command this runs."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    (manifest,) = step.commands
    script_reply(host, spec, manifest, {"last_gates": gates.to_json(), "last_started_at": now})
    outcome.outcome, outcome.release = done, release_id


def started_note(engine: EngineState) -> str:
    """What the summary says of a start that passed its gates ("" for a plain restart of a serving engine)."""
    if not engine.draining:
        return f"started the stopped engine ({engine.describe()}); verified"
    return "" if engine.answering else f"restarted the engine that did not answer ({engine.describe()}); verified"


def start_failed(spec: HostSpec, release_id: str, gates: GateResult, outcome: HostOutcome, engine: EngineState,
                 verified: bool = True) -> None:  # fmt: skip
    """The gates failed: nothing serves. The cause is the journal's; the release's marks are left as they were."""
    was = "engine" if engine.draining else "stopped engine"
    outcome.outcome, outcome.exit_code, outcome.release = Outcome.FAILED, ExitCode.CHECKS_FAILED, None
    outcome.cause = f"the {was} of {release_id} did not start: {gates.cause}; nothing serves"
    logs = f"`specops logs {spec.name} --since deploy` and `specops doctor {spec.name}` say what changed"
    why = ("passed these gates before and stays verified (not marked bad): the host is the suspect" if verified
           else f"was never verified: deploy a verified build or `specops rollback {spec.name}`")  # fmt: skip
    outcome.hint = f"{release_id} {why}; {logs}"
