"""The deploy's steps around the restart: the operator's pre_stop hook, the drain + free-GPU stop, the
post_start hook. Each writes what happened into the host's outcome; a failure ends the deploy there."""

from __future__ import annotations

from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.steps import Step
from specops.errors import ExitCode
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops.engine_stop import Confirm, GpusBusy, stop_engine
from specops.ops.hooks import run_hook
from specops.ops.stop_commands import StopCommands


def pre_stop(spec: HostSpec, release: str, outcome: HostOutcome, reporter: Reporter, action: str = "deploy") -> bool:
    """True when there is no hook or it passed; False (the outcome says why) when it failed: nothing on the
    host has changed yet, and nothing will."""
    if not spec.pre_stop:
        return True
    hook = run_hook("pre_stop", spec.pre_stop, host=spec.name, release=release, action=action)
    outcome.hooks.append(hook)
    reporter.event(Event(spec.name, "pre_stop", hook.summary(), level="info" if hook.ok else "error"))
    if hook.ok:
        return True
    outcome.outcome, outcome.exit_code = Outcome.PREFLIGHT_FAILED, ExitCode.CHECKS_FAILED
    outcome.cause = hook.summary() + "; nothing on the host was changed"
    outcome.hint = f"fix the hook (hosts.{spec.name}.pre_stop) or the system it calls, then deploy again"
    return False


def stop(host: Host, spec: HostSpec, profile: Profile, outcome: HostOutcome, reporter: Reporter, reap: bool,
         confirm: Confirm, step: Step) -> bool:  # fmt: skip
    """Drain, stop, prove the GPUs free. False (the outcome says why, with the fix) when they are not: the new
    engine is not started. `confirm` (the lock's) runs before each command that stops anything; `step`: the
    plan's stop step, whose commands these are."""
    try:
        outcome.stop = stop_engine(host, spec, profile, reporter, reap=reap, confirm=confirm,
                                   commands=StopCommands.planned(step.commands))  # fmt: skip
    except GpusBusy as busy:
        outcome.outcome, outcome.exit_code = Outcome.FAILED, busy.exit_code
        outcome.cause, outcome.hint = busy.message.removeprefix(f"{spec.name}: "), busy.hint
        reporter.event(Event(spec.name, "gpus", outcome.cause.splitlines()[0], level="error"))
        dark = (f"NOTHING SERVES on {spec.name}: {spec.unit_name} was stopped for the deploy and stays stopped; once "
                f"the GPUs are free, `specops restart {spec.name}` or a deploy starts it")  # fmt: skip
        outcome.cause += "\n" + dark
        reporter.event(Event(spec.name, "gpus", dark, level="error"))
        return False
    return True


def post_start(spec: HostSpec, outcome: HostOutcome, reporter: Reporter, action: str = "deploy") -> None:
    """Put the host back, only when a verified engine serves after the restart; otherwise say it stays out."""
    if not spec.post_start:
        return
    serving = outcome.outcome in (Outcome.DEPLOYED, Outcome.STARTED, Outcome.RESTARTED) or (
        outcome.outcome is Outcome.ROLLED_BACK and outcome.rollback is not None and outcome.rollback.ok
    )
    if not serving:
        reporter.event(Event(spec.name, "post_start", "post_start hook not run: no verified engine serves",
                             level="warn"))  # fmt: skip
        return
    hook = run_hook("post_start", spec.post_start, host=spec.name, release=outcome.release, action=action)
    outcome.hooks.append(hook)
    reporter.event(Event(spec.name, "post_start", hook.summary(), level="info" if hook.ok else "warn"))
    if not hook.ok and outcome.exit_code == ExitCode.OK:
        outcome.exit_code = ExitCode.CHECKS_FAILED
        outcome.cause = hook.summary() + f"; {outcome.release} serves, verified, but the hook did not put it back"
