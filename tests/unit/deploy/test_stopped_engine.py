"""A deploy of the build that is current and verified, over an engine that is not active: never "unchanged".

The plan starts the engine through the gates (no push, no rollback: the release was verified, so a failure
is the host's), the dry run says so, and the deploy follows that plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from specops.build.stage import StagedBuild
from specops.commands.release import Listing, ReleaseInfo
from specops.deploy.engine_start import EngineState
from specops.deploy.plan import HostPlan, choose
from specops.deploy.steps import Action
from specops.errors import ConnectError
from specops.host.recording import reply
from tests.unit.deploy.scene import HOST, DeployScene, release, use_scene
from tests.unit.deploy.world import FAIL_BRANCH, World
from tests.unit.engine.fakes import CannedServer, CannedTunnel

CURRENT = "20260101T000000Z-same"
STOPPED = "ActiveState=inactive\nSubState=dead\nInactiveEnterTimestamp=Wed 2026-12-02 07:01:02 UTC\n"
STOPPED_STATE = EngineState("inactive", "dead", "Wed 2026-12-02 07:01:02 UTC")


def _serving(staged: StagedBuild) -> Listing:
    info = ReleaseInfo(id=CURRENT, complete=True, verified=True, tree_hash=staged.tree_hash, is_current=True)
    return Listing(CURRENT, [info])


@pytest.mark.parametrize(
    ("engine", "action"),
    [(EngineState(), Action.UNCHANGED), (STOPPED_STATE, Action.START), (EngineState("failed", "failed"), Action.START),
     (EngineState("activating", "auto-restart"), Action.START)],
)  # fmt: skip
def test_the_same_build_is_unchanged_only_while_its_engine_is_active(
    staged_and_plan: tuple[StagedBuild, HostPlan], engine: EngineState, action: Action
) -> None:
    staged, host_plan = staged_and_plan
    choice = choose(staged, host_plan, _serving(staged), host_plan.unit_text, "new", engine)
    assert (choice.action, choice.release_id, choice.rollback_to, choice.base) == (action, CURRENT, None, None)


def test_the_start_names_the_engine_state_and_since_when(staged_and_plan: tuple[StagedBuild, HostPlan]) -> None:
    staged, host_plan = staged_and_plan
    choice = choose(staged, host_plan, _serving(staged), host_plan.unit_text, "new", STOPPED_STATE)
    assert choice.reason.startswith("engine inactive: start it through the gates")
    assert "inactive/dead since Wed 2026-12-02 07:01:02 UTC" in choice.reason


def _stopped(world: World, **kwargs: object) -> DeployScene:
    return world.scene(releases=[release(CURRENT, world.tree_hash)], current=CURRENT, unit=world.unit_text,
                       engine=STOPPED, **kwargs)  # fmt: skip


def test_a_deploy_of_the_same_build_starts_the_stopped_engine_through_the_gates(world: World) -> None:
    run = world.run(_stopped(world))
    assert (run.plan["action"], run.plan["push"], run.plan["guard"]) == ("start", None, False)
    assert run.step_names() == [
        "lock",
        "read",
        "env",
        "stop",
        "gates",
        "started",
        "start-failed",
        "unlock",
        "serving",
        "record",
    ]
    assert (run.outcome["outcome"], run.outcome["release"], run.result.code) == ("started", CURRENT, 0)
    assert "started the stopped engine (inactive/dead since" in run.outcome["cause"]
    run.assert_followed()
    assert [argv for argv in run.host.commands if argv[:2] == ("systemctl", "restart")]
    assert len(run.host.execs) == 2  # the conversation and the push session's listing: no push, no new exec


def test_a_failed_start_names_the_stopped_engine_and_leaves_the_release_verified(world: World) -> None:
    run = world.run(_stopped(world, ready=[False]))
    assert (run.outcome["outcome"], run.outcome["release"], run.result.code) == ("failed", None, 1)
    assert run.outcome["cause"].startswith(f"the stopped engine of {CURRENT} did not start: not ready")
    assert "stays verified (not marked bad): the host is the suspect" in run.outcome["hint"]
    run.assert_followed(FAIL_BRANCH)
    assert not [argv for argv in run.host.commands if "update-manifest" in argv or "rollback" in argv]


def test_the_text_dry_run_says_it_starts_the_engine(world: World) -> None:
    hosts = [_stopped(world).host()]
    use_scene(world.monkeypatch, _stopped(world), hosts, [True])
    text = world.cli("deploy", HOST, "--build", str(world.build), "--dry-run")
    assert text.code == 0, text.err
    assert f"{HOST}: would start {CURRENT} (profile nextn): engine inactive: start it through the gates" in text.out
    assert "nothing to drain" in text.out
    assert not [call for call in hosts[0].calls if call.kind == "put" or call.argv[:2] == ("systemctl", "restart")]


def _status(world: World, unit: str, *options: str) -> tuple[int, str]:
    from specops.commands.unit import show_argv
    from specops.ops.status import STATUS_PROPERTIES

    scene = world.scene(releases=[release(CURRENT, world.tree_hash)], current=CURRENT, unit=world.unit_text)
    host = scene.host()
    host.script(show_argv(scene.spec.unit_name, STATUS_PROPERTIES), reply(unit))
    host.script(["readlink"], reply(exit_code=1))  # no compile cache yet
    use_scene(world.monkeypatch, scene, [host], [True])
    shown = world.cli("status", HOST, *options)
    return shown.code, shown.out


def test_status_says_the_engine_is_stopped_and_how_to_start_it(world: World) -> None:
    code, text = _status(world, STOPPED + "MainPID=0\nNRestarts=0\n")
    assert code == 1
    assert (f"engine: stopped (inactive/dead) since Wed 2026-12-02 07:01:02 UTC, `specops restart {HOST}` starts it"
            in text)  # fmt: skip
    code, document = _status(world, STOPPED + "MainPID=0\nNRestarts=0\n", "--json")
    found = json.loads(document)
    assert (found["serving"], found["engine"], found["health"]) == (
        False, f"stopped (inactive/dead) since Wed 2026-12-02 07:01:02 UTC, `specops restart {HOST}` starts it", None)  # fmt: skip


def test_status_of_a_running_engine_says_it_runs(world: World) -> None:
    host_status = "ActiveState=active\nSubState=running\nMainPID=0\nNRestarts=0\nInactiveEnterTimestamp=n/a\n"
    code, document = _status(world, host_status, "--json")
    found = json.loads(document)
    assert (code, found["serving"], found["engine"], found["health"]) == (0, True, "running (active/running)", 200)


def test_a_unit_systemd_unloaded_is_stopped_since_its_last_journal_entry(world: World) -> None:
    code, text = _status(world, "ActiveState=failed\nSubState=failed\nMainPID=0\nInactiveEnterTimestamp=\n", "--json")
    assert code == 1
    assert json.loads(text)["engine"] == (
        f"stopped (failed/failed) since 2026-12-02T07:01:02+00:00, `specops restart {HOST}` starts it")  # fmt: skip


def test_the_fleet_table_notes_a_stopped_engine_under_the_table(world: World) -> None:
    code, text = _status(world, STOPPED + "MainPID=0\nNRestarts=0\n", "--all")
    assert code == 1
    assert (f"{HOST}: stopped (inactive/dead) since Wed 2026-12-02 07:01:02 UTC, `specops restart {HOST}` starts it"
            in text)  # fmt: skip


def test_an_active_engine_that_does_not_answer_is_not_unchanged_either(
    staged_and_plan: tuple[StagedBuild, HostPlan],
) -> None:
    staged, host_plan = staged_and_plan
    silent = EngineState(answering=False)
    choice = choose(staged, host_plan, _serving(staged), host_plan.unit_text, "new", silent)
    assert (choice.action, choice.release_id) == (Action.START, CURRENT)
    assert choice.reason.startswith("engine active but not answering: start it through the gates (sglang.service is "
                                    "active/running, its HTTP server not answering;")  # fmt: skip


@dataclass
class RefusesFirst(CannedServer):
    """The engine's port refuses its first `refusals` connections (the plans' "does it answer?"), then answers."""

    refusals: int = 2

    def tunnel(self, remote_host: str, remote_port: int) -> CannedTunnel:
        if self.refusals > 0:
            self.refusals -= 1
            raise ConnectError(f"cannot connect to {remote_host}:{remote_port}: Connection refused")
        return super().tunnel(remote_host, remote_port)


def test_a_deploy_over_an_engine_that_does_not_answer_drains_and_restarts_it(world: World) -> None:
    scene = world.scene(releases=[release(CURRENT, world.tree_hash)], current=CURRENT, unit=world.unit_text,
                        server=RefusesFirst())  # fmt: skip
    run = world.run(scene)
    assert run.plan["action"] == "start"
    assert run.plan["reason"].startswith("engine active but not answering: start it through the gates")
    assert run.plan["steps"][3]["summary"].startswith("drain and stop sglang.service")
    assert (run.outcome["outcome"], run.result.code) == ("started", 0)
    assert run.outcome["cause"].startswith("restarted the engine that did not answer (active/running")
    run.assert_followed()
