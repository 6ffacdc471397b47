"""A group holding a multi-node engine and a plain host, deployed, restarted and rolled back with one command each,
on three real test hosts: the engine's two ranks (peered) act together as one member, the plain host as another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED
from tests.e2e.test_multinode_deploy import ENGINE, _change, _current, _engine

pytestmark = pytest.mark.e2e


def test_a_group_of_an_engine_and_a_host_deploys_both_members_verified(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hosts = testhost_factory(3)  # type: ignore[operator]
    scene = _engine(hosts, host_venv, tmp_path, capsys, monkeypatch, ranks=2)
    solo = hosts[2]
    toml = scene.folder / "specops.toml"
    toml.write_text(toml.read_text().replace("\n[groups]\n", f'\n[groups]\nfleet = ["{ENGINE}", "{solo.name}"]\n'))

    dry = scene.cli("deploy", "fleet", "--build", str(UNPATCHED), "--patch", str(PATCH), "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert f"engine {ENGINE}: 2 ranks (rank 0: {hosts[0].name}, rank 1: {hosts[1].name})" in dry.out

    shown = scene.cli("deploy", "fleet", "--build", str(UNPATCHED), "--patch", str(PATCH))  # the text summary
    assert shown.code == 0, shown.out + shown.err
    rows = [line.split()[:2] for line in shown.out.splitlines() if line.split()]
    assert rows[:3] == [["HOST", "OUTCOME"], [ENGINE, "deployed"], [solo.name, "deployed"]], shown.out
    for rank, host in enumerate(hosts[:2]):
        unit = host.exec(["cat", "/etc/systemd/system/sglang.service"]).stdout.decode()
        assert f"--node-rank {rank}" in unit
    assert "--node-rank" not in solo.exec(["cat", "/etc/systemd/system/sglang.service"]).stdout.decode()

    first = [_current(host) for host in hosts]
    _change(scene)  # a new release on every host: the second deploy, in JSON, changes all three
    deployed = scene.cli("deploy", "fleet", "--build", str(UNPATCHED), "--patch", str(PATCH), "--json")
    assert deployed.code == 0, deployed.out + deployed.err
    document = json.loads(deployed.out)
    outcomes = document["hosts"]
    assert [outcomes[host.name]["outcome"] for host in hosts] == ["deployed", "deployed", "deployed"]
    engine = document["engines"][ENGINE]
    assert engine["outcome"] == "deployed" and engine["ranks"] == [hosts[0].name, hosts[1].name]
    release = outcomes[hosts[0].name]["release"]
    assert engine["release"] == release == outcomes[hosts[1].name]["release"] == _current(hosts[1])
    assert _current(solo) == outcomes[solo.name]["release"] != release  # the plain host: its own release

    restarted = scene.cli("restart", "fleet", "--json")  # the engine's ranks as one, the host beside it
    assert restarted.code == 0, restarted.out + restarted.err
    assert list(json.loads(restarted.out)["hosts"]) == [host.name for host in hosts]

    back = scene.cli("rollback", "fleet", "--json")  # every member to its last verified release, the engine as one
    assert back.code == 0, back.out + back.err
    assert [_current(host) for host in hosts] == first
    assert json.loads(back.out)["engines"] == {ENGINE: {"ranks": [hosts[0].name, hosts[1].name]}}
