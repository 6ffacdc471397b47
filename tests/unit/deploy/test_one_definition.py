"""One definition per deploy step: what `deploy --dry-run` prints is what `deploy` runs, object for object.

Each case runs the dry run and then the deploy (tests/unit/deploy/world.py) against the same scripted host,
and watches the deploy: the steps it planned under the lock, the host calls each step made (and those made
around the steps: the lock, the read, the unlock, what serves, the record), every slot it filled in a planned
command (HostCommand.filled), and every call of an argv builder of specops/commands/. Then, for every step of
every handler:

- the plan the deploy made prints exactly as the dry run printed it;
- each host call is one of the step's own planned commands, as planned or with its slots filled (the lock's
  background heartbeat may come anywhere), in the order the plan gives;
- each fill was of a command the plan holds, with run-time values only (never a slot's own mark), and changed
  nothing but its slots; no slot's mark reaches the host;
- no argv builder ran outside the plan's builders (specops/deploy/step_commands.py, engine_commands.py) while the deploy ran: no
  step built a command line a second time, the preflight's probe included (specops/probe/run.py runs the
  command the plan holds; only `specops doctor`, which has no plan, builds its own).
"""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import specops
from specops.commands.planned import SLOTS, HostCommand, shown_argv
from specops.deploy import execute
from specops.deploy.steps import HostSteps, Step
from specops.host.recording import Call, RecordingHost
from tests.unit.deploy.plan_match import explain, follows, recorded, same
from tests.unit.deploy.scene import DeployScene, release
from tests.unit.deploy.world import OLD_TREE, Run, World

OLD = "20260101T000000Z-old"
STOPPED = "ActiveState=inactive\nSubState=dead\nInactiveEnterTimestamp=Wed 2026-12-02 07:01:02 UTC\n"
PACKAGE = Path(specops.__file__).parent
PLAN_BUILDERS = (
    PACKAGE / "deploy" / "step_commands.py",
    PACKAGE / "deploy" / "engine_commands.py",
    PACKAGE / "commands",
)
# argv builders whose commands never reach the host as a step's: tar runs on this machine (its output is the
# push's stream), and the engine's own command line is what the unit runs (the probe checks its flags)
NOT_HOST_COMMANDS = ("tar_argv", "launch_argv")
OUTSIDE_ORDER = ("lock", "read", "unlock", "serving", "record")  # around the steps, in the order they run


@dataclass
class Watched:
    """What the deploy planned under its lock, its host calls by step, its fills and its builder calls."""

    hosts: list[RecordingHost] = field(default_factory=list)
    plans: list[HostSteps] = field(default_factory=list)
    ran: list[tuple[Step, int, int]] = field(default_factory=list)  # the step, its calls' first and end index
    fills: list[tuple[HostCommand, dict[str, Any], HostCommand]] = field(default_factory=list)
    builders: list[tuple[str, str]] = field(default_factory=list)  # (caller's file, builder) during the deploy


def _builder_codes() -> dict[CodeType, str]:
    """The code objects of the argv builders of specops/commands/ (functions named *_argv, *_argvs)."""
    import importlib

    codes = {}
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        module = importlib.import_module(f"specops.commands.{path.stem}")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.FunctionDef)
                and node.name.endswith(("_argv", "_argvs"))
                and (node.name not in NOT_HOST_COMMANDS)
            ):
                codes[getattr(module, node.name).__code__] = node.name
    return codes


@contextmanager
def builder_calls(found: list[tuple[str, str]]) -> Iterator[None]:
    """Record (caller's file, builder) for each builder called from outside the plan's builders, in this thread."""
    codes = _builder_codes()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call" or frame.f_code not in codes or frame.f_back is None:
            return
        caller = Path(frame.f_back.f_code.co_filename)
        if not any(caller == place or place in caller.parents for place in PLAN_BUILDERS):
            found.append((caller.relative_to(PACKAGE.parent).as_posix(), codes[frame.f_code]))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def watched_run(world: World, scene: DeployScene, *options: str,
                smokes: tuple[bool, ...] = (True,)) -> tuple[Run, Watched]:  # fmt: skip
    """The dry run, then the deploy (World.run), watching the deploy: its plan, steps, fills and builders."""
    seen = Watched()
    make_host, plan_steps, run_step = scene.host, execute.plan_steps, execute._HostDeploy._run_step
    deploy_host, filled = execute.deploy_host, HostCommand.filled

    def host() -> RecordingHost:
        seen.hosts.append(make_host())
        return seen.hosts[-1]

    def planned(*args: Any) -> HostSteps:
        seen.plans.append(plan_steps(*args))
        return seen.plans[-1]

    def step_run(deploy: execute._HostDeploy, step: Step, handler: Any) -> None:
        start = len(seen.hosts[-1].calls)
        try:
            run_step(deploy, step, handler)
        finally:
            seen.ran.append((step, start, len(seen.hosts[-1].calls)))

    def fill(command: HostCommand, **values: Any) -> HostCommand:
        result = filled(command, **values)
        seen.fills.append((command, values, result))
        return result

    def deploy(*args: Any, **kwargs: Any) -> Any:
        assert threading.current_thread() is threading.main_thread()  # one host: the profile sees it all
        with builder_calls(seen.builders):
            return deploy_host(*args, **kwargs)

    world.monkeypatch.setattr(scene, "host", host)
    for target, name, value in ((execute, "plan_steps", planned), (execute._HostDeploy, "_run_step", step_run),
                                (HostCommand, "filled", fill), (execute, "deploy_host", deploy)):  # fmt: skip
        world.monkeypatch.setattr(target, name, value)
    return world.run(scene, *options, smokes=smokes), seen


def assert_one_definition(run: Run, seen: Watched, steps: list[str]) -> None:
    """Every step the deploy ran (`steps`, in order) and everything around them ran the plan's own commands."""
    (plan,) = seen.plans  # the deploy's own plan, made under the lock
    assert [step.to_json() for step in plan.steps] == run.plan["steps"]  # printed by the dry run as it ran
    assert [step.name for step, _start, _end in seen.ran] == steps
    calls = seen.hosts[-1].calls
    in_steps = {index for _step, start, end in seen.ran for index in range(start, end)}
    heartbeat = [command for step in plan.steps for command in step.commands if command.times == "background"]
    for step, start, end in seen.ran:
        assert step in plan.steps  # the very step object the plan holds
        _assert_ran_as_planned(step.name, step.commands, calls[start:end], heartbeat, seen.fills)
    outside = [call for index, call in enumerate(calls) if index not in in_steps]
    around = [command for name in OUTSIDE_ORDER for command in _step(plan, name).commands]
    _assert_ran_as_planned("outside the steps", tuple(around), outside, heartbeat, seen.fills)
    planned_commands = [command for step in plan.steps for command in step.commands]
    for source, values, result in seen.fills:
        _assert_filled(source, values, result, planned_commands)
    assert seen.builders == [], "a step built a command line again instead of running the plan's"


def _step(plan: HostSteps, name: str) -> Step:
    step = plan.step(name)
    assert step is not None, f"the plan has no {name} step"
    return step


def _assert_ran_as_planned(name: str, commands: tuple[HostCommand, ...], calls: list[Call],
                           heartbeat: list[HostCommand], fills: list[tuple[HostCommand, Any, HostCommand]]) -> None:  # fmt: skip
    """Each call is one of `commands` (as planned, or one of their recorded fills) or the heartbeat, in order."""
    allowed = [*commands, *heartbeat, *(result for source, _v, result in fills if source in commands)]
    for call in calls:
        if call.kind not in ("run", "conversation", "put"):
            continue  # a tunnel, a get: not host commands
        assert any(_is(command, call) for command in allowed), f"{name}: ran a command its plan does not hold: {call}"
        marks = [slot.mark for slot in SLOTS.values() if slot.name != "since"]
        assert not [word for word in call.argv if any(mark in str.__str__(word) for mark in marks)], call
    shown = [command.to_json() for command in (*commands, *heartbeat)]
    found = recorded(calls)
    assert follows(shown, found), f"{name}:\n" + explain(shown, found)


def _is(command: HostCommand, call: Call) -> bool:
    if command.kind == "put":
        return call.kind == "put" and (call.path, call.mode) == (command.path, command.mode)
    return call.kind == command.kind and tuple(str.__str__(word) for word in call.argv) == tuple(
        str.__str__(word) for word in command.argv
    )


def _assert_filled(source: HostCommand, values: dict[str, Any], result: HostCommand,
                   planned: list[HostCommand]) -> None:  # fmt: skip
    """A fill of a planned command, with run-time values only, that changed nothing but its slots."""
    assert source in planned, f"filled a command the plan does not hold: {source.shown}"
    assert set(values) <= {slot.name for slot in source.slots}
    for name, value in values.items():
        words = [value] if isinstance(value, str) else list(value)
        if name == "since":  # the journal position's flag: a cursor's, or a time's on an empty journal
            assert words in (["--after-cursor"], ["--since"]), value
        else:
            assert words and all(str.__str__(word) not in ("", SLOTS[name].mark) for word in words), (name, value)
    planned_json, result_json = source.to_json(), {"kind": result.kind, "argv": shown_argv(result.argv)}
    assert same(planned_json, result_json), f"{source.shown}\nfilled as\n{result.shown}"


def serving(world: World, verified: bool = True) -> DeployScene:
    return world.scene(releases=[release(OLD, OLD_TREE, verified)], current=OLD, unit=world.unit_text)


def test_a_first_deploy_runs_the_commands_its_dry_run_printed(world: World) -> None:
    run, seen = watched_run(world, world.scene())
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    assert_one_definition(run, seen, ["push", "preflight", "unit", "disarm-leftover", "switch", "stop", "gates",
                                      "verified"])  # fmt: skip
    keys = [values for source, values, _result in seen.fills if "key" in values]
    assert keys and all(values["key"].startswith("torch") for values in keys)  # the preflight's, in every one


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
    assert_one_definition(run, seen, ["push", "preflight", "unit", "disarm-leftover", "switch", "stop", "gates",
                                      "failed"])  # fmt: skip


def test_a_guarded_deploy_arms_disarms_and_watches_with_the_printed_commands(world: World) -> None:
    run, seen = watched_run(world, serving(world))
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    assert_one_definition(run, seen, ["push", "preflight", "unit", "guard", "switch", "stop", "gates", "verified",
                                      "disarm", "watch"])  # fmt: skip


def test_a_rollback_after_failed_gates_runs_the_printed_commands_with_the_cause_filled_in(world: World) -> None:
    run, seen = watched_run(world, serving(world), smokes=(False, True))
    assert (run.outcome["outcome"], run.result.code) == ("rolled-back", 1)
    assert_one_definition(run, seen, ["push", "preflight", "unit", "guard", "switch", "stop", "gates", "failed",
                                      "rollback", "disarm"])  # fmt: skip
    (cause,) = [values["cause"] for _source, values, _result in seen.fills if "cause" in values]
    assert cause == run.outcome["cause"]  # the gates' own words, in the reason the host records


def test_the_start_of_a_stopped_engine_writes_and_records_as_printed(world: World) -> None:
    current = "20260101T000000Z-same"
    scene = world.scene(releases=[release(current, world.tree_hash)], current=current, unit=world.unit_text,
                        engine=STOPPED)  # fmt: skip
    run, seen = watched_run(world, scene)
    assert run.plan["action"] == "start"
    assert_one_definition(run, seen, ["env", "stop", "gates", "started"])


def test_a_stopped_engine_that_fails_to_start_names_the_cause_without_a_host_command(world: World) -> None:
    current = "20260101T000000Z-same"
    scene = world.scene(releases=[release(current, world.tree_hash)], current=current, unit=world.unit_text,
                        engine=STOPPED)  # fmt: skip
    run, seen = watched_run(world, scene, smokes=(False,))
    assert (run.outcome["outcome"], run.result.code) == ("failed", 1)
    assert_one_definition(run, seen, ["env", "stop", "gates", "start-failed"])


def test_a_restart_runs_the_commands_its_dry_run_printed(world: World) -> None:
    """`specops restart` plans the same kinds of steps (engine_start.start_steps) and runs them the same way."""
    from specops.deploy import restart
    from tests.unit.deploy.test_restart import _restart, _scene

    seen, plan_restart, restart_host, filled = Watched(), restart.restart_plan, restart.restart_host, HostCommand.filled

    def planned(*args: Any) -> HostSteps:
        seen.plans.append(plan_restart(*args))
        return seen.plans[-1]

    def fill(command: HostCommand, **values: Any) -> HostCommand:
        seen.fills.append((command, values, filled(command, **values)))
        return seen.fills[-1][2]

    def restarted(*args: Any, **kwargs: Any) -> Any:
        with builder_calls(seen.builders):
            return restart_host(*args, **kwargs)

    for name, value in (("restart_plan", planned), ("restart_host", restarted)):
        world.monkeypatch.setattr(restart, name, value)
    world.monkeypatch.setattr(HostCommand, "filled", fill)
    shown, outcome, code, host = _restart(world, _scene(world, engine=STOPPED))
    assert (outcome["outcome"], code) == ("restarted", 0)
    steps = seen.plans[-1]  # the restart's own plan, made under its lock (the first: its dry run's)
    assert [step.to_json() for step in steps.steps] == shown["steps"]
    ran = [step for step in steps.steps if step.when in ("always", "checks-pass", "gates-pass")]
    commands = tuple(command for step in ran for command in step.commands if command.times != "background")
    heartbeat = [command for step in steps.steps for command in step.commands if command.times == "background"]
    _assert_ran_as_planned("restart", commands, host.calls, heartbeat, seen.fills)
    every = [command for step in steps.steps for command in step.commands]
    for source, values, result in seen.fills:
        _assert_filled(source, values, result, every)
    assert [values for _source, values, _result in seen.fills if "cursor" in values]  # the poll's position
    assert seen.builders == []
