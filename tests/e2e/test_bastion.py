"""Hosts behind a bastion, keys in ssh-agent or behind a passphrase, on REAL test hosts (systemd + OpenSSH).

Topology: `bastion` is an ordinary test host; the two targets' networks were moved into the bastion's
namespace (tests/testbed/testhost/bastion.py), so this machine has no route to them and every byte goes
through the bastion's sshd. The module shares the three hosts (starting them costs seconds of a shared machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from specops.host.ssh.connection import shared_hops
from tests.e2e.deployscene import make_scene
from tests.e2e.terminal import run_on_terminal
from tests.testbed.staging import inventory_toml
from tests.testbed.testhost import TestHost, start_host, stop_host
from tests.testbed.testhost.bastion import Agent, accepted_logins, authorize, hide_behind, write_encrypted_key
from tests.testbed.testhost.layout import outer_link
from tests.testbed.testhost.network import link_exists
from tests.unit.clirun import run_cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PASSPHRASE = "correct horse battery staple"


@dataclass
class Site:
    bastion: TestHost
    targets: list[TestHost]


@pytest.fixture(scope="module")
def site(testhost_session: None) -> Iterator[Site]:
    hosts: list[TestHost] = []
    try:
        for _ in range(3):
            hosts.append(start_host())
        bastion, *targets = hosts
        for target in targets:
            hide_behind(target, bastion)
        yield Site(bastion, targets)
    finally:
        shared_hops.close_all()
        for host in hosts:
            stop_host(host)


@pytest.fixture(autouse=True)
def fresh_connections() -> Iterator[None]:
    """Every CLI run below is in this process: start each test without the previous one's bastion connection."""
    shared_hops.close_all()
    yield
    shared_hops.close_all()


def _ssh_config(site: Site, keys: str = "") -> str:
    """Aliases for the bastion and the targets, with no key named: keys come from ssh-agent unless `keys` says."""
    blocks = [f"Host bastion\n    HostName {site.bastion.ip}\n    UserKnownHostsFile {site.bastion.known_hosts_path}\n"]
    blocks += [
        f"Host {t.name}\n    HostName {t.ip}\n    UserKnownHostsFile {t.known_hosts_path}\n    ProxyJump bastion\n"
        for t in site.targets
    ]
    return "".join(blocks) + f"Host *\n    User root\n    ConnectTimeout 5\n{keys}"


def test_the_targets_have_no_route_from_here(site: Site) -> None:
    """Read from the routing table, not by trying: a packet to 10.200.N.2 would leave by the default route."""
    for target in site.targets:
        assert not link_exists(outer_link(target.index))
        routes = subprocess.run(["ip", "-4", "route", "show", f"10.200.{target.index}.0/30"], capture_output=True)
        assert routes.stdout.strip() == b""
        inside = ["nsenter", "-t", str(site.bastion.systemd_pid), "-n", "ip", "-4", "route", "get", target.ip]
        assert outer_link(target.index).encode() in subprocess.run(inside, capture_output=True, check=True).stdout


def test_doctor_deploy_status_through_the_bastion_with_keys_only_in_ssh_agent(
    site: Site, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = site.targets[0]
    scene = make_scene(target, host_venv, tmp_path, capsys, monkeypatch)
    (tmp_path / "home" / ".ssh" / "config").write_text(_ssh_config(site))
    agent = Agent.start(tmp_path)
    try:
        agent.add(site.bastion.key_path)
        agent.add(target.key_path)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(agent.socket))
        hosts = json.loads(scene.cli("--json", "hosts", target.name).out)["hosts"]
        assert hosts[0]["hops"] == ["bastion"] and hosts[0]["keys"] == []
        doctor = scene.cli("doctor", target.name)
        assert doctor.code == 0, doctor.out + doctor.err
        deployed, outcome = scene.deploy()
        assert deployed.code == 0, deployed.out + deployed.err
        assert outcome["outcome"] == "deployed"
        status = scene.cli("status", target.name, "--json")
        assert status.code == 0, status.out + status.err
        document = json.loads(status.out)
        assert document["current"] == outcome["release"] and document["health"] == 200
    finally:
        agent.stop()


def test_a_fleet_doctor_opens_one_connection_to_the_bastion(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    keys = "".join(f"    IdentityFile {host.key_path}\n" for host in (site.bastion, *site.targets))
    second = site.targets[1]  # not in ~/.ssh/config's ProxyJump: its jump host comes from specops.toml
    config = _ssh_config(site, keys).replace(
        f"{second.known_hosts_path}\n    ProxyJump bastion\n", f"{second.known_hosts_path}\n"
    )
    (home / ".ssh" / "config").write_text(config)
    toml = "".join(inventory_toml(t, Path("/usr/bin/python3")) for t in site.targets)
    toml = toml.replace(f'ssh = "{second.name}"', f'ssh = "{second.name}"\njump = "bastion"')
    (tmp_path / "specops.toml").write_text(
        toml + f"\n[groups]\nbehind = {json.dumps([t.name for t in site.targets])}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.chdir(tmp_path)
    before = accepted_logins(site.bastion, site.bastion.outer_ip)
    result = run_cli(capsys, "doctor", "behind")
    assert result.code in (0, 1), result.out + result.err  # 4 if a host was unreachable; the checks do not matter
    assert accepted_logins(site.bastion, site.bastion.outer_ip) - before == 1
    assert shared_hops.opened >= 1


def test_a_proxy_command_reaches_the_host_through_openssh_on_the_bastion(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    target = site.targets[0]
    hop = " ".join(site.bastion.ssh_options())  # the real OpenSSH client, strict host keys, the bastion's key
    block = (
        f"Host {target.name}\n    HostName {target.ip}\n    User root\n    IdentityFile {target.key_path}\n"
        f"    UserKnownHostsFile {target.known_hosts_path}\n    ProxyCommand ssh {hop} -W %h:%p root@{site.bastion.ip}\n"
    )
    (home / ".ssh" / "config").write_text(block)
    (tmp_path / "specops.toml").write_text(inventory_toml(target, Path("/usr/bin/python3")))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, "lock", "status", target.name)
    assert result.code == 0, result.out + result.err
    hosts = json.loads(run_cli(capsys, "--json", "hosts").out)["hosts"]
    assert hosts[0]["hops"] == [] and hosts[0]["proxy_command"].startswith("ssh -F none")


def test_a_wrong_bastion_host_key_is_refused_naming_the_bastion(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    impostor = site.targets[0].known_hosts_path.read_text().split(None, 1)[1]  # another host's real key
    wrong = tmp_path / "bastion_known_hosts"
    wrong.write_text(f"{site.bastion.ip} {impostor}")
    config = _ssh_config(
        site, f"    IdentityFile {site.bastion.key_path}\n    IdentityFile {site.targets[0].key_path}\n"
    )
    (home / ".ssh" / "config").write_text(config.replace(str(site.bastion.known_hosts_path), str(wrong)))
    (tmp_path / "specops.toml").write_text(inventory_toml(site.targets[0], Path("/usr/bin/python3")))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, "status", site.targets[0].name)
    assert result.code == 4, result.out + result.err
    assert f"jump host bastion (root@{site.bastion.ip}:22) failed: WARNING: THE HOST KEY FOR {site.bastion.ip} " in (
        result.err
    )
    assert "ssh-keygen -R" in result.err


def _specops_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("SSH_AUTH_SOCK", "PYTEST_CURRENT_TEST")}
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def test_a_passphrase_key_is_asked_once_on_a_terminal_and_refused_clearly_without_one(
    site: Site, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_locked"
    public = write_encrypted_key(key, PASSPHRASE)
    target = site.targets[1]
    for host in (site.bastion, target):
        authorize(host, public)
    keys = f"    IdentityFile {key}\n    IdentitiesOnly yes\n    IdentityAgent none\n"
    (home / ".ssh" / "config").write_text(_ssh_config(site, keys))
    (tmp_path / "specops.toml").write_text(inventory_toml(target, Path("/usr/bin/python3")))
    argv = [sys.executable, "-m", "specops", "lock", "status", target.name]

    code, output = run_on_terminal(
        argv, env=_specops_env(home), cwd=tmp_path, prompt=b"Enter passphrase", answer=PASSPHRASE, timeout_s=120
    )
    assert code == 0, output
    assert output.count(f"Enter passphrase for key '{key}':") == 1, output  # the bastion and the target: one prompt
    assert PASSPHRASE not in output

    headless = subprocess.run(
        argv, env=_specops_env(home), cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        start_new_session=True, timeout=120,
    )  # fmt: skip
    assert headless.returncode == 4, headless.stdout + headless.stderr
    assert f"the key {key} is protected by a passphrase, and there is no terminal to ask for it" in headless.stderr
    assert f"ssh-add {key}" in headless.stderr
