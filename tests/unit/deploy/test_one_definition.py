"""One definition per deploy step: what `deploy --dry-run` prints is what `deploy` runs, object for object.

Each case runs the dry run and then the deploy (tests/unit/deploy/world.py) against the same scripted host,
and watches the deploy: the steps it planned under the lock, and the host calls each step made. The deploy's
steps must print exactly as the dry run printed them, and every step whose commands the plan fixes (the unit,
the env file, the guard, the disarm, the switch, the records, the watch) must send the host exactly its own
planned commands, word for word: the only word a plan cannot know there is the compile cache's key (found by
the preflight), and that command is built by the same builder at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specops.commands.cache import CACHE_ROLE, KEY_PLACEHOLDER
from specops.commands.journal import CURSOR_PLACEHOLDER
from specops.config.secrets import MASK
from specops.deploy import execute
from specops.deploy.step_commands import CAUSE_PLACEHOLDER
from specops.deploy.steps import Handler, HostSteps, Step
from specops.host.recording import Call, RecordingHost
from tests.unit.deploy.plan_match import explain, follows, recorded
from tests.unit.deploy.scene import DeployScene, release
from tests.unit.deploy.world import OLD_TREE, Run, World

FIXED = {Handler.ENV, Handler.UNIT, Handler.ARM, Handler.DISARM, Handler.SWITCH, Handler.VERIFIED, Handler.FAILED,
         Handler.WATCH, Handler.STARTED}  # fmt: skip
OLD = "20260101T000000Z-old"
STOPPED = "ActiveState=inactive\nSubState=dead\nInactiveEnterTimestamp=Wed 2026-12-02 07:01:02 UTC\n"


@dataclass
class Watched:
    """What the deploy planned under its lock, and which host calls each step it ran made."""

    hosts: list[RecordingHost] = field(default_factory=list)
    plans: list[HostSteps] = field(default_factory=list)
    ran: list[tuple[Step, list[Call]]] = field(default_factory=list)


def watched_run(world: World, scene: DeployScene, *options: str,
                smokes: tuple[bool, ...] = (True,)) -> tuple[Run, Watched]:  # fmt: skip
    """The dry run, then the deploy (World.run), watching the deploy's plan and its steps' host calls."""
    seen = Watched()
    make_host = scene.host

    def host() -> RecordingHost:
        seen.hosts.append(make_host())
        return seen.hosts[-1]

    plan_steps, run_step = execute.plan_steps, execute._HostDeploy._run_step

    def planned(*args: Any) -> HostSteps:
        seen.plans.append(plan_steps(*args))
        return seen.plans[-1]

    def step_run(deploy: execute._HostDeploy, step: Step, handler: Any) -> None:
        start = len(seen.hosts[-1].calls)
        try:
            run_step(deploy, step, handler)
        finally:
            seen.ran.append((step, seen.hosts[-1].calls[start:]))

    world.monkeypatch.setattr(scene, "host", host)
    world.monkeypatch.setattr(execute, "plan_steps", planned)
    world.monkeypatch.setattr(execute._HostDeploy, "_run_step", step_run)
    return world.run(scene, *options, smokes=smokes), seen


def assert_one_definition(run: Run, seen: Watched, fixed_steps: list[str]) -> None:
    (plan,) = seen.plans  # the deploy's own plan, made under the lock
    assert [step.to_json() for step in plan.steps] == run.plan["steps"]  # printed by the dry run as it ran
    ran_fixed = [(step, calls) for step, calls in seen.ran if step.handler in FIXED]
    assert [step.name for step, _calls in ran_fixed] == fixed_steps
    for step, calls in ran_fixed:
        assert step in plan.steps  # the very step object the plan holds
        commands = [command.to_json() for command in step.commands]
        words = [word for command in commands for word in command["argv"]]
        marks = (MASK, CURSOR_PLACEHOLDER, CAUSE_PLACEHOLDER)
        unknown = [word for word in words if any(mark in word for mark in marks)]
        assert unknown == [], f"{step.name}: a fixed step plans no run-time word"
        assert all(KEY_PLACEHOLDER not in word or command.role == CACHE_ROLE for command in step.commands
                   for word in command.argv)  # fmt: skip
        found = recorded(calls)
        assert found, f"{step.name}: ran no command"
        assert follows(commands, found), f"{step.name}:\n" + explain(commands, found)


def serving(world: World, verified: bool = True) -> DeployScene:
    return world.scene(releases=[release(OLD, OLD_TREE, verified)], current=OLD, unit=world.unit_text)


def test_a_first_deploy_runs_the_commands_its_dry_run_printed(world: World) -> None:
    run, seen = watched_run(world, world.scene())
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    assert_one_definition(run, seen, ["unit", "disarm-leftover", "switch", "verified"])


def test_an_unchanged_build_runs_no_step_and_plans_as_its_dry_run(world: World) -> None:
    current = "20260101T000000Z-same"
    scene = world.scene(releases=[release(current, world.tree_hash)], current=current, unit=world.unit_text)
    run, seen = watched_run(world, scene)
    assert run.outcome["outcome"] == "unchanged"
    assert_one_definition(run, seen, [])
    assert seen.ran == []


def test_a_no_rollback_deploy_that_fails_its_gates_runs_the_printed_commands(world: World) -> None:
    run, seen = watched_run(world, serving(world), "--no-rollback", smokes=(False,))
    assert (run.outcome["outcome"], run.result.code) == ("failed", 1)
    assert_one_definition(run, seen, ["unit", "disarm-leftover", "switch", "failed"])


def test_a_guarded_deploy_arms_disarms_and_watches_with_the_printed_commands(world: World) -> None:
    run, seen = watched_run(world, serving(world))
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    assert_one_definition(run, seen, ["unit", "guard", "switch", "verified", "disarm", "watch"])


def test_the_start_of_a_stopped_engine_writes_and_records_as_printed(world: World) -> None:
    current = "20260101T000000Z-same"
    scene = world.scene(releases=[release(current, world.tree_hash)], current=current, unit=world.unit_text,
                        engine=STOPPED)  # fmt: skip
    run, seen = watched_run(world, scene)
    assert run.plan["action"] == "start"
    assert_one_definition(run, seen, ["env", "started"])
