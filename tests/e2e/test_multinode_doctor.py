"""A two-rank engine over two peered test hosts: the doctor's engine checks (a torch difference between the
ranks, a squatter on rank 0's dist port, a worker that cannot reach it), then `status` and `logs` of the
engine after both hosts got the same release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, make_scene
from tests.testbed import drift
from tests.testbed.staging import install_models, inventory_toml
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.peering import peer

pytestmark = pytest.mark.e2e

DIST_PORT = 29511
# SO_REUSEADDR as torch's store sets it: the doctor's own test may have left the port in TIME_WAIT on rank 0
SQUATTER = ("import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
            "s.bind(('0.0.0.0', {port})); s.listen(); time.sleep(600)")  # fmt: skip
# waits (10 s at most) until something listens on the port; fails the step otherwise
LISTENING = "for _ in $(seq 200); do ss -Hltn 'sport = :{port}' | grep -q . && exit 0; sleep 0.05; done; exit 1"


def two_ranks(
    factory: object, venv: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Scene, TestHost, TestHost]:
    """Two peered GPU-dressed hosts in one specops.toml (group `both`), the engine not declared yet."""
    rank0, rank1 = factory(2)  # type: ignore[operator]
    peer([rank0, rank1])
    scene = make_scene(rank0, venv, folder, capsys, monkeypatch)
    install_models(rank1, folder)
    drift.install_nvidia_smi(rank1, "h100x8-580")
    drift.set_torch_cuda_tag(rank1, venv, version="2.13.0+cu130", cuda="13.0")
    ssh_config = folder / "home" / ".ssh" / "config"
    ssh_config.write_text(ssh_config.read_text() + rank1.ssh_config_block(rank1.name))
    toml = folder / "specops.toml"
    second = inventory_toml(rank1, venv / "bin" / "python").replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
    toml.write_text(toml.read_text() + second + f'\n[groups]\nboth = ["{rank0.name}", "{rank1.name}"]\n')
    return scene, rank0, rank1


def declare_engine(scene: Scene, rank0: TestHost, rank1: TestHost) -> None:
    toml = scene.folder / "specops.toml"
    toml.write_text(toml.read_text() + f'\n[engines.ds]\nhosts = ["{rank0.name}", "{rank1.name}"]\n'
                    f'dist_port = {DIST_PORT}\ndist_addr = "{rank0.ip}"\ntp_size = 16\n')  # fmt: skip


def engine_checks(scene: Scene, ranks: tuple[TestHost, TestHost]) -> dict[str, dict[str, object]]:
    """`doctor ds --json`: every rank's report under hosts, the engine's checks by id."""
    answer = scene.cli("doctor", "ds", "--json")
    assert answer.out.strip(), f"exit {answer.code}, nothing on stdout: {answer.err}"
    document = json.loads(answer.out)
    assert list(document["hosts"]) == [host.name for host in ranks], document
    return {check["id"]: check for check in document["engines"]["ds"]["checks"]}


def test_the_doctor_names_a_rank_that_differs_and_a_blocked_dist_port(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene, rank0, rank1 = two_ranks(testhost_factory, host_venv, tmp_path, capsys, monkeypatch)
    declare_engine(scene, rank0, rank1)
    ok = engine_checks(scene, (rank0, rank1))
    assert ok["engine.same_torch"]["status"] == "pass", ok["engine.same_torch"]
    assert ok["engine.dist_port"]["status"] == "pass", ok["engine.dist_port"]
    assert ok["engine.dist_reach"]["status"] == "pass", ok["engine.dist_reach"]
    assert ok["engine.gpu_count"]["status"] == "pass", ok["engine.gpu_count"]

    drift.set_torch_cuda_tag(rank1, host_venv, version="2.12.0+cu128", cuda="12.8")
    python = str(host_venv / "bin" / "python")
    rank0.exec(["systemd-run", "--unit", "squatter", python, "-c", SQUATTER.format(port=DIST_PORT)])
    rank0.exec(["bash", "-c", LISTENING.format(port=DIST_PORT)])  # systemd-run returns before python binds
    text = scene.cli("doctor", "ds")
    assert text.code == 1, text.out + text.err
    assert "engine.same_torch" in text.out and f"rank 1 ({rank1.name})" in text.out, text.out
    assert "torch 2.12.0+cu128" in text.out, text.out
    assert f"dist port {DIST_PORT} on rank 0 ({rank0.name}) is held by pid " in text.out, text.out
    assert "squatter.service" in text.out, text.out

    ranks = scene.cli("diff", "ds")  # the ranks side by side: the torch that differs, named by rank
    assert ranks.code == 0 and f"ds: rank 0 ({rank0.name}) and rank 1 ({rank1.name})" in ranks.out, ranks.out
    assert "2.12.0+cu128" in ranks.out and "2.13.0+cu130" in ranks.out, ranks.out

    rank0.exec(["systemctl", "stop", "squatter"])
    rank1.exec(["ip", "route", "del", f"10.200.{rank0.index}.0/30"])
    lost = engine_checks(scene, (rank0, rank1))["engine.dist_reach"]
    assert lost["status"] == "fail", lost
    assert lost["summary"] == (f"rank 1 ({rank1.name}) cannot connect to rank 0 ({rank0.name}) at "
                               f"{rank0.ip}:{DIST_PORT}")  # fmt: skip


def test_status_and_logs_of_an_engine_show_both_ranks(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene, rank0, rank1 = two_ranks(testhost_factory, host_venv, tmp_path, capsys, monkeypatch)
    deployed = scene.cli("deploy", "both", "--build", str(UNPATCHED), "--patch", str(PATCH), "--json")
    assert deployed.code == 0, deployed.out + deployed.err
    release = json.loads(deployed.out)["hosts"][rank0.name]["release"]
    declare_engine(scene, rank0, rank1)

    table = scene.cli("status", "ds")
    assert table.code == 0, table.out + table.err
    lines = table.out.splitlines()
    assert lines[0].split()[:3] == ["HOST", "BUILD", "RELEASE"], table.out
    rows = [line.split() for line in lines[1:] if line.split() and line.split()[0] == "ds"]
    assert len(rows) == 1, table.out
    assert rows[0][2] == f"0:{release},1:{release}", table.out
    assert "0:active/running,1:active/running" in rows[0], table.out
    fleet = scene.cli("status", "--all")  # the fleet's table: the engine is one row, its hosts are not rows
    assert [line.split()[0] for line in fleet.out.splitlines()[1:] if line.strip()] == ["ds"], fleet.out
    document = json.loads(scene.cli("status", "ds", "--json").out)["hosts"]["ds"]
    assert [(rank["rank"], rank["host"], rank["current"]) for rank in document["ranks"]] == [
        (0, rank0.name, release), (1, rank1.name, release)]  # fmt: skip

    for host, word in ((rank0, "zero"), (rank1, "one"), (rank0, "two")):
        fields = f"MESSAGE=marker-{word}\nOBJECT_SYSTEMD_UNIT=sglang.service\n".encode()  # journalctl -u shows it
        host.exec(["logger", "--journald"], input=fields)
    logs = scene.cli("logs", "ds", "-n", "200")
    assert logs.code == 0, logs.out + logs.err
    tags = {rank0.name: f"r0 {rank0.name}", rank1.name: f"r1 {rank1.name}"}
    markers = [line for line in logs.out.splitlines() if "marker-" in line]
    assert [line.split(" | ")[0].strip() for line in markers] == [tags[rank0.name], tags[rank1.name],
                                                                  tags[rank0.name]], logs.out  # fmt: skip
    assert [line.split(" | ")[1] for line in markers] == ["marker-zero", "marker-one", "marker-two"]

    releases = scene.cli("releases", "ds")
    assert releases.code == 0, releases.out + releases.err
    assert [line.split(")")[0] + ")" for line in releases.out.splitlines()[1:3]] == [
        f"ds rank 0 ({rank0.name})", f"ds rank 1 ({rank1.name})"], releases.out  # fmt: skip
    smoke = scene.cli("smoke", "ds")
    assert smoke.code == 0 and f"ds (rank 0: {rank0.name})" in smoke.out, smoke.out + smoke.err
    worker = scene.cli("smoke", rank1.name)  # a worker serves no HTTP: its engine is smoked, through rank 0
    assert worker.code == 0 and f"ds (rank 0: {rank0.name}); {rank1.name} is one of its ranks" in worker.out, (
        worker.out + worker.err
    )
    every = scene.cli("smoke", "--all", "--json")  # both hosts are ranks: one row, the engine's, through rank 0
    assert every.code == 0, every.out + every.err
    assert [(name, row["profile"], row["passed"]) for name, row in json.loads(every.out)["hosts"].items()] == [
        ("ds", "ddtree", True)], every.out  # fmt: skip
    since = scene.cli("diff", "ds", "--release", "last-verified", "--json")  # each rank against its own record
    assert since.code == 0, since.out + since.err
    assert [(found["ranks"], found["left"]) for found in json.loads(since.out)["comparisons"]] == [
        (f"rank 0 ({rank0.name})", f"{rank0.name} (release {release})"),
        (f"rank 1 ({rank1.name})", f"{rank1.name} (release {release})")], since.out  # fmt: skip
    verdicts = json.loads(scene.cli("diagnose", "ds", "--json").out)
    assert verdicts["verdict"] == "no failure", verdicts
    assert [found["host"] for found in verdicts["rank_verdicts"]] == [rank0.name, rank1.name]
