"""The steps of a deploy that changes the release: each defined once, here, with its host commands and handler.

Why one definition: `specops deploy --dry-run` prints these steps and `specops deploy` runs them. A step holds
the HostCommand objects it runs (specops/deploy/step_commands.py builds them) and names its handler
(specops/deploy/steps.py Handler); the handlers of the steps whose commands are fixed when planning (the unit,
the guard, the switch, the records, the watch) run exactly these objects (specops/deploy/fixed_steps.py), so no
command line is written twice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from specops.config.waivers import waiver_reasons
from specops.deploy import engine_commands as ecmds
from specops.deploy import step_commands as cmds
from specops.deploy.blame import blame_for_failed_gates
from specops.deploy.engine_start import post_start_step, pre_stop_step
from specops.deploy.steps import Condition, Handler, PushPlan, Step
from specops.ops.guard import UNIT_PROBE, watch_settings

if TYPE_CHECKING:
    from specops.deploy.plan import Choice, DeployOptions, HostPlan

OK, PASSED, FAILED = Condition.CHECKS_PASS, Condition.GATES_PASS, Condition.GATES_FAIL


def deploy_steps(
    host_plan: HostPlan, choice: Choice, push: PushPlan | None, guard: bool, options: DeployOptions,
    enabled: bool = False,
) -> list[Step]:  # fmt: skip
    """From the push to the watch, both branches of the gates included; `guard`: a rollback guard is armed;
    `enabled`: both units were enabled when the host was read (the unit step does not enable them again)."""
    spec, release_id = host_plan.target.host, choice.release_id
    steps = [Step("push", _push_summary(release_id, push, choice), phase="push", handler=Handler.PUSH)]
    candidate = f"{spec.service_dir}/releases/{release_id}"
    steps.append(Step("preflight", _preflight_summary(host_plan, options),
                      tuple(cmds.preflight_commands(spec, candidate, release_id)), phase="preflight",
                      handler=Handler.PREFLIGHT))  # fmt: skip
    rank = host_plan.target.rank
    if rank is not None:
        dist = ecmds.dist_port_step(spec, rank.rank, rank.nnodes, rank.dist_init_addr, options.skip_checks)
        steps += [dist] if dist is not None else []
    if spec.pre_stop:
        steps.append(pre_stop_step(spec, "the deploy here"))
    unit = f"write {spec.env_file} (0600)" + (f" and {spec.unit_name} (changed)" if choice.unit_changed
                                              else f"; {spec.unit_name} unchanged")  # fmt: skip
    env_lines = len(host_plan.env_text.splitlines())
    unit_cmds = cmds.unit_commands(spec, release_id, choice.unit_changed, env_lines, enabled)
    steps.append(Step("unit", unit, tuple(unit_cmds), OK, phase="unit", handler=Handler.UNIT))
    target = choice.rollback_to.id if choice.rollback_to else ""
    if guard:
        steps.append(Step("guard", f"arm the host-side rollback guard (rolls back to {target} if this deploy dies)",
                          tuple(cmds.guard_commands(spec, release_id, target)), OK, handler=Handler.ARM))  # fmt: skip
    else:  # a crashed deploy's guard would otherwise roll this release back once the lock is gone
        steps.append(Step("disarm-leftover", "disarm any rollback guard an earlier deploy left (this deploy arms "
                          "none)", tuple(cmds.disarm_commands(spec)), OK, handler=Handler.DISARM))  # fmt: skip
    steps.append(Step("switch", f"point current at {release_id}", tuple(cmds.switch_commands(spec, release_id)),
                      OK, phase="switch", handler=Handler.SWITCH))  # fmt: skip
    return [*steps, *_restart_steps(host_plan, options), *_after_gates(host_plan, choice, guard)]


def _restart_steps(host_plan: HostPlan, options: DeployOptions) -> list[Step]:
    spec, profile = host_plan.target.host, host_plan.target.profile
    drain_s = profile.drain.timeout_s
    reap = "; --reap: stop orphans of the old engine" if options.reap else "; anything left there stops the deploy"
    stop = Step("stop", f"drain and stop {spec.unit_name} (SIGTERM, up to {drain_s} s for running requests), "
                f"then wait for its cgroup and GPUs to be free{reap}", tuple(ecmds.stop_commands(spec, drain_s)),
                OK, phase="drain", handler=Handler.STOP)  # fmt: skip
    gates = f"restart {spec.unit_name}, readiness (deadline {profile.readiness.timeout_s} s, extended while loading)"
    return [stop, Step("gates", gates + ", then the smoke gate", tuple(ecmds.gates_commands(spec)), OK,
                       phase="gates", handler=Handler.GATES)]  # fmt: skip


def _after_gates(host_plan: HostPlan, choice: Choice, guard: bool) -> list[Step]:
    """Record the gates (verified or failed), roll back, disarm the guard, hand over to its watch."""
    spec, profile, release_id = host_plan.target.host, host_plan.target.profile, choice.release_id
    protect = {release_id} | ({choice.rollback_to.id} if choice.rollback_to else set())
    steps = [Step("verified", f"record the gates in {release_id}'s manifest, prune old releases",
                  tuple(cmds.verified_commands(spec, release_id, protect)), PASSED, handler=Handler.VERIFIED),
             Step("failed", f"record the failed gates in {release_id}'s manifest" + _after_failure(choice, guard),
                  tuple(cmds.failed_commands(spec, release_id)), FAILED, handler=Handler.FAILED)]  # fmt: skip
    if guard and choice.rollback_to is not None:
        reason = f"deploy of {release_id} failed: {cmds.CAUSE_PLACEHOLDER}"
        blame = blame_for_failed_gates(choice.config)
        marking = (f"{release_id} marked bad, unless the engine's journal names a fault of the host (then nothing is "
                   "marked, and the rollback runs only to a release verified on this environment)" if blame.marks_bad
                   else f"{release_id} NOT marked bad ({blame.reason})")  # fmt: skip
        commands = cmds.rollback_commands(spec, choice.rollback_to.id, reason, profile.drain.timeout_s,
                                          not blame.marks_bad, host_blamed=blame.marks_bad)  # fmt: skip
        steps.append(Step("rollback", f"roll back to {choice.rollback_to.id} with its unit and env file, then the "
                          f"same gates; {marking}", tuple(commands), FAILED, phase="rollback",
                          handler=Handler.ROLLBACK))  # fmt: skip
    watch = watch_settings(spec, profile) if guard else None
    rank = host_plan.target.rank
    if watch is not None and rank is not None and not rank.serves_http:  # a worker: no HTTP, its unit is watched
        watch = replace(watch, url=f"{UNIT_PROBE}{spec.unit_name}")
    if guard:
        summary = "disarm the rollback guard" + (" (unless the watch step below runs: it disarms first)"
                                                 if watch is not None else "")  # fmt: skip
        steps.append(Step("disarm", summary, tuple(cmds.disarm_commands(spec, watched=watch is not None)), OK,
                          handler=Handler.DISARM))  # fmt: skip
    if watch is not None:
        target = choice.rollback_to.id if choice.rollback_to else ""
        probe = "/health_generate" if watch.url.startswith("http") else f"checks of {spec.unit_name} (a dead worker)"
        summary = (f"the guard keeps watching {release_id} for {watch.window_s} s: {watch.failures} failed "
                   f"{probe} in a row roll it back to {target}")  # fmt: skip
        steps.append(Step("watch", summary, tuple(cmds.watch_commands(spec, release_id, watch, target)), PASSED,
                          handler=Handler.WATCH))  # fmt: skip
    if spec.post_start:
        steps.append(post_start_step(spec))
    return steps


def _preflight_summary(host_plan: HostPlan, options: DeployOptions) -> str:
    """Which checks are waived (and why), and what a failure of the others does."""
    reasons = waiver_reasons(host_plan.target.host.waive, options.skip_checks)
    waived = "; waived: " + ", ".join(f"{check} ({reason})" for check, reason in reasons.items()) if reasons else ""
    others = " of another check" if reasons else ""
    then = ("; --force: deploy anyway, naming each failing check it overrides" if options.force
            else f"; a FAIL{others} stops the deploy here")  # fmt: skip
    return f"the doctor's checks on the candidate{waived}{then}"


def _push_summary(release_id: str, push: PushPlan | None, choice: Choice) -> str:
    if push is None:
        return f"nothing to send: {choice.reason}"
    linked = f", hard-link the other {push.total_files - push.send_files} from {push.base}" if push.base else ""
    return (
        f"send {push.send_files} of {push.total_files} files as release {release_id}{linked}; the host verifies"
        " the tree hash"
    )


def _after_failure(choice: Choice, guard: bool) -> str:
    if guard:
        return ""
    if choice.rollback_to is not None:
        return "; leave it running for debugging (--no-rollback)"
    return "; leave it running: no verified release to roll back to"
