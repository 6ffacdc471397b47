"""The host as operators of real GPU fleets reach it: through a bastion, as a login user with sudo (root login
off), with the keys only in ssh-agent. Each of these is tested alone elsewhere; here all three at once, through
doctor, deploy with its gates, a second deploy, rollback, logs and status, on REAL test hosts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.host.ssh.connection import shared_hops
from tests.e2e.deployscene import make_scene
from tests.testbed.testhost import TestHost, start_host, stop_host
from tests.testbed.testhost.bastion import Agent, hide_behind
from tests.testbed.testhost.sudo import add_sudo_user, disable_root_login

pytestmark = pytest.mark.e2e

SERVICE_DIR = "/opt/specops/sglang"


@pytest.fixture
def bastion_and_target(testhost_session: None) -> Iterator[tuple[TestHost, TestHost]]:
    hosts: list[TestHost] = []
    try:
        hosts = [start_host(), start_host()]
        hide_behind(hosts[1], hosts[0])
        yield hosts[0], hosts[1]
    finally:
        shared_hops.close_all()
        for host in hosts:
            stop_host(host)


def _ssh_config(bastion: TestHost, target: TestHost, user: str) -> str:
    """No key named anywhere: the agent holds them. The bastion is entered as root, the target as `user`."""
    return (
        f"Host bastion\n    HostName {bastion.ip}\n    User root\n    UserKnownHostsFile {bastion.known_hosts_path}\n"
        f"Host {target.name}\n    HostName {target.ip}\n    User {user}\n    ProxyJump bastion\n"
        f"    UserKnownHostsFile {target.known_hosts_path}\n"
        "Host *\n    ConnectTimeout 5\n"
    )


def test_sudo_user_behind_a_bastion_with_agent_keys_deploys_rolls_back_and_reads_logs(
    bastion_and_target: tuple[TestHost, TestHost], host_venv: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    bastion, target = bastion_and_target
    scene = make_scene(target, host_venv, tmp_path, capsys, monkeypatch)
    add_sudo_user(target, "deploy")
    disable_root_login(target)
    (tmp_path / "home" / ".ssh" / "config").write_text(_ssh_config(bastion, target, "deploy"))
    config = tmp_path / "specops.toml"
    config.write_text(config.read_text() + 'become = "sudo"\n')
    agent = Agent.start(tmp_path)
    try:
        agent.add(bastion.key_path)
        agent.add(target.key_path)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(agent.socket))
        row = json.loads(scene.cli("--json", "hosts", target.name).out)["hosts"][0]
        assert (row["user"], row["become"], row["hops"], row["keys"]) == ("deploy", "sudo", ["bastion"], [])

        doctor = scene.cli("doctor", target.name, "--json")
        checks = {c["id"]: c["status"] for c in json.loads(doctor.out)["hosts"][target.name]["checks"]}
        assert (doctor.code, checks["ssh.privilege"]) == (0, "pass"), doctor.out + doctor.err

        first, one = scene.deploy()
        assert (first.code, one["outcome"]) == (0, "deployed"), first.out + first.err
        second, two = scene.deploy("--profile", "dflash", patched=False)
        assert (second.code, two["outcome"], two["gates"]["passed"]) == (0, "deployed", True), second.out + second.err

        back = scene.cli("rollback", target.name, "--json")
        assert back.code == 0, back.out + back.err
        status = json.loads(scene.cli("status", target.name, "--json").out)
        assert (status["current"], status["health"]) == (one["release"], 200)
        logs = scene.cli("logs", target.name, "-n", "40")
        assert logs.code == 0 and logs.out.strip(), logs.out + logs.err

        env = target.exec(["stat", "-c", "%U %G %a", f"{SERVICE_DIR}/env"]).stdout.decode().strip()
        assert env == "root root 600"
        strays = target.exec(["find", SERVICE_DIR, "/run/specops", "!", "-user", "root", "-printf", "%p\n"])
        assert strays.stdout.decode() == ""  # nothing the login user owns: the same tree as a root deploy
    finally:
        agent.stop()
