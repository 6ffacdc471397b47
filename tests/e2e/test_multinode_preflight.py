"""A multi-node engine's deploy tests its dist port on every rank before anything stops: a port that rank 0
cannot bind, or that a worker cannot reach, fails the deploy on every rank, naming the port and the ranks, with
nothing stopped or switched. Real test hosts that reach each other (or, with a route dropped, do not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene
from tests.e2e.test_multinode_deploy import (
    ENGINE,
    SERVICE_DIR,
    _change,
    _current,
    _deploy,
    _engine,
    _first_release,
    _invocation,
)
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e
DIST_PORT = 5000  # the engine's default
SQUATTER = "import socket,time; s=socket.socket(); s.bind(('0.0.0.0', {port})); s.listen(); time.sleep(600)"


@pytest.fixture
def ranks(testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
          monkeypatch: pytest.MonkeyPatch) -> tuple[list[TestHost], Scene]:  # fmt: skip
    hosts = testhost_factory(2)  # type: ignore[operator]
    return hosts, _engine(hosts, host_venv, tmp_path, capsys, monkeypatch)


def test_a_worker_that_cannot_reach_rank_0s_dist_port_stops_the_deploy_before_any_stop(
    ranks: tuple[list[TestHost], Scene],
) -> None:
    hosts, scene = ranks
    old = _first_release(scene)
    runs = [_invocation(host) for host in hosts]
    hosts[1].exec(["ip", "route", "del", f"10.200.{hosts[0].index}.0/30"])  # rank 1 no longer reaches rank 0
    _change(scene)

    result, outcomes = _deploy(scene)
    assert result.code == 1, result.out + result.err
    lost = f"rank 1 ({hosts[1].name}) cannot connect to rank 0 ({hosts[0].name}) at {hosts[0].ip}:{DIST_PORT}"
    for host in hosts:  # every rank says why, and that nothing stopped
        assert outcomes[host.name]["outcome"] == "preflight-failed", outcomes
        assert lost in str(outcomes[host.name]["cause"]), outcomes[host.name]
        assert "nothing was stopped on any rank" in str(outcomes[host.name]["cause"])
    assert [_current(host) for host in hosts] == [old, old]
    assert [_invocation(host) for host in hosts] == runs  # no restart on either rank

    text = scene.cli("deploy", ENGINE, "--build", str(UNPATCHED), "--patch", str(PATCH))
    assert text.code == 1 and lost in text.out + text.err, text.out + text.err
    restarted = scene.cli("restart", ENGINE)  # a restart tests it before rank 0 drains, too
    assert restarted.code == 1 and lost in restarted.out + restarted.err, restarted.out + restarted.err
    assert [_invocation(host) for host in hosts] == runs

    dry = scene.cli("deploy", ENGINE, "--build", str(UNPATCHED), "--patch", str(PATCH), "--dry-run")  # its test
    assert dry.code == 0, dry.out + dry.err
    assert "dist-port" in dry.out and f"connect to rank 0 at {hosts[0].ip}:{DIST_PORT}" in dry.out, dry.out
    skipped, outcomes = _deploy(scene, "--skip-check", "engine.dist_reach", "--dry-run")
    assert skipped.code == 0 and "skipped: engine.dist_reach" in skipped.out, skipped.out + skipped.err


def test_a_squatter_on_rank_0s_dist_port_stops_a_first_deploy_naming_it(
    ranks: tuple[list[TestHost], Scene], host_venv: Path
) -> None:
    hosts, scene = ranks
    python = str(host_venv / "bin" / "python")
    hosts[0].exec(["systemd-run", "--unit", "squatter", python, "-c", SQUATTER.format(port=DIST_PORT)])

    result = scene.cli("deploy", ENGINE, "--build", str(UNPATCHED), "--patch", str(PATCH), "--json")
    assert result.code == 1, result.out + result.err
    outcomes = json.loads(result.out)["hosts"]
    held = f"dist port {DIST_PORT} on rank 0 ({hosts[0].name}) is held by pid "
    for host in hosts:
        cause = str(outcomes[host.name]["cause"])
        assert held in cause and "(squatter.service), not by sglang.service" in cause, outcomes[host.name]
    for host in hosts:  # nothing switched: no release is current
        assert host.exec(["test", "-e", f"{SERVICE_DIR}/current"], check=False).returncode != 0, host.name
    for host in hosts:
        state = host.exec(["systemctl", "show", "-p", "ActiveState", "--value", "sglang"]).stdout.decode().strip()
        assert state != "active", host.name
