"""A real deploy to a real test host between two silent loopback hosts (they accept the TCP connection and never
say a word), through the real CLI and real SSH, one host at a time (--parallel 1, no failure budget): every
host is connected at the start, so both silent hosts are tried before the real host is deployed, each costs
ONE connect timeout, the silent host listed first neither stops the rollout nor counts as a failed host, and
the run exits 4 naming both. Only loopback and the test host's own address are contacted."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, make_scene
from tests.e2e.faultkit import SSH_SESSIONS, prepare, variant_build
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e
CONNECT_TIMEOUT_S = 4


class SilentHost:
    """A loopback listener that accepts and then says nothing; it notes, at each connection, whether the real
    host had already been deployed (its `current` link existed)."""

    def __init__(self, testhost: TestHost) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.seen: list[tuple[float, bool]] = []
        self.held: list[socket.socket] = []
        self.testhost = testhost
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # closed
            self.held.append(client)
            deployed = self.testhost.exec(["test", "-e", "/opt/specops/sglang/current"], check=False).returncode == 0
            self.seen.append((time.monotonic(), deployed))

    def close(self) -> None:
        self.server.close()
        for client in self.held:
            client.close()


def test_silent_hosts_cost_one_connect_timeout_and_the_real_host_is_deployed(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch)
    first, last = SilentHost(testhost), SilentHost(testhost)
    try:
        config = tmp_path / "specops.toml"
        real = config.read_text()
        copies = [real.replace(f"[hosts.{testhost.name}]", f"[hosts.{name}]", 1)
                  .replace(f'ssh = "{testhost.name}"', f'ssh = "root@127.0.0.1:{silent.port}"', 1)
                  for name, silent in (("silent-a", first), ("silent-z", last))]  # fmt: skip
        config.write_text("\n".join([copies[0], real, copies[1]]))
        ssh_config = tmp_path / "home" / ".ssh" / "config"
        ssh_config.write_text(f"Host *\n    ConnectTimeout {CONNECT_TIMEOUT_S}\n" + ssh_config.read_text())
        build = ["--build", str(UNPATCHED), "--patch", str(PATCH)]
        result = scene.cli("deploy", "silent-a", testhost.name, "silent-z", *build, "--json")
    finally:
        first.close()
        last.close()
    assert result.code == 4, result.out + result.err
    hosts = json.loads(result.out)["hosts"]
    assert {name: host["outcome"] for name, host in hosts.items()} == {
        "silent-a": "unreachable", testhost.name: "deployed", "silent-z": "unreachable"}  # fmt: skip
    for name, silent in (("silent-a", first), ("silent-z", last)):
        assert hosts[name]["cause"] == (f"root@127.0.0.1:{silent.port}: SSH handshake failed: no SSH handshake "
                                        f"within {CONNECT_TIMEOUT_S}s")  # fmt: skip
    # each silent host was tried once, before the real host was deployed (silent-z, listed last, included)
    assert [deployed for _, deployed in first.seen + last.seen] == [False, False]
    assert abs(first.seen[0][0] - last.seen[0][0]) < 1.0  # at the same time, not one after the other


def test_a_host_gone_silent_mid_deploy_is_said_lost_with_what_the_guard_will_do(
    testhost: TestHost, host_venv: Path, tmp_path: Path
) -> None:
    """After one verified deploy, the host's SSH sessions are frozen (SIGSTOP: the connection stays open and says
    nothing, as a host that drops off the network) once the next deploy's gates begin. The summary says the
    connection was lost in the gates phase, that the new release is unverified, and that the host-side guard rolls
    back to the verified one and by when; it never claims the unverified release serves."""
    scene = prepare(testhost, host_venv, tmp_path)
    base, found = scene.deploy()
    assert base.code == 0, base.out + base.err
    good = str(found["release"])
    process = scene.start("--force", build=variant_build(tmp_path, "silent"))
    assert process.stderr is not None and process.stdout is not None
    seen = []
    while line := process.stderr.readline():
        seen.append(line.rstrip())
        if " gates " in line:
            testhost.exec(["pkill", "-STOP", "-f", SSH_SESSIONS], check=False)
            break
    try:
        out, err = process.communicate(timeout=400)
    finally:
        testhost.exec(["pkill", "-CONT", "-f", SSH_SESSIONS], check=False)
    text = "\n".join(seen) + out + err
    assert process.returncode == 5, text
    row = next(line for line in out.splitlines() if line.startswith(f"{testhost.name} "))
    assert row.split()[1:3] == ["error", "-"], text  # the unverified release is not claimed as serving
    final = out.rstrip().splitlines()[-1]
    assert final.startswith(f"{testhost.name}: connection lost during the gates phase: "), text
    assert "is unverified; the host-side guard rolls back to " + good + " by " in final, text
