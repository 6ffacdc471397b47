"""The deploy's last step hands a verified release to the guard's watch on the host and returns: the plan says
so, the deploy runs exactly that command after disarming, and a profile with watch_s = 0 has no watch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.commands.guard import WatchSettings
from specops.config.inventory import HostSpec
from specops.deploy.step_commands import watch_commands
from specops.host.local import LocalHost
from specops.ops import guard
from tests.unit.deploy.scene import HOST, release
from tests.unit.deploy.world import OLD_TREE, World
from tests.unit.guard_here import fake_systemd, logged


def test_a_verified_deploy_starts_the_watch_after_the_disarm_and_returns(world: World) -> None:
    scene = world.scene(releases=[release("20260101T000000Z-old", OLD_TREE)], current="20260101T000000Z-old",
                        unit=world.unit_text)  # fmt: skip
    run = world.run(scene)
    names = run.step_names()
    assert names[names.index("disarm") + 1] == "watch"
    watch = next(step for step in run.plan["steps"] if step["step"] == "watch")
    assert watch["when"] == "gates-pass"
    assert "keeps watching" in watch["summary"]
    assert "for 300 s: 3 failed /health_generate in a row roll it back to 20260101T000000Z-old" in watch["summary"]
    assert (run.outcome["outcome"], run.outcome["watch_s"], run.result.code) == ("deployed", 300, 0)
    run.assert_followed()
    started = [argv for argv in run.host.commands if argv[3:4] == ("specops-watch",)]
    assert len(started) == 1
    timer = started[0].index("systemd-run")
    assert started[0][timer : timer + 2] == ("systemd-run", "--unit=specops-watch-sglang")
    tail = started[0][started[0].index("watch") :]
    release_id = run.outcome["release"]
    assert tail == ("watch", "/opt/specops/sglang", "sglang.service", release_id, "300",
                    "http://127.0.0.1:30000/health_generate", "/run/specops/lock", "30", "3", "5",
                    "20260101T000000Z-old")  # fmt: skip
    assert "specops-watch-sglang.service" in started[0][:timer]  # an earlier watch is stopped first (below)
    assert not [argv for argv in run.host.commands if argv[3:4] == ("specops-disarm",)]  # the hand-over disarmed


def test_the_hand_over_disarms_then_starts_the_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watch step's one command, run by a real sh: the guard's timer and any earlier watch are stopped (its
    stop announced in the stop file), the guard's state removed, then the watch started."""
    spec = HostSpec(name="gpu1", ssh="gpu1", python="/opt/venv/bin/python", model_path="/m",
                    base_dir=str(tmp_path / "opt"))  # fmt: skip
    log = fake_systemd(tmp_path, monkeypatch)
    service = Path(spec.service_dir)
    service.mkdir(parents=True)
    (service / ".specops-guard.json").write_text("{}")
    settings = WatchSettings(window_s=300, timeout_s=30, failures=3, url="http://127.0.0.1:30000/health_generate")
    (command,) = watch_commands(spec, "R2", settings, "R1")
    guard.start_watch(LocalHost("gpu1"), command)
    asked = logged(log)
    units = "specops-guard-sglang.timer specops-guard-sglang.service specops-watch-sglang.service"
    assert asked[:2] == [f"systemctl stop {units}", f"systemctl reset-failed {units}"]
    assert asked[2].startswith("systemd-run --unit=specops-watch-sglang ") and asked[2].endswith(" R1")
    assert len(asked) == 3
    assert (service / ".specops-watch-stop").exists() and not (service / ".specops-guard.json").exists()


def test_the_watch_is_given_the_engines_gpus_when_the_host_names_them(tmp_path: Path) -> None:
    """`gpus` (the unit's CUDA_VISIBLE_DEVICES) ends the watch's arguments, so that a fault on another engine's
    GPU does not blame the host (remote/release/hostblame.py); without it the arguments end at the target."""
    settings = WatchSettings(window_s=300, timeout_s=30, failures=3, url="http://127.0.0.1:30000/health_generate")
    for gpus, tail in ((None, ["5", "R1"]), ("0,1", ["5", "R1", "0,1"])):
        spec = HostSpec(name="gpu1", ssh="gpu1", python="/opt/venv/bin/python", model_path="/m", gpus=gpus,
                        base_dir=str(tmp_path / "opt"))  # fmt: skip
        (command,) = watch_commands(spec, "R2", settings, "R1")
        assert list(command.argv[-len(tail) :]) == tail


def test_the_guard_and_the_watch_are_given_the_plans_target_not_the_newest_verified(world: World) -> None:
    """An older build redeployed: A serves, verified, while B was created later. The dry run names A, and A is
    what the guard's state (written when it is armed) and the watch are given."""
    a, b = "20260101T000000Z-aaaa", "20260102T000000Z-bbbb"
    scene = world.scene(releases=[release(a, OLD_TREE), release(b, "1" * 64)], current=a, unit=world.unit_text)
    written: list[bytes] = []
    arm_stdin = guard.arm_stdin
    world.monkeypatch.setattr(guard, "arm_stdin", lambda *args: written.append(arm_stdin(*args)) or written[-1])
    run = world.run(scene)
    assert run.plan["rollback_to"] == a
    armed = next(step for step in run.plan["steps"] if step["step"] == "guard")
    assert f"rolls back to {a} if this deploy dies" in armed["summary"]
    run.assert_followed()
    (stdin,) = written  # the sizes, then the script, the state, the notify file
    sizes = [int(word) for word in stdin.split(b"\n", 1)[0].split()]
    state = json.loads(stdin[len(stdin) - sizes[2] - sizes[1] : len(stdin) - sizes[2]])
    assert state == {"schema": 1, "state": "armed", "release": run.outcome["release"], "rollback_to": a}
    assert json.dumps(state, sort_keys=True) in armed["commands"][0]["stdin"]  # as the dry run shows it
    started = [argv for argv in run.host.commands if argv[3:4] == ("specops-watch",)]
    assert started[0][-1] == a


def test_watch_s_zero_plans_and_starts_no_watch(world: World) -> None:
    toml = world.folder / "specops.toml"
    toml.write_text(toml.read_text() + f"\n[hosts.{HOST}.overrides.nextn.readiness]\nwatch_s = 0\n")
    scene = world.scene(releases=[release("20260101T000000Z-old", OLD_TREE)], current="20260101T000000Z-old",
                        unit=world.unit_text)  # fmt: skip
    run = world.run(scene)
    assert "watch" not in run.step_names() and "disarm" in run.step_names()
    assert run.outcome["watch_s"] is None
    run.assert_followed()
    assert not [argv for argv in run.host.commands if argv[3:4] == ("specops-watch",)]
    assert [argv[3] for argv in run.host.commands if argv[3:4] == ("specops-disarm",)] == ["specops-disarm"]


def test_a_first_deploy_has_nothing_to_roll_back_to_and_no_watch(world: World) -> None:
    run = world.run(world.scene())
    assert "watch" not in run.step_names()
    assert run.outcome["watch_s"] is None


def test_a_failed_deploy_disarms_the_guard_and_starts_no_watch(world: World) -> None:
    """The disarm's own command, planned "if needed" beside a watch, runs when the watch does not: after the
    rollback of a release whose gates failed."""
    old = "20260101T000000Z-old"
    run = world.run(world.scene(releases=[release(old, OLD_TREE)], current=old, unit=world.unit_text),
                    smokes=(False, True))  # fmt: skip
    assert run.outcome["outcome"] == "rolled-back"
    disarm = next(step for step in run.plan["steps"] if step["step"] == "disarm")
    assert disarm["commands"][0]["times"] == "if-needed"
    names = [argv[3] for argv in run.host.commands if argv[3:4] in (("specops-disarm",), ("specops-watch",))]
    assert names == ["specops-disarm"]
