"""A host like a cloud GPU image: root login disabled, a login user with sudo (`become = "sudo"`).

The NOPASSWD user runs doctor, deploy (its gates), rollback, status and logs, and the files it leaves have the
owners and modes of a root deploy on the same host. The password user gets the clear error without
--ask-become-pass and deploys with it, the password typed on a pseudo-terminal; it shows up in no output, no
log and no process list, here or on the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene
from tests.e2e.terminal import run_on_terminal
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.fixtures import in_ci
from tests.testbed.testhost.sudo import SudoUser, add_sudo_user, disable_root_login

pytestmark = pytest.mark.e2e

SERVICE_DIR = "/opt/specops/sglang"
UNIT = "/etc/systemd/system/sglang.service"
PASSWORD = "c0rrect horse 'battery' $staple"  # a space, quotes and a `$`: nothing may re-parse it


@pytest.fixture(autouse=True)
def _sudo_installed() -> None:
    """The test hosts' root is an overlay of this machine's: sudo must be installed here (.ci/run does)."""
    if shutil.which("sudo") is None:
        reason = "these tests need sudo installed on this machine (apt-get install sudo)"
        if in_ci():
            pytest.fail(f"{reason} [CI=true: e2e tests must run, not skip]", pytrace=False)
        pytest.skip(reason)


def _log_in_as(scene: Scene, user: SudoUser) -> None:
    """Root login off; specops reaches the host as `user` and acts through sudo."""
    disable_root_login(scene.host)
    assert scene.host.ssh("true", check=False).returncode != 0  # root really is refused now
    (scene.folder / "home" / ".ssh" / "config").write_text(user.ssh_config_block(scene.host.name))
    config = scene.folder / "specops.toml"
    config.write_text(config.read_text() + 'become = "sudo"\n')  # the host's table is the last one


def _shape(host: TestHost, root: str, depth: int | None = None) -> dict[str, str]:
    """path (relative to root) -> "owner group mode type" for everything under root."""
    limit = ["-maxdepth", str(depth)] if depth is not None else []
    listing = host.exec(["find", root, *limit, "-mindepth", "1", "-printf", r"%P\t%u %g %m %y\n"]).stdout.decode()
    return dict(line.split("\t", 1) for line in listing.splitlines())


def _not_root_owned(host: TestHost) -> list[str]:
    found = host.exec(
        ["find", SERVICE_DIR, "/run/specops", "/etc/systemd/system", "(", "!", "-user", "root", "-o", "!", "-group",
         "root", ")", "-printf", "%p %u:%g\n"],
        check=False,
    )  # fmt: skip
    return found.stdout.decode().splitlines()


def test_sudo_user_deploys_rolls_back_and_leaves_the_tree_a_root_deploy_leaves(scene: Scene) -> None:
    first, as_root = scene.deploy()  # the reference: a deploy logged in as root
    assert first.code == 0, first.out + first.err
    root_release = str(as_root["release"])
    root_tree = _shape(scene.host, f"{SERVICE_DIR}/releases/{root_release}")
    root_top = _shape(scene.host, SERVICE_DIR, depth=1)

    _log_in_as(scene, add_sudo_user(scene.host, "deploy"))
    hosts = json.loads(scene.cli("hosts", "--json").out)["hosts"][0]
    assert (hosts["user"], hosts["become"], hosts["become_user"]) == ("deploy", "sudo", "root")
    doctor = scene.cli("doctor", scene.host.name, "--json")
    checks = {c["id"]: c for c in json.loads(doctor.out)["hosts"][scene.host.name]["checks"]}
    assert checks["ssh.privilege"]["status"] == "pass", checks["ssh.privilege"]
    assert doctor.code == 0, doctor.out + doctor.err

    result, host = scene.deploy("--profile", "dflash", patched=False)  # a new tree: push, switch, gates
    assert result.code == 0, result.out + result.err
    assert host["outcome"] == "deployed" and host["gates"]["passed"] is True
    sudo_release = str(host["release"])
    assert sudo_release != root_release

    sudo_tree = _shape(scene.host, f"{SERVICE_DIR}/releases/{sudo_release}")
    common = sorted(set(root_tree) & set(sudo_tree))
    assert len(common) > 20  # the same package tree, give or take the patched files
    assert {path: sudo_tree[path] for path in common} == {path: root_tree[path] for path in common}
    top = _shape(scene.host, SERVICE_DIR, depth=1)
    for name in ("env", "current", "releases"):
        assert top[name] == root_top[name], name
    assert top["env"] == "root root 600 f"
    unit = scene.host.exec(["stat", "-c", "%U %G %a", UNIT]).stdout.decode().strip()
    assert unit == "root root 644"
    assert _not_root_owned(scene.host) == []

    back = scene.cli("rollback", scene.host.name, "--json")
    assert back.code == 0, back.out + back.err
    current = scene.host.exec(["readlink", f"{SERVICE_DIR}/current"]).stdout.decode().strip()
    assert current.endswith(root_release)
    status = scene.cli("status", scene.host.name, "--json")
    assert status.code == 0, status.out + status.err
    assert json.loads(status.out)["current"] == root_release
    logs = scene.cli("logs", scene.host.name, "-n", "50")
    assert logs.code == 0, logs.out + logs.err
    assert logs.out.strip()
    assert _not_root_owned(scene.host) == []


def test_password_sudo_needs_ask_become_pass_and_never_shows_the_password(scene: Scene) -> None:
    _log_in_as(scene, add_sudo_user(scene.host, "ops", password=PASSWORD))

    refused = scene.cli("deploy", scene.host.name, "--build", str(UNPATCHED), "--patch", str(PATCH))
    assert refused.code == 4, refused.out + refused.err
    told = refused.out + refused.err
    assert f"{scene.host.name} (ops@{scene.host.ip}:22): sudo needs a password for ops" in told
    assert "--ask-become-pass" in told and "NOPASSWD" in told
    as_json, host = scene.deploy()
    assert (as_json.code, host["outcome"]) == (4, "unreachable")
    doctor = scene.cli("doctor", scene.host.name, "--json")
    checks = json.loads(doctor.out)["hosts"][scene.host.name]["checks"]
    assert [(c["id"], c["status"]) for c in checks] == [("ssh.privilege", "fail")]
    assert "--ask-become-pass" in checks[0]["hint"]

    argv = ["--ask-become-pass", "deploy", scene.host.name, "--build", str(UNPATCHED), "--patch", str(PATCH), "--json"]
    code, output, processes = _run_on_terminal(scene, argv, PASSWORD)
    assert code == 0, output
    assert '"outcome": "deployed"' in output
    assert any("sudo -S -k -p" in line for line in processes)  # the sampling saw the sudo commands run
    assert PASSWORD not in output
    assert not [line for line in processes if PASSWORD in line]
    journal = scene.host.exec(["journalctl", "--no-pager", "-o", "cat"]).stdout.decode(errors="replace")
    on_host = scene.host.exec(["grep", "-rlF", PASSWORD, SERVICE_DIR, "/var/log", "/run/specops"], check=False)
    assert "sudo" in journal and PASSWORD not in journal
    assert on_host.stdout == b""
    here = subprocess.run(["grep", "-rlF", PASSWORD, str(scene.folder)], capture_output=True, check=False)
    assert here.stdout == b""  # local state: audit log, fingerprints, caches
    assert _not_root_owned(scene.host) == []


def _run_on_terminal(scene: Scene, args: list[str], password: str) -> tuple[int, str, list[str]]:
    """Run the real `specops ARGS` on a pseudo-terminal, type `password` at the prompt; sample `ps` here and
    on the host while it runs. Returns the exit code, everything the terminal showed, the process lines."""
    processes: list[str] = []
    code, output = run_on_terminal(
        [sys.executable, "-m", "specops", *args], env=dict(os.environ), prompt=b"sudo password", answer=password,
        every_tick=lambda: processes.extend(_process_lines(scene.host)),
    )  # fmt: skip
    return code, output, processes


def _process_lines(host: TestHost) -> list[str]:
    outer = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    inner = host.exec(["ps", "-eo", "args"], check=False).stdout.decode(errors="replace")
    return [*outer.splitlines(), *inner.splitlines()]
