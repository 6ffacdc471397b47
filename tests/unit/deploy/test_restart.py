"""`specops restart`: its plan (pure), then the command against a scripted host, which must run exactly the
plan its dry run printed; a host without a current release is refused with nothing changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specops.commands.release import Listing, ReleaseInfo
from specops.config.loader import load_config
from specops.config.profile import Profile
from specops.deploy.engine_run import EngineRun
from specops.deploy.engine_start import EngineState
from specops.deploy.restart import RestartOptions, restart_plan
from specops.errors import ChecksFailed
from specops.host.recording import RecordingHost
from tests.unit.deploy.plan_match import explain, follows, planned, recorded
from tests.unit.deploy.scene import HOST, DeployScene, release, use_scene
from tests.unit.deploy.test_stopped_engine import STOPPED
from tests.unit.deploy.world import FAIL_BRANCH, PASS_BRANCH, World

CURRENT = "20260101T000000Z-cur"
STEPS = ["lock", "read", "stop", "gates", "started", "start-failed", "record", "serving", "unlock"]


def _plan(world: World, listing: Listing, engine: EngineState) -> list[str]:
    config = load_config(world.folder / "specops.toml", world.folder)

    def profile_for(name: str | None) -> Profile:
        return config.resolve(HOST, name).profile

    steps = restart_plan(config.host(HOST), profile_for, listing, engine, RestartOptions(), "token")
    assert (steps.action, steps.release, steps.rollback_to, steps.push) == ("restart", CURRENT, None, None)
    return [steps.reason, *(f"{step.name}: {step.summary}" for step in steps.steps)]


def test_the_plan_drains_a_running_engine_and_starts_a_stopped_one(world: World) -> None:
    listing = Listing(CURRENT, [ReleaseInfo(id=CURRENT, complete=True, verified=True, is_current=True)])
    running = _plan(world, listing, EngineState())
    assert (
        running[0]
        == f"sglang.service is active/running: drain and restart release {CURRENT} (verified) through the gates"
    )
    assert [line.split(":")[0] for line in running[1:]] == STEPS
    assert "stop: drain and stop sglang.service (SIGTERM, up to" in running[3]
    stopped = _plan(world, listing, EngineState("inactive", "dead", "Wed 2026-12-02 07:01:02 UTC"))
    assert stopped[0].startswith("sglang.service is inactive/dead since Wed 2026-12-02 07:01:02 UTC: start release")
    assert "stop: sglang.service is inactive/dead: nothing to drain" in stopped[3]


def test_a_rank_of_an_engine_tests_the_dist_port_before_anything_stops(world: World) -> None:
    """A restart of an engine: every rank runs its side of the dist port test before the drain (engine_steps.py);
    `--skip-check engine.dist_port,engine.dist_reach` leaves the whole test out."""
    config = load_config(world.folder / "specops.toml", world.folder)
    listing = Listing(CURRENT, [ReleaseInfo(id=CURRENT, complete=True, verified=True, is_current=True)])

    def steps(*skipped: str) -> list[str]:
        run = EngineRun("ds", ["other", HOST], dist_init_addr="10.1.0.11:5000")
        options = RestartOptions(engine=run, skip_checks=skipped)
        plan = restart_plan(config.host(HOST), lambda name: config.resolve(HOST, name).profile, listing,
                            EngineState(), options, "token")  # fmt: skip
        return [step.name for step in plan.steps]

    assert steps() == ["lock", "read", "dist-port", *STEPS[2:]]
    assert steps("engine.dist_port", "engine.dist_reach") == STEPS


def test_the_plan_refuses_a_host_without_a_current_release(world: World) -> None:
    with pytest.raises(ChecksFailed, match="no current release to restart: nothing was changed") as refused:
        _plan(world, Listing(None, []), EngineState())
    assert refused.value.hint == f"deploy one first: specops deploy {HOST} --build PATH"


def _restart(
    world: World, scene: DeployScene, *options: str
) -> tuple[dict[str, Any], dict[str, Any], int, RecordingHost]:
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    dry = world.cli("restart", HOST, "--dry-run", "--json", *options)
    assert dry.code == 0, dry.out + dry.err
    assert not [call for call in hosts[0].calls if call.kind == "put" or call.argv[:2] == ("systemctl", "restart")]
    hosts.append(scene.host())
    done = world.cli("restart", HOST, "--json", *options)
    assert done.out.startswith("{"), done.err
    return json.loads(dry.out)["hosts"][0], json.loads(done.out)["hosts"][HOST], done.code, hosts[1]


def _scene(world: World, **kwargs: Any) -> DeployScene:
    return world.scene(releases=[release(CURRENT, world.tree_hash)], current=CURRENT, unit=world.unit_text, **kwargs)


def test_restart_starts_a_stopped_engine_through_the_gates_and_audits_it(world: World) -> None:
    plan, outcome, code, host = _restart(world, _scene(world, engine=STOPPED))
    assert [step["step"] for step in plan["steps"]] == STEPS
    assert (outcome["outcome"], outcome["release"], outcome["engine_before"], code) == (
        "restarted", CURRENT, "inactive/dead since Wed 2026-12-02 07:01:02 UTC", 0)  # fmt: skip
    assert outcome["cause"].startswith("started the stopped engine (inactive/dead since")
    expected, calls = planned(plan, PASS_BRANCH), recorded(host.calls)
    assert follows(expected, calls), explain(expected, calls)
    assert [call.kind for call in host.execs] == ["conversation"]  # every command a request on one exec
    entry = json.loads((world.folder / "state" / "specops" / "audit.jsonl").read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"], entry["to"], entry["engine_before"]) == (
        "restart", "restarted", CURRENT, "inactive/dead since Wed 2026-12-02 07:01:02 UTC")  # fmt: skip


def test_a_failed_restart_says_nothing_serves_and_marks_nothing_bad(world: World) -> None:
    plan, outcome, code, host = _restart(world, _scene(world, ready=[False]))
    assert (outcome["outcome"], outcome["release"], code) == ("failed", None, 1)
    assert outcome["cause"].startswith(f"the engine of {CURRENT} did not start: not ready")
    assert outcome["cause"].endswith("nothing serves")
    expected, calls = planned(plan, FAIL_BRANCH), recorded(host.calls)
    assert follows(expected, calls), explain(expected, calls)
    assert not [argv for argv in host.commands if "update-manifest" in argv or "rollback" in argv]


def test_restart_refuses_a_host_without_a_current_release_and_changes_nothing(world: World) -> None:
    hosts = [world.scene().host()]
    use_scene(world.monkeypatch, world.scene(), hosts, [True])
    refused = world.cli("restart", HOST)
    assert refused.code == 1
    assert "no current release to restart: nothing was changed" in refused.out
    assert f"hint: deploy one first: specops deploy {HOST} --build PATH" in refused.out
    assert not [argv for argv in hosts[0].commands if argv[:2] in (("systemctl", "restart"), ("systemctl", "stop"))]
    assert not [call for call in hosts[0].calls if call.kind == "put"]
    assert not Path(world.folder / "state" / "specops" / "audit.jsonl").exists()


def test_the_summary_has_a_row_per_host_that_says_nothing_serves_after_a_failure(world: World) -> None:
    hosts = [_scene(world, ready=[False]).host()]
    use_scene(world.monkeypatch, _scene(world, ready=[False]), hosts, [True])
    shown = world.cli("restart", "--all")
    assert shown.code == 1
    header, row = shown.out.splitlines()[:2]
    assert header.split() == ["HOST", "OUTCOME", "SERVING", "ENGINE", "BEFORE", "TOK/S", "ACCEPT", "SECONDS"]
    assert row.split()[:5] == [HOST, "failed", "nothing", "active/running", "-"]
    assert f"{HOST}: the engine of {CURRENT} did not start: not ready: the engine process exited" in shown.out
    assert f"{HOST}: hint: {CURRENT} passed these gates before and stays verified (not marked bad)" in shown.out


def test_a_failed_restart_of_a_release_never_verified_does_not_blame_the_host(world: World) -> None:
    scene = world.scene(releases=[release(CURRENT, world.tree_hash, verified=False)], current=CURRENT,
                        unit=world.unit_text, ready=[False])  # fmt: skip
    plan, outcome, code, _host = _restart(world, scene)
    assert plan["reason"].endswith(f"drain and restart release {CURRENT} (NOT verified) through the gates")
    assert (outcome["outcome"], code) == ("failed", 1)
    assert outcome["hint"].startswith(f"{CURRENT} was never verified: deploy a verified build or `specops rollback")


def test_a_restart_that_loses_its_lock_stops_before_its_next_step_and_audits_why(world: World) -> None:
    from specops.deploy import restart
    from specops.ops import lock

    held: list[lock.HostLock] = []
    acquire, read = lock.acquire, restart.read_engine_state

    def keep(*args: Any, **kwargs: Any) -> lock.HostLock:
        held.append(acquire(*args, **kwargs))
        return held[-1]

    def read_then_lose(host: Any, spec: Any, **kwargs: Any) -> EngineState:
        state = read(host, spec, **kwargs)
        held[-1].lost = True  # removed by `specops lock release --force` meanwhile
        return state

    world.monkeypatch.setattr(lock, "acquire", keep)
    world.monkeypatch.setattr(restart, "read_engine_state", read_then_lose)
    hosts = [_scene(world).host()]
    use_scene(world.monkeypatch, _scene(world), hosts, [True])
    done = world.cli("restart", HOST, "--json")
    assert done.code == 6
    found = json.loads(done.out)["hosts"][HOST]
    assert (
        found["error"]
        == f"{HOST}: lost the lock (removed or taken over by someone else); stopped before the stop step, "
        "changing nothing more on the host"
    )
    assert not [argv for argv in hosts[0].commands if argv[:2] in (("systemctl", "stop"), ("systemctl", "restart"))]
    entry = json.loads((world.folder / "state" / "specops" / "audit.jsonl").read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"]) == ("restart", "lock-lost")


def test_a_restart_interrupted_after_its_stop_starts_the_release_again_says_so_and_audits_it(world: World) -> None:
    """SIGTERM (here: its KeyboardInterrupt) while the GPUs are checked after the stop: before the lock is released
    the current release's engine is started again and awaited, the message names it, the audit says why."""
    from specops.ops.interrupts import Interrupted

    scene = _scene(world)
    scene.on_command["gpus"] = lambda: Interrupted(15)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    done = world.cli("restart", HOST, "--json")
    assert done.code == 143
    error = json.loads(done.out)["error"]
    assert error["lines"] == ["interrupted (SIGTERM)", f"{HOST}: {CURRENT} serves (verified)"]
    commands = [" ".join(argv) for argv in hosts[0].commands]
    stopped = next(i for i, line in enumerate(commands) if line.startswith("systemctl stop --no-block"))
    assert "systemctl restart sglang.service" in commands[stopped:]
    assert "specops-lock release" in commands[-1]
    entry = json.loads((world.folder / "state" / "specops" / "audit.jsonl").read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"]) == ("restart", "interrupted")
    assert entry["message"] == f"interrupted (SIGTERM): {HOST}: {CURRENT} serves (verified)"
