"""SIGINT, SIGTERM and SIGHUP in every phase of a deploy and of a rollback, against a scripted host: each ends the
command with 128 + the signal's number, names what serves on the host, releases the lock and leaves an audit line
naming the signal. The signal arrives as the Interrupted its handler raises (specops/ops/interrupts.py), once, while
the phase's host command runs; the e2e tests (tests/e2e/test_signals.py) send real signals to a real CLI."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable

import pytest

from specops.ops.interrupts import Interrupted
from tests.unit.deploy.scene import HOST, DeployScene, release, use_scene
from tests.unit.deploy.world import OLD_TREE, World

OLD, NEW = "20260101T000000Z-old", "20260102T000000Z-new"
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
# the phase, by the host command that runs during it (tests/unit/deploy/scene.py's hooks)
DEPLOY_PHASES = {"preflight": "probe", "unit": "arm", "switch": "switch", "drain": "gpus", "restart": "restart",
                 "readiness": "ready"}  # fmt: skip
BEFORE_THE_STOP = ("preflight", "unit", "switch")
ROLLBACK_PHASES = {"drain": "gpus", "restart": "rollback", "readiness": "ready"}


def _once(signum: int) -> Callable[[], BaseException | None]:
    """The signal during the first such command; the restore that follows runs the same commands undisturbed."""
    sent: list[int] = []

    def hook() -> BaseException | None:
        if sent:
            return None
        sent.append(signum)
        return Interrupted(signum)

    return hook


def _assert_ended(world: World, out: str, code: int, signum: int, action: str, commands: list[str]) -> str:
    """The exit code, the signal named, the lock released, the audit line; the line naming what serves."""
    name = signal.Signals(signum).name
    assert code == 128 + signum, out
    error = json.loads(out)["error"]
    assert (error["message"], error["exit_code"]) == (f"interrupted ({name})", 128 + signum)
    assert any("specops-lock release" in line for line in commands), commands
    entry = json.loads((world.folder / "state" / "specops" / "audit.jsonl").read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"]) == (action, "interrupted")
    assert entry["message"].startswith(f"interrupted ({name}): {HOST}: "), entry
    serves: str = error["lines"][1]
    assert serves.startswith(f"{HOST}: "), error
    return serves


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda signum: signal.Signals(signum).name)
@pytest.mark.parametrize("phase", DEPLOY_PHASES)
def test_a_signal_in_each_deploy_phase_names_what_serves_and_frees_the_lock(
    world: World, phase: str, signum: int
) -> None:
    scene = world.scene(releases=[release(OLD, OLD_TREE)], current=OLD, unit=world.unit_text)
    if phase in BEFORE_THE_STOP:  # the engine still runs (scripted stopped otherwise: a stop would wait on it)
        scene.unit_state = "ActiveState=active\nSubState=running\nMainPID=7\n"
    scene.on_command[DEPLOY_PHASES[phase]] = _once(signum)
    run = world.run(scene)
    commands = [" ".join(argv) for argv in run.host.commands]
    serves = _assert_ended(world, run.result.out, run.result.code, signum, "deploy", commands)
    # the scripted host's `current` stays OLD (verified): before the switch it serves as before; from the switch
    # on (its restart may have begun), it is started again and its readiness awaited
    untouched = phase in ("preflight", "unit")
    said = "serves (verified) as before: its engine was not stopped" if untouched else "serves (verified)"
    assert serves == f"{HOST}: {OLD} {said}", serves


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda signum: signal.Signals(signum).name)
@pytest.mark.parametrize("phase", ROLLBACK_PHASES)
def test_a_signal_in_each_rollback_phase_names_what_serves_and_frees_the_lock(
    world: World, phase: str, signum: int
) -> None:
    releases = [release(OLD, "0" * 64), release(NEW, "1" * 64)]
    scene: DeployScene = world.scene(releases=releases, current=NEW, unit=world.unit_text,
                                     rollback_reply={"ok": True, "previous": NEW, "current": OLD})  # fmt: skip
    scene.on_command[ROLLBACK_PHASES[phase]] = _once(signum)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    result = world.cli("rollback", HOST, "--json")
    commands = [" ".join(argv) for argv in hosts[0].commands]
    serves = _assert_ended(world, result.out, result.code, signum, "rollback", commands)
    assert serves == f"{HOST}: {NEW} serves (verified)", serves  # the scripted host's `current` stays NEW


def test_a_signal_whose_switch_reply_never_came_names_the_guards_target_read_from_the_host(world: World) -> None:
    """The host switched `current`, the signal cut the reply: what the host says is current counts, so the line
    names the release the guard rolls back to, as after a switch whose reply came."""
    from specops.deploy.outcome import HostOutcome, Outcome
    from specops.deploy.rollback_restore import Restoration

    outcome = HostOutcome(host=HOST, outcome=Outcome.ERROR, attempted=NEW, guard_to=OLD, release=OLD)
    unverified = Restoration(None, None, f"{HOST}: {NEW} is not verified: the rollback guard puts ...", NEW)
    spec = world.scene().spec
    assert outcome.after_interruption(unverified, spec).startswith(
        f"{HOST}: {NEW} is unverified: the host-side guard rolls back to {OLD} by "
    )


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda signum: signal.Signals(signum).name)
def test_the_hosts_last_row_names_the_signal(signum: int) -> None:
    from specops.errors import ExitCode

    assert ExitCode.cause(Interrupted(signum)) == f"interrupted ({signal.Signals(signum).name})"
