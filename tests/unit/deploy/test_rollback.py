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
    return world.scene(releases=releases, current=NEW, unit=world.unit_text,
                       rollback_reply={"ok": True, "previous": NEW, "current": OLD}, **kwargs)  # fmt: skip


def _commands(host_calls: list[object]) -> list[str]:
    """Each command by what it does: the release script's op, else its first words."""
    names = []
    for call in recorded(host_calls):  # type: ignore[arg-type]
        argv = call["argv"]
        if call["kind"] == "conversation":
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
        "lock acquire", "release list", "systemctl stop", "systemctl show", "sh -c",  # drain, stop, GPUs free
        "journalctl -n", "release rollback", "readiness poll",
        "release update-manifest", "audit", "lock release",
        "/opt/venv/bin/python -I",  # the probe whose fingerprint is kept locally for diff/diagnose
    ]  # fmt: skip
    remembered = world.folder / "state" / "specops" / "fingerprints" / f"{HOST}.json"
    assert json.loads(remembered.read_text())[-1]["release"] == OLD
    entry = json.loads((world.folder / "state" / "specops" / "audit.jsonl").read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"], entry["from"], entry["to"]) == ("rollback", "verified", NEW, OLD)


def test_manual_rollback_whose_gate_fails_exits_1_and_records_nothing_in_the_manifest(world: World) -> None:
    scene = _scene(world)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [False])
    result = world.cli("rollback", HOST)
    assert result.code == 1
    assert result.out.startswith(f"rolled back {NEW} -> {OLD}: NOT healthy: smoke gate failed: accept_length 1.0")
    assert "release update-manifest" not in _commands(hosts[0].calls)


def test_a_refused_rollback_is_a_result_that_names_why_and_runs_no_gate(world: World) -> None:
    refusal = {"ok": False, "kind": "no-target", "error": "no verified release other than the current one"}
    scene = world.scene(releases=[release(NEW, "1" * 64)], current=NEW, rollback_reply=refusal)
    host = scene.host()
    use_scene(world.monkeypatch, scene, [host], [True])
    result = rollback_host(host, scene.spec, lambda name: _profile(world), None, "specops rollback", Recorder())
    assert (result.ok, result.from_release, result.to_release, result.gates) == (False, NEW, None, None)
    assert result.summary == f"rollback failed: {HOST}: no verified release other than the current one"
    assert "readiness poll" not in _commands(host.calls)


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
