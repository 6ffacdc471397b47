"""`specops status GROUP` over three real test hosts: one serving a verified release, one never deployed,
one stopped. One row per host, the stopped one a row that says unreachable, exit 4; --json has all three."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, make_scene
from tests.testbed import drift
from tests.testbed.staging import install_models, inventory_toml
from tests.testbed.testhost import TestHost

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
    # its sshd stops, the host stays: a removed host frees its address, and a test host started meanwhile by
    # another test could take it and answer in its place
    stopped.exec(["systemctl", "stop", "ssh.service"])

    table = scene.cli("status", "gpu")
    assert table.code == 4, table.out + table.err
    lines = table.out.splitlines()
    assert lines[0].split() == ["HOST", "BUILD", "RELEASE", "PROFILE", "VERIFIED", "UNIT", "RESTARTS", "HEALTH",
                                "TOK/S", "ACCEPT", "DRIFT"]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert list(rows) == [serving.name, idle.name, stopped.name]
    release = str(outcome["release"])
    assert rows[serving.name][1:6] == [release.split("-")[0], release, "ddtree", "yes", "active/running"]
    assert rows[serving.name][7] == "200"
    assert rows[serving.name][-1] == "none"  # the fingerprint recorded at preflight, nothing changed since
    assert rows[idle.name][1:5] == ["-", "-", "-", "NO"]
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


def test_one_build_has_one_id_on_every_host_of_a_group(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Deployed to a group of three, one build is one build id on every host: `status GROUP` shows it,
    `rollback GROUP --to BUILD` puts it back on each host after another build, and `releases GROUP --mark-bad
    BUILD` marks each host's own release of it; a redeploy of it then warns."""
    hosts: list[TestHost] = testhost_factory(3)  # type: ignore[operator]
    scene = make_scene(hosts[0], host_venv, tmp_path, capsys, monkeypatch)
    ssh_config = tmp_path / "home" / ".ssh" / "config"
    for other in hosts[1:]:
        install_models(other, tmp_path / other.name)
        drift.install_nvidia_smi(other, "h100x8-580")
        drift.set_torch_cuda_tag(other, host_venv, version="2.13.0+cu130", cuda="13.0")
        ssh_config.write_text(ssh_config.read_text() + other.ssh_config_block(other.name))
    extra = "".join(inventory_toml(host, host_venv / "bin" / "python") for host in hosts[1:])
    config = tmp_path / "specops.toml"
    config.write_text(config.read_text() + extra.replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
                      + f"\n[groups]\ngpu = {json.dumps([host.name for host in hosts])}\n")  # fmt: skip
    build, releases = _deploy_group(scene, "--patch", str(PATCH))

    table = scene.cli("status", "gpu")
    assert table.code == 0, table.out + table.err
    lines = table.out.splitlines()
    assert lines[0].split()[:3] == ["HOST", "BUILD", "RELEASE"]
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert {name: row[1:3] for name, row in rows.items()} == {name: [build, release] for name, release in
                                                               releases.items()}  # fmt: skip

    other_build, others = _deploy_group(scene, "--profile", "dflash")  # another build: another id, on every host
    assert other_build != build
    refused = scene.cli("rollback", "gpu", "--to", "0" * 12)  # no host has it: refused before any host changes
    assert refused.code == 1 and f"no verified release of build {'0' * 12} on this host" in refused.err, refused.err
    assert all(row.split()[1] == other_build for row in scene.cli("status", "gpu").out.splitlines()[1:4])
    back = scene.cli("rollback", "gpu", "--to", build)
    assert back.code == 0, back.out + back.err
    for name, release in releases.items():
        assert f"{name}: rolled back {others[name]} -> {release}: verified" in back.out, back.out

    marked = scene.cli("releases", "gpu", "--mark-bad", build, "--reason", "wrong answers")
    assert marked.code == 0, marked.out + marked.err
    for name, release in releases.items():
        assert re.search(rf"^{re.escape(name)}\s+{release}\s+bad: wrong answers$", marked.out, re.MULTILINE), marked.out
        listed = json.loads(scene.cli("releases", name, "--json").out)["releases"]
        assert [r["bad"]["reason"] for r in listed if r["id"] == release] == ["wrong answers"]

    again = scene.cli("deploy", hosts[0].name, "--build", str(UNPATCHED), "--patch", str(PATCH))
    said = again.out + again.err
    assert f"build {build} is marked bad on host {hosts[0].name}: wrong answers" in said, said


def _deploy_group(scene: Scene, *options: str) -> tuple[str, dict[str, str]]:
    """Deploy the test build (with `options`: a patch, a profile) to the group: its build id, and each host's
    release id."""
    deployed = scene.cli("deploy", "gpu", "--build", str(UNPATCHED), *options, "--json")
    assert deployed.code == 0, deployed.out + deployed.err
    releases = {name: str(outcome["release"]) for name, outcome in json.loads(deployed.out)["hosts"].items()}
    builds = {release.split("-")[0] for release in releases.values()}
    assert len(builds) == 1, releases  # the same build: the same id, but for each host's own unit (config part)
    return builds.pop(), releases
