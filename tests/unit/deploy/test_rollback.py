"""`specops rollback` and the rollback orchestration (deploy/rollback.py), against a scripted host."""

from __future__ import annotations

import json

from specops.commands import journal
from specops.deploy.rollback import rollback_host
from specops.events import Recorder
from tests.unit.deploy.plan_match import recorded
from tests.unit.deploy.scene import FIGURES, HOST, release, use_scene
from tests.unit.deploy.world import World

OLD, NEW = "20260101T000000Z-old", "20260102T000000Z-new"


def _scene(world: World, **kwargs: object):  # type: ignore[no-untyped-def]
    releases = [release(OLD, "0" * 64), release(NEW, "1" * 64)]
    kwargs.setdefault("rollback_reply", {"ok": True, "previous": NEW, "current": OLD})
    return world.scene(releases=releases, current=NEW, unit=world.unit_text, **kwargs)


# after a refused host-side rollback: `current` read again, then started with its own unit and env file back
STARTED_AGAIN = ["release list", "journalctl -n", "release restore-config", "systemctl reset-failed",
                 "systemctl restart", "readiness poll"]  # fmt: skip


def _commands(host_calls: list[object]) -> list[str]:
    """Each command by what it does: the release script's op, else its first words."""
    names = []
    for call in recorded(host_calls):  # type: ignore[arg-type]
        argv = call.get("argv")
        if argv is None:
            names.append(f"put {call['path']}")
        elif call["kind"] == "conversation":
            names.append("conversation")
        elif argv[-1].endswith("/audit.jsonl"):
            names.append("audit")
        elif "-IS" in argv:
            names.append(f"release {argv[4]}")
        elif argv[:2] == ["sh", "-c"] and argv[3:4] == ["specops-lock"]:
            names.append(f"lock {argv[4]}")
        elif argv[:2] == ["sh", "-c"] and journal.POLL_MARKER in argv[2]:
            names.append("readiness poll")
        else:
            names.append(" ".join(argv[:2]))
    return names


def test_manual_rollback_switches_back_gates_and_records(world: World) -> None:
    scene = _scene(world)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    result = world.cli("rollback", HOST, "--json")
    assert result.code == 0, result.out + result.err
    document = json.loads(result.out)
    assert (document["ok"], document["from"], document["to"]) == (True, NEW, OLD)
    assert document["gates"]["smoke"]["figures"] == FIGURES
    assert _commands(hosts[0].calls) == [
        "conversation",  # one exec: every command below is a request on it
        "release list",  # the plan, before the lock: a refusal never takes it (nor ends the guard's watch)
        "lock acquire", "release list", "systemctl stop", "systemctl show", "sh -c",  # drain, stop, GPUs free
        "journalctl -n", "release rollback", "readiness poll",
        "release update-manifest", "audit",
        "release list", "systemctl show",  # what serves at the end, for the summary's last line
        "lock release",
        "/opt/venv/bin/python -I",  # the probe whose fingerprint is kept locally for diff/diagnose
    ]  # fmt: skip
    remembered = world.folder / "state" / "specops" / "fingerprints" / f"{HOST}.json"
    assert json.loads(remembered.read_text())[-1]["release"] == OLD
    entry = json.loads((world.folder / "state" / "specops" / "audit.jsonl").read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"], entry["from"], entry["to"]) == ("rollback", "verified", NEW, OLD)


def test_a_rollback_to_a_release_without_its_own_env_file_says_the_live_one_was_left(world: World) -> None:
    """A release made by an older specops kept no env file: the host leaves the live one, and the result says so."""
    scene = _scene(world, rollback_reply={"ok": True, "previous": NEW, "current": OLD, "env": "not recorded"})
    use_scene(world.monkeypatch, scene, [scene.host()], [True])
    result = world.cli("rollback", HOST)
    assert result.code == 0, result.out + result.err
    assert f"{OLD} has no env file of its own (made by an older specops): the live one is left as it was" in result.out


def test_manual_rollback_whose_gate_fails_exits_7_and_records_nothing_in_the_manifest(world: World) -> None:
    scene = _scene(world)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [False])
    result = world.cli("rollback", HOST)
    assert result.code == 7  # a failed rollback: no verified release serves
    assert result.out.startswith(f"rolled back {NEW} -> {OLD}: NOT healthy: smoke gate failed: accept_length 1.0")
    assert "release update-manifest" not in _commands(hosts[0].calls)


REFUSAL = {"ok": False, "kind": "target", "error": f"release {OLD} is not a verified, complete release on this host"}
START_AGAIN = f"start it with `specops restart {HOST}`, or on the host `systemctl start sglang.service`"


def test_a_host_side_refusal_after_the_stop_starts_the_engine_that_served_again(world: World) -> None:
    """The safety net: the host refuses a target the plan accepted (it changed in between). The engine was
    stopped by then: it is started again and proven ready, and the result says so; no gate, no mark."""
    scene = _scene(world, rollback_reply=REFUSAL)
    host = scene.host()
    use_scene(world.monkeypatch, scene, [host], [True])
    events = Recorder()
    result = rollback_host(host, scene.spec, lambda name: _profile(world), OLD, "specops rollback", events)
    assert (result.ok, result.from_release, result.to_release, result.gates) == (False, NEW, None, None)
    assert (result.stopped, result.restored, result.dark) == (True, NEW, None)
    assert result.summary == (f"rollback failed: {HOST}: release {OLD} is not a verified, complete release on "
                              f"this host\nthe engine was stopped, then started again: {NEW} serves as before")  # fmt: skip
    after = _commands(host.calls)[_commands(host.calls).index("release rollback") + 1 :]
    assert after == STARTED_AGAIN
    assert f"{NEW} serves again" in " ".join(event.message for event in events.events)


def test_a_refusal_after_the_stop_whose_restart_never_comes_up_says_loudly_that_nothing_serves(world: World) -> None:
    scene = _scene(world, rollback_reply=REFUSAL, ready=[False])
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    result = world.cli("rollback", HOST, "--to", OLD)
    assert result.code == 7
    dark = (
        f"NOTHING SERVES on {HOST}: sglang.service was stopped by the rollback and {NEW}, started again, is not ready"
    )
    assert result.out.startswith(f"rollback failed: {HOST}: release {OLD} is not a verified")
    assert dark in result.out and START_AGAIN in result.out  # the text output, not only --json
    assert dark in result.err  # named on screen the moment it is known


def test_gpus_that_stay_busy_after_the_stop_say_that_nothing_serves_and_start_nothing(world: World) -> None:
    from specops.ops.engine_stop import GpusBusy

    def busy(*args: object, **kwargs: object) -> None:
        raise GpusBusy(f"{HOST}: the new engine was not started: its GPUs are not free:\n  pid 7 (python)",
                       hint="rerun with --reap to stop the orphans of the old engine (only those)")  # fmt: skip

    scene = _scene(world)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    world.monkeypatch.setattr("specops.deploy.rollback.stop_engine", busy)
    result = world.cli("rollback", HOST)
    assert result.code == 7
    assert "its GPUs are not free" in result.out and "--reap" in result.out
    assert (
        f"NOTHING SERVES on {HOST}: sglang.service was stopped by the rollback and its GPUs are not free" in result.out
    )
    assert not {"release rollback", "systemctl restart"} & set(_commands(hosts[0].calls))


def _profile(world: World):  # type: ignore[no-untyped-def]
    from specops.config.loader import load_config

    return load_config(world.folder / "specops.toml", world.folder).resolve(HOST, None).profile


def test_rollback_to_a_path_is_refused_before_connecting(world: World) -> None:
    scene = _scene(world)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    result = world.cli("rollback", HOST, "--to", "../../etc")
    assert result.code == 2
    assert "error: --to '../../etc' is not a release id" in result.err
    assert hosts[0].calls == []


def test_deploy_options_out_of_range_are_usage_errors_before_anything_runs(world: World) -> None:
    for option, value in (("--lock-wait", "-5"), ("--parallel", "0"), ("--max-fail-percent", "500")):
        result = world.cli("deploy", HOST, "--build", str(world.folder), option, value)
        assert result.code == 2, (option, result.out, result.err)
        assert option in result.err


def test_manual_rollback_takes_over_a_dead_local_holders_lock_says_so_and_records_it(world: World) -> None:
    import subprocess
    import sys
    from dataclasses import replace

    from specops.ops.lock import LockHolder

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    killed = replace(LockHolder.current("specops deploy gpu1 (killed)"), pid=child.pid)
    scene = _scene(world, lock_holder=killed.to_json().decode())
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    result = world.cli("-v", "rollback", HOST)
    assert result.code == 0, result.out + result.err
    assert f"took over the lock of a deploy that no longer runs (process {child.pid}" in result.err
    entry = json.loads((world.folder / "state" / "specops" / "audit.jsonl").read_text().splitlines()[-1])
    assert entry["action"] == "rollback" and entry["lock_taken_over"].startswith("took over the lock")
    assert killed.token not in (world.folder / "state" / "specops" / "audit.jsonl").read_text()


def test_a_deploys_rollback_refused_after_the_stop_starts_the_engine_again(world: World) -> None:
    """The automatic rollback inside a deploy goes the same way: the host refuses after the stop, the engine is
    started again and proven ready, and the outcome says nothing was rolled back and what serves."""
    scene = world.scene(releases=[release(OLD, "0" * 64)], current=OLD, unit=world.unit_text, rollback_reply=REFUSAL)
    run = world.run(scene, smokes=(False,))
    assert (run.outcome["outcome"], run.result.code) == ("rollback-failed", 7)  # the failed release serves again
    back = run.outcome["rollback"]
    assert (back["ok"], back["stopped"], back["nothing_serves"]) == (False, True, None)
    assert back["restored"] == OLD  # what `current` names (the scripted host's listing never changes)
    commands = _commands(run.host.calls)
    after = commands[commands.index("release rollback") + 1 :]
    assert after[: len(STARTED_AGAIN)] == STARTED_AGAIN


def test_a_rollback_that_finds_its_lock_lost_before_the_stop_changes_nothing(world: World) -> None:
    """The lock lost right after it was taken (removed by `specops lock release --force`, or taken over after a
    suspension): no stop, no switch, no restart; exit 6 naming why."""
    from typing import Any

    from specops.ops import lock

    acquire = lock.acquire

    def lost_at_once(*args: Any, **kwargs: Any) -> lock.HostLock:
        held = acquire(*args, **kwargs)
        held.lost = True
        return held

    world.monkeypatch.setattr(lock, "acquire", lost_at_once)
    scene = _scene(world)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    result = world.cli("rollback", HOST)
    assert result.code == 6, result.out + result.err
    assert "stopped before stopping sglang.service, changing nothing more on the host" in result.err
    assert _commands(hosts[0].calls) == ["conversation", "release list", "lock acquire", "release list", "lock release"]
