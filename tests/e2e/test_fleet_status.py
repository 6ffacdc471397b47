"""`specops status GROUP` over three real test hosts: one serving a verified release, one never deployed,
one stopped. One row per host, the stopped one a row that says unreachable, exit 4; --json has all three."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.deployscene import make_scene
from tests.testbed.staging import inventory_toml
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.lifecycle import stop_host

pytestmark = pytest.mark.e2e


def test_status_of_a_group_with_a_stopped_host(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hosts: list[TestHost] = testhost_factory(3)  # type: ignore[operator]
    serving, idle, stopped = hosts
    scene = make_scene(serving, host_venv, tmp_path, capsys, monkeypatch)
    ssh_config = tmp_path / "home" / ".ssh" / "config"
    blocks = [host.ssh_config_block(host.name) + "    ConnectTimeout 5\n" for host in (idle, stopped)]
    ssh_config.write_text(ssh_config.read_text() + "".join(blocks))
    extra = "".join(inventory_toml(host, host_venv / "bin" / "python") for host in (idle, stopped))
    names = json.dumps([host.name for host in hosts])
    config = tmp_path / "specops.toml"
    config.write_text(config.read_text() + extra.replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
                      + f"\n[groups]\ngpu = {names}\n")  # fmt: skip
    deployed, outcome = scene.deploy()
    assert deployed.code == 0, deployed.out + deployed.err
    stop_host(stopped)

    table = scene.cli("status", "gpu")
    assert table.code == 4, table.out + table.err
    lines = table.out.splitlines()
    assert lines[0].split() == ["HOST", "RELEASE", "PROFILE", "VERIFIED", "UNIT", "RESTARTS", "HEALTH", "TOK/S",
                                "ACCEPT", "DRIFT"]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert list(rows) == [serving.name, idle.name, stopped.name]
    assert rows[serving.name][1:5] == [str(outcome["release"]), "ddtree", "yes", "active/running"]
    assert rows[serving.name][6] == "200"
    assert rows[serving.name][-1] == "none"  # the fingerprint recorded at preflight, nothing changed since
    assert rows[idle.name][1:4] == ["-", "-", "NO"]
    assert rows[stopped.name][1] == "unreachable"
    assert any(line.startswith(f"{stopped.name}: ") for line in lines[4:]), table.out

    document = json.loads(scene.cli("status", "gpu", "--json").out)["hosts"]
    assert list(document) == [serving.name, idle.name, stopped.name]
    assert document[serving.name]["verified"] is True and document[serving.name]["health"] == 200
    assert document[serving.name]["figures"]["tokens_per_s"] > 0
    assert document[serving.name]["drift"] == [] and document[idle.name]["drift"] is None
    assert document[idle.name]["current"] is None and document[idle.name]["exit_code"] == 1
    assert document[stopped.name]["unreachable"] is True and document[stopped.name]["exit_code"] == 4

    up = json.dumps([serving.name, idle.name])
    config.write_text(config.read_text() + f"up = {up}\n")
    logs = scene.cli("logs", "up", "-n", "5")
    assert logs.code == 0, logs.out + logs.err
    assert any(line.split(" | ")[0].rstrip() == serving.name for line in logs.out.splitlines()), logs.out

    document = json.loads(scene.cli("logs", "up", "-n", "5", "--json").out)["hosts"]  # one document, per host
    assert [entry["host"] for entry in document] == [serving.name, idle.name]
    assert len(document[0]["lines"]) == 5 and document[1]["lines"] == []

    run = json.loads(scene.cli("logs", serving.name, "--since", "deploy", "--json").out)["lines"]
    assert len(run) > 1 and run[0] != run[-1]  # the engine's first line is not its last one
    found = scene.cli("logs", serving.name, "-n", "1", "--grep", f"^{re.escape(run[0])}$")  # not only the last line
    assert found.code == 0 and found.out.splitlines()[0] == run[0], found.out + found.err
