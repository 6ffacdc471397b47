"""An engine stopped behind specops's back, on a real test host: `status` says so, a deploy of the same build
starts it through the gates (never "unchanged"), and `specops restart HOST` brings it back verified."""

from __future__ import annotations

import json

import pytest

from tests.e2e.deployscene import Scene

pytestmark = pytest.mark.e2e


def _active(scene: Scene) -> str:
    shown = scene.host.exec(["systemctl", "is-active", "sglang.service"], check=False).stdout.decode()
    return shown.strip()


def _stop_on_the_host(scene: Scene) -> None:
    scene.host.exec(["systemctl", "stop", "sglang.service"])
    assert _active(scene) == "inactive"


def test_a_stopped_engine_is_reported_started_by_a_deploy_and_restarted(scene: Scene) -> None:
    first, deployed = scene.deploy()
    assert first.code == 0, first.out + first.err
    release = deployed["release"]
    _stop_on_the_host(scene)

    text = scene.cli("status", scene.host.name)
    assert text.code == 1
    assert "stopped (inactive/dead) since " in text.out
    assert f"`specops restart {scene.host.name}` starts it" in text.out
    found = json.loads(scene.cli("status", scene.host.name, "--json").out)
    assert (found["serving"], found["engine"].split(" since ")[0]) == (False, "stopped (inactive/dead)")

    again, started = scene.deploy()
    assert again.code == 0, again.out + again.err
    assert (started["outcome"], started["release"]) == ("started", release)
    assert str(started["cause"]).startswith("started the stopped engine (inactive/dead since ")
    assert started["gates"]["passed"] is True
    assert _active(scene) == "active"

    _stop_on_the_host(scene)
    plan = scene.cli("restart", scene.host.name, "--dry-run")
    assert plan.code == 0, plan.out + plan.err
    assert f"{scene.host.name}: would restart {release} " in plan.out
    assert _active(scene) == "inactive"  # the dry run changed nothing
    restarted = scene.cli("restart", scene.host.name, "--json")
    assert restarted.code == 0, restarted.out + restarted.err
    outcome = json.loads(restarted.out)["hosts"][scene.host.name]
    assert (outcome["outcome"], outcome["release"], outcome["gates"]["passed"]) == ("restarted", release, True)
    assert _active(scene) == "active"
    assert scene.cli("smoke", scene.host.name).code == 0
    audit = scene.host.read_file("/opt/specops/sglang/audit.jsonl").decode().splitlines()
    assert [json.loads(line)["action"] for line in audit][-1] == "restart"
