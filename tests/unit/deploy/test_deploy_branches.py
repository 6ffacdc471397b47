"""Every branch of a deploy, without root: the dry run's plan, then the deploy, against the same scripted host.

Each test runs `specops deploy --dry-run --json` and then `specops deploy --json` through the real CLI, each
against a fresh RecordingHost scripted from the same scene, and checks two things: what the operator is told
(the outcome, the plan's decisions), and that the host commands the deploy ran are exactly the plan's steps
for the branch it took (tests/unit/deploy/plan_match.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from specops.doctor.model import Status
from tests.unit.deploy.scene import HOST, DeployScene, release, use_scene
from tests.unit.deploy.world import FAIL_BRANCH, OLD_TREE, World


def serving(world: World, verified: bool = True, unit: str | None = None) -> DeployScene:
    """A host serving an older verified release (another tree) with the current unit."""
    return world.scene(releases=[release("20260101T000000Z-old", OLD_TREE, verified)],
                       current="20260101T000000Z-old", unit=unit or world.unit_text)  # fmt: skip


def test_unchanged_build_does_nothing_but_lock_read_and_record(world: World) -> None:
    current = "20260101T000000Z-same"
    scene = world.scene(releases=[release(current, world.tree_hash)], current=current, unit=world.unit_text)
    run = world.run(scene)
    assert run.plan["action"] == "unchanged"
    assert run.step_names() == ["lock", "read", "unlock", "serving", "record"]
    assert (run.outcome["outcome"], run.outcome["release"], run.result.code) == ("unchanged", current, 0)
    run.assert_followed()
    assert not [argv for argv in run.host.commands if argv[:2] == ("systemctl", "restart")]


def test_first_deploy_arms_no_guard_and_plans_no_rollback(world: World) -> None:
    run = world.run(world.scene())
    assert run.step_names() == ["lock", "read", "push", "preflight", "unit", "disarm-leftover", "switch", "stop",
                                "gates", "verified", "failed", "unlock", "serving", "record"]  # fmt: skip
    assert (run.plan["guard"], run.plan["rollback_to"], run.plan["unit_changed"]) == (False, None, True)
    assert run.plan["push"] == {"send_files": 2, "total_files": 2, "base": None}
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    run.assert_followed()
    assert not [argv for argv in run.host.commands if argv[0] == "systemd-run"]


def test_text_dry_run_numbers_the_steps_with_their_commands_and_the_unit_diff(world: World) -> None:
    hosts = [world.scene().host()]
    use_scene(world.monkeypatch, world.scene(), hosts, [True])
    text = world.cli("deploy", HOST, "--build", str(world.build), "--dry-run")
    assert text.code == 0, text.err
    assert f"{HOST}: would deploy " in text.out
    assert "leave the release running (no verified release to roll back to: no guard)" in text.out
    assert "  3. push: send 2 of 2 files as release " in text.out
    assert "       $ sh -c '<script" not in text.out  # inline scripts are shown by size and hash
    assert "specops-lock acquire /run/specops/lock '***' 90" in text.out  # the lock's token is masked
    assert "/.specops-env (mode 0600): the env file (" in text.out  # the release's own, 0600, never shown
    assert "+ExecStart=" in text.out
    assert text.out.rstrip().endswith("dry run: nothing was changed")


def test_preflight_failure_stops_before_the_unit(world: World) -> None:
    scene = serving(world)
    scene.checks = Status.FAIL
    run = world.run(scene)
    assert (run.outcome["outcome"], run.result.code) == ("preflight-failed", 1)
    assert "ffmpeg.libs: FFmpeg libraries: none found" in run.outcome["cause"]
    run.assert_followed(upto="preflight", then=("unlock", "serving", "record"))


def test_forced_deploy_goes_on_after_a_failed_check(world: World) -> None:
    scene = serving(world)
    scene.checks = Status.FAIL
    run = world.run(scene, "--force")
    assert "--force: deploy anyway" in run.plan["steps"][3]["summary"]
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    run.assert_followed()


def test_failed_gate_rolls_back_to_the_verified_release(world: World) -> None:
    run = world.run(serving(world), smokes=(False, True))
    assert (run.plan["guard"], run.plan["rollback_to"]) == (True, "20260101T000000Z-old")
    assert run.plan["unit_changed"] is False
    assert (run.outcome["outcome"], run.result.code) == ("rolled-back", 1)
    assert run.outcome["rollback"]["ok"] is True
    assert run.outcome["release"] == "20260101T000000Z-old"
    run.assert_followed(FAIL_BRANCH)


def test_failed_gate_with_no_rollback_leaves_the_release_and_arms_no_guard(world: World) -> None:
    run = world.run(serving(world), "--no-rollback", smokes=(False,))
    assert "guard" not in run.step_names() and "rollback" not in run.step_names()
    assert (run.outcome["outcome"], run.result.code) == ("failed", 1)
    assert run.outcome["hint"] == "left running for debugging (--no-rollback)"
    assert run.outcome["release"] == run.outcome["attempted"]
    run.assert_followed(FAIL_BRANCH)
    # a guard a crashed deploy left would roll the release back once this deploy's lock is gone: stopped first
    disarms = [number for number, argv in enumerate(run.host.commands) if argv[3:4] == ("specops-disarm",)]
    stop, switch = disarms[0], _index_of_switch(run.host.commands)
    assert stop < switch


def _index_of_switch(commands: list[tuple[str, ...]]) -> int:
    return next(number for number, argv in enumerate(commands) if "switch" in argv[4:5])


def test_rollback_whose_own_gate_fails_says_so(world: World) -> None:
    run = world.run(serving(world), smokes=(False, False))
    assert (run.outcome["outcome"], run.result.code) == ("rollback-failed", 7)
    assert run.outcome["release"] is None and str(run.outcome["now"]).startswith(
        f"{run.outcome['host']}: NOTHING SERVES"
    )
    assert run.outcome["rollback"]["ok"] is False
    assert run.outcome["rollback"]["gates"]["smoke"]["passed"] is False
    run.assert_followed(FAIL_BRANCH)


def test_a_changed_unit_on_the_serving_tree_makes_a_new_release_and_keeps_the_old_one_to_roll_back_to(
    world: World,
) -> None:
    current = "20260101T000000Z-same"
    scene = world.scene(releases=[release(current, world.tree_hash)], current=current,
                        unit="# Managed by specops. An older render.\n[Unit]\nold\n")  # fmt: skip
    run = world.run(scene)
    assert run.plan["unit_changed"] is True and run.plan["rollback_to"] == current
    assert run.plan["release"] != current and run.plan["push"]["base"] == current
    assert "-old\n" in run.plan["unit_diff"] and "+ExecStart=" in run.plan["unit_diff"]
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    run.assert_followed()
    assert ("systemctl", "daemon-reload") in run.host.commands


def test_a_lost_lock_stops_the_deploy_at_the_next_step(world: World) -> None:
    from specops.ops import lock

    held: list[lock.HostLock] = []
    acquire = lock.acquire

    def keep(*args: Any, **kwargs: Any) -> lock.HostLock:
        held.append(acquire(*args, **kwargs))
        return held[-1]

    world.monkeypatch.setattr(lock, "acquire", keep)
    scene = serving(world)
    scene.on_command["probe"] = lambda: setattr(held[-1], "lost", True) if held else None
    run = world.run(scene)
    assert (run.outcome["outcome"], run.result.code) == ("lock-lost", 6)
    assert "lost the lock (removed or taken over by someone else); stopped before the unit step" in run.outcome[
        "cause"]  # fmt: skip
    run.assert_followed(upto="preflight", then=("unlock", "serving", "record"))  # the audit line says why it stopped
    # what it knew when it stopped: the release serving and the one it was deploying, and its phases so far
    assert (run.outcome["previous"], run.outcome["release"]) == ("20260101T000000Z-old", "20260101T000000Z-old")
    assert run.outcome["attempted"] == run.plan["release"] and "preflight" in run.outcome["phases"]


def test_ctrl_c_during_the_switch_leaves_the_guard_armed_and_releases_the_lock(world: World) -> None:
    scene = serving(world)
    scene.on_command["switch"] = lambda: KeyboardInterrupt()
    run = world.run(scene)
    assert run.result.code == 130
    commands = [" ".join(argv) for argv in run.host.commands]
    after = commands[next(i for i, line in enumerate(commands) if " switch " in line) + 1 :]
    disarms = [line for line in after if "specops-guard" in line and line.split()[0] in ("systemctl", "rm")]
    assert not disarms  # no disarm: the guard acts if `current` switched
    assert "specops-lock release" in after[-2] and "audit.jsonl" in after[-1]  # what serves, then unlock, audit
    error = json.loads(run.result.out)["error"]
    assert (error["message"], error["exit_code"]) == ("interrupted (SIGINT)", 130)
    assert error["lines"][1].startswith(f"{HOST}: ")  # what serves now


def test_ctrl_c_after_the_new_unit_was_written_puts_the_serving_release_configuration_back(world: World) -> None:
    """Interrupted while the guard is armed (the unit step wrote the new unit, the switch has not happened): the
    engine was never stopped, and the serving release gets its own unit and env file back."""
    scene = serving(world, unit="# Managed by specops. An older unit\n")
    scene.on_command["arm"] = lambda: KeyboardInterrupt()
    run = world.run(scene)
    assert run.result.code == 130, run.result.out
    commands = [" ".join(argv) for argv in run.host.commands]
    armed = next(i for i, argv in enumerate(run.host.commands) if argv[3:4] == ("specops-arm",))
    after = commands[armed + 1 :]
    assert [line for line in after if " restore-config " in line], after
    assert not [line for line in after if line.startswith(("systemctl restart", "systemctl stop"))]


def test_a_cancelled_fleet_stops_each_host_at_its_next_step(world: World) -> None:
    """Ctrl-C while hosts deploy in worker threads sets the fleet's cancel event: each stops before its next
    step, releasing its lock."""
    import threading

    from specops.build.stage import stage_build
    from specops.config.loader import load_config
    from specops.deploy.execute import deploy_host
    from specops.deploy.plan import DeployOptions, DeployPlan, plan_host
    from specops.events import Recorder

    cancel = threading.Event()
    scene = serving(world)
    scene.on_command["probe"] = cancel.set
    host = scene.host()
    use_scene(world.monkeypatch, scene, [host], [True])
    config = load_config(world.folder / "specops.toml", world.folder)
    host_plan = plan_host(config, HOST, None)
    plan = DeployPlan(stage_build(world.build, [], world.folder / "stage2"), [host_plan])
    with pytest.raises(KeyboardInterrupt):
        deploy_host(plan, host_plan, DeployOptions(cancel=cancel), Recorder(), lambda: host,
                    lambda name: host_plan.target.profile)  # fmt: skip
    assert host.commands[-2][4] == "release"  # the lock, released once nothing more changes
    assert host.commands[-1][-1].endswith("audit.jsonl")  # then the audit line: outcome "interrupted"
    from specops.ops import interrupts

    notes = interrupts.take_notes()  # what serves, said once the interruption reaches the CLI
    assert len(notes) == 1 and HOST in notes[0], notes
    assert not [call for call in host.calls if call.kind == "put"]  # stopped before the unit step


def test_a_unit_specops_did_not_write_is_never_overwritten_or_restarted(world: World) -> None:
    """`service = "sshd"` slipped past the config check (a name not on its list): the installed unit has no
    "Managed by specops" header, so the deploy stops before writing it, whatever --force says."""
    current = "20260101T000000Z-same"
    scene = world.scene(releases=[release(current, world.tree_hash)], current=current,
                        unit="[Unit]\nDescription=OpenSSH server\n")  # fmt: skip
    run = world.run(scene, "--force")
    assert (run.outcome["outcome"], run.result.code) == ("error", 1)
    assert "was not written by specops" in run.outcome["cause"] + run.result.err
    written = [call.path for call in run.host.calls if call.kind == "put"]
    assert "/etc/systemd/system/sglang.service" not in written
    assert not [
        argv for argv in run.host.commands if argv[:2] in (("systemctl", "restart"), ("systemctl", "daemon-reload"))
    ]
