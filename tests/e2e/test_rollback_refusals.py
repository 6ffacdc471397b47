"""A rollback that cannot happen leaves a serving host serving: `specops rollback` after one verified deploy
(nothing to go back to), `--to` a well-formed id the host does not have, and `--to` a release marked bad without
`--force` each exit 1 with `error:` and `hint:` lines, and the engine keeps its process (the same systemd
InvocationID) and still answers the smoke gate; the guard's watch keeps watching. Then a forced rollback to the
bad release runs, its progress lines in order. Real systemd, OpenSSH and test engine on a test host."""

from __future__ import annotations

import json

import pytest

from tests.e2e.deployscene import Scene
from tests.testbed.engine import RENUMBER_PATCH
from tests.unit.clirun import CliResult

pytestmark = pytest.mark.e2e
UNKNOWN = "20200101T000000Z-0123456789ab"  # a release id, but not one on the host


def _invocation(scene: Scene) -> str:
    """systemd's id of the engine's current run: a stop or restart changes it."""
    shown = scene.host.exec(["systemctl", "show", "-p", "InvocationID", "--value", "sglang.service"])
    invocation = shown.stdout.decode().strip()
    assert invocation, "the engine does not run"
    return invocation


def _refused(result: CliResult, message: str, hint: str, serving: str) -> None:
    assert result.code == 1, result.out + result.err
    assert f"error: {message}" in result.err, result.err
    assert f"nothing on the host was changed; {serving} still serves" in result.err
    assert "hint: " in result.err and hint in result.err, result.err
    assert result.out == ""


def _still_serving(scene: Scene, invocation: str) -> None:
    assert _invocation(scene) == invocation  # never stopped, never restarted
    smoke = scene.cli("smoke", scene.host.name)
    assert smoke.code == 0, smoke.out + smoke.err
    locked = json.loads(scene.cli("lock", "status", scene.host.name, "--json").out)
    assert locked["locked"] is False


def _watch_state(scene: Scene) -> object:
    status = json.loads(scene.cli("status", scene.host.name, "--json").out)
    watch = status.get("watch")
    return watch.get("state") if isinstance(watch, dict) else None


def test_refused_rollbacks_leave_the_engine_serving_and_a_forced_one_runs_in_order(scene: Scene) -> None:
    name = scene.host.name
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    one = str(good["release"])
    before = _invocation(scene)
    nothing = scene.cli("rollback", name)
    _refused(nothing, f"{name}: no verified release other than the current one", f"`specops deploy {name}`", one)
    unknown = scene.cli("rollback", name, "--to", UNKNOWN)
    _refused(unknown, f"{name}: release {UNKNOWN} does not exist on this host", f"`specops releases {name}`", one)
    dry = scene.cli("rollback", name, "--dry-run")
    _refused(dry, f"{name}: no verified release other than the current one", f"`specops deploy {name}`", one)
    _still_serving(scene, before)

    second, outcome = scene.deploy("--patch", str(RENUMBER_PATCH), "--force")
    assert second.code == 0 and outcome["outcome"] == "deployed", second.out + second.err
    two = str(outcome["release"])
    marked = scene.cli("releases", name, "--mark-bad", one, "--reason", "repetition loops")
    assert marked.code == 0, marked.out + marked.err
    assert _watch_state(scene) == "watching"
    before = _invocation(scene)
    bad = scene.cli("rollback", name, "--to", one)
    _refused(bad, f"{name}: release {one} is marked bad (repetition loops)", "pass --force", two)
    _refused(scene.cli("rollback", name), f"{name}: no verified release other than the current one", "--force", two)
    _still_serving(scene, before)
    assert _watch_state(scene) == "watching"  # the lock was never taken: the guard still watches the release

    plan = scene.cli("rollback", name, "--to", one, "--force", "--dry-run")
    assert plan.code == 0, plan.out + plan.err
    assert plan.out.startswith(f"{name}: would roll back {two} -> {one}\n  why {one}: named with --to; marked bad")
    assert _invocation(scene) == before and _watch_state(scene) == "watching"

    forced = scene.cli("rollback", name, "--to", one, "--force")
    assert forced.code == 0, forced.out + forced.err
    assert forced.out.startswith(f"rolled back {two} -> {one}: verified; {two} marked bad")
    lines = [line for line in forced.err.splitlines() if line.startswith(f"{name} ")]
    phases = [line.split(" ", 2)[1] for line in lines]
    assert lines[0].startswith(f"{name} rollback rolling back {two} -> {one}"), forced.err  # announced first
    assert phases[-1] == "smoke", forced.err  # proven last
    switch = next(i for i, line in enumerate(lines) if "switching current to" in line)
    assert phases.index("drain") < phases.index("gpus") < switch < phases.index("smoke"), forced.err
