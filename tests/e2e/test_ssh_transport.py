"""SshHost against a REAL test host (systemd + OpenSSH in namespaces): what deploy and doctor rely on.

One host for the whole module (starting one costs ~1 s of a shared 2-core machine). The real /root/.ssh is
never read or written: each test writes its own ssh config and passes known_hosts explicitly.
"""

from __future__ import annotations

import hashlib
import json
import socket
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.config.secrets import Secret
from specops.errors import CommandFailed, ConnectError, ExitCode, RemoteTimeout
from specops.host.ssh.channels import SshHost
from specops.host.ssh.connection import connect
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.keys import write_keypair
from tests.unit.host import stream_cases

pytestmark = pytest.mark.e2e

ALIAS = "llm-one"
NASTY = ["two words", "it's", 'say "hi"', "$HOME", "a;b", "*", "line1\nline2", "back\\slash", "", "-n", "`id`"]
PRINT_ARGV = "import sys, json; print(json.dumps(sys.argv[1:]))"


@pytest.fixture(scope="module")
def ssh_config(module_testhost: TestHost, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ssh") / "config"
    path.write_text(module_testhost.ssh_config_block(ALIAS))
    return path


def _spec(alias: str = ALIAS) -> HostSpec:
    return HostSpec(name=alias, ssh=alias, python="/usr/bin/python3", model_path="/models/target")


@pytest.fixture(scope="module")
def host(ssh_config: Path) -> Iterator[SshHost]:
    with connect(_spec(), ssh_config=ssh_config, known_hosts=[]) as connected:
        yield connected


@pytest.fixture
def config_with(module_testhost: TestHost, tmp_path: Path) -> Callable[[str], Path]:
    """An ssh config whose llm-one block is the test host's, with lines replaced or added."""

    def write(extra: str, drop: tuple[str, ...] = ()) -> Path:
        lines = [
            line for line in module_testhost.ssh_config_block(ALIAS).splitlines() if not line.strip().startswith(drop)
        ]
        path = tmp_path / "config"
        path.write_text("\n".join([*lines, *(f"    {line}" for line in extra.splitlines())]) + "\n")
        return path

    return write


def test_run_reports_exit_code_stdout_and_stderr(host: SshHost, module_testhost: TestHost) -> None:
    result = host.run(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert host.run(["hostname"]).text == f"{module_testhost.name}\n"
    assert host.target.address == f"root@{module_testhost.ip}:22"


def test_a_failed_command_raises_command_failed_with_host_and_stderr(host: SshHost) -> None:
    with pytest.raises(CommandFailed) as caught:
        host.run(["systemctl", "start", "no-such-unit.service"])
    assert caught.value.exit_code == ExitCode.REMOTE_FAILED
    assert caught.value.message.startswith(f"{ALIAS}: `systemctl start no-such-unit.service` exited with 5")
    assert "no-such-unit.service not found" in caught.value.message


def test_argv_arrives_byte_exact(host: SshHost) -> None:
    result = host.run(["python3", "-c", PRINT_ARGV, *NASTY, Secret("hf_s3cret token")])
    assert json.loads(result.text) == [*NASTY, "hf_s3cret token"]
    assert "hf_s3cret" not in result.command and "hf_s3cret" not in repr(result)


def test_a_missing_program_is_exit_127(host: SshHost) -> None:
    result = host.run(["specops-no-such-tool"], check=False)
    assert result.exit_code == 127
    assert "specops-no-such-tool" in result.stderr_text


def test_env_reaches_the_command(host: SshHost) -> None:
    result = host.run(["sh", "-c", 'printf %s "$SPECOPS_GREETING"'], env={"SPECOPS_GREETING": "a b;$c"})
    assert result.text == "a b;$c"


def test_large_output_on_both_streams_does_not_deadlock(host: SshHost) -> None:
    script = (
        "import sys\n"
        "for i in range(80):\n"
        "    sys.stdout.write('o' * 65536); sys.stdout.flush()\n"
        "    sys.stderr.write('e' * 65536); sys.stderr.flush()\n"
    )
    began = time.monotonic()
    result = host.run(["python3", "-c", script], timeout=60)
    took = time.monotonic() - began
    assert (len(result.stdout), len(result.stderr)) == (80 * 65536, 80 * 65536)  # 5.2 MB each
    assert set(result.stdout) == {ord("o")} and set(result.stderr) == {ord("e")}
    print(f"\n[ssh] 2 x 5.2 MB out+err in {took:.2f}s")


def test_stdin_input_is_streamed_while_output_flows(host: SshHost) -> None:
    data = bytes(range(256)) * 16384  # 4 MiB, every byte value
    result = host.run(["sh", "-c", "tee /dev/stderr | sha256sum"], input=data)
    assert result.text.split()[0] == hashlib.sha256(data).hexdigest()
    assert result.stderr == data
    assert host.run(["cat"], input=b"").stdout == b""  # empty input = immediate EOF, not a hang


def test_stream_carries_a_conversation_on_one_channel(host: SshHost) -> None:
    stream_cases.conversation(host, "python3")


def test_stream_write_to_a_command_that_exited_returns_false(host: SshHost) -> None:
    stream_cases.write_to_a_command_that_exited(host)


def test_stream_read_line_past_the_deadline_is_a_remote_timeout(host: SshHost, module_testhost: TestHost) -> None:
    stream_cases.read_line_past_the_deadline(host)
    assert host.run(["true"]).ok  # the connection survives


def test_put_is_atomic_with_mode_and_get_reads_it(host: SshHost, module_testhost: TestHost) -> None:
    path = "/etc/specops-e2e/with space/unit.service"
    host.run(["mkdir", "-p", "/etc/specops-e2e/with space"])
    host.put(b"old\n", path)
    inode_before = host.run(["stat", "-c", "%i", path]).text
    payload = bytes(range(256)) * 4096
    host.put(payload, path, mode=0o600)
    assert host.get(path) == payload
    assert module_testhost.read_file(path) == payload  # seen from inside the host, not through our own transport
    assert host.run(["stat", "-c", "%a %U", path]).text == "600 root\n"
    assert host.run(["stat", "-c", "%i", path]).text != inode_before  # renamed into place
    assert host.run(["ls", "-A", "/etc/specops-e2e/with space"]).text == "unit.service\n"
    with pytest.raises(CommandFailed, match="exited with"):
        host.put(b"x", "/etc/specops-e2e/missing-dir/file")
    with pytest.raises(CommandFailed, match="No such file"):
        host.get("/etc/specops-e2e/nope")


def test_a_timeout_kills_the_command_on_the_host(host: SshHost, module_testhost: TestHost) -> None:
    began = time.monotonic()
    with pytest.raises(RemoteTimeout) as caught:
        host.run(["sh", "-c", "echo started; sleep 301; echo never"], timeout=1)
    assert 1 <= time.monotonic() - began < 5
    assert caught.value.exit_code == ExitCode.REMOTE_FAILED
    assert (
        caught.value.message
        == f"{ALIAS}: `sh -c 'echo started; sleep 301; echo never'` did not finish within 1s and was killed"
    )
    time.sleep(0.3)
    assert module_testhost.exec(["pgrep", "-f", "sleep 301"], check=False).stdout == b""
    assert host.run(["true"]).ok  # the connection survives


def test_open_tunnel_reaches_a_server_on_the_hosts_loopback(host: SshHost, module_testhost: TestHost) -> None:
    module_testhost.write_file("/srv/www/hello.txt", b"hello through ssh\n")
    host.run(
        ["systemd-run", "--unit=e2e-http", "--working-directory=/srv/www",
         "python3", "-m", "http.server", "--bind", "127.0.0.1", "18080"],
        check=True,
    )  # fmt: skip
    try:
        host.run(["sh", "-c", "until ss -ltn | grep -q 127.0.0.1:18080; do sleep 0.1; done"], timeout=20)
        tunnel = host.open_tunnel("127.0.0.1", 18080)
        tunnel.settimeout(10)
        tunnel.sendall(b"GET /hello.txt HTTP/1.0\r\nHost: localhost\r\n\r\n")
        response = b""
        while chunk := tunnel.recv(65536):
            response += chunk
        tunnel.close()
        assert response.startswith(b"HTTP/1.0 200")
        assert response.endswith(b"\r\n\r\nhello through ssh\n")
    finally:
        host.run(["systemctl", "stop", "e2e-http"])
    with pytest.raises(ConnectError, match=r"the host could not open 127\.0\.0\.1:18081"):
        host.open_tunnel("127.0.0.1", 18081)


def test_figures_connect_and_round_trip(ssh_config: Path, module_testhost: TestHost) -> None:
    """Print the numbers the report quotes (no time bound: a loaded machine is slow); what keeps a round trip at a
    few ms instead of ~40 ms is TCP_NODELAY on the connection's socket, checked as such."""
    connects, trips = [], []
    nodelay = []
    bashrc = module_testhost.exec(["cat", "/root/.bashrc"], check=False)
    module_testhost.write_file(
        "/root/.bashrc", b""
    )  # measure the transport, not the outer machine's pyenv-loading .bashrc
    try:
        for _ in range(3):
            began = time.monotonic()
            with connect(_spec(), ssh_config=ssh_config, known_hosts=[]) as fresh:
                connects.append(time.monotonic() - began)
                nodelay.append(fresh._transport_.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                for _ in range(10):
                    began = time.monotonic()
                    fresh.run(["true"])
                    trips.append(time.monotonic() - began)
    finally:
        if bashrc.returncode == 0:
            module_testhost.write_file("/root/.bashrc", bashrc.stdout)
    connect_ms, trip_ms = statistics.median(connects) * 1000, statistics.median(trips) * 1000
    print(f"\n[ssh] connect+auth median {connect_ms:.1f} ms; run(['true']) median {trip_ms:.1f} ms")
    assert nodelay and all(nodelay), f"TCP_NODELAY off on a connection: {nodelay}"


def test_unknown_host_key_is_refused(
    config_with: Callable[..., Path], module_testhost: TestHost, tmp_path: Path
) -> None:
    config = config_with("", drop=("UserKnownHostsFile",))
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(ConnectError) as caught:
        connect(_spec(), ssh_config=config, known_hosts=[empty])
    assert caught.value.exit_code == ExitCode.UNREACHABLE == 4
    assert caught.value.message.startswith(
        f"root@{module_testhost.ip}:22: the host key for {module_testhost.ip} is not in known_hosts"
    )
    fingerprint = (
        module_testhost.exec(["ssh-keygen", "-lf", "/etc/ssh/ssh_host_ed25519_key.pub"]).stdout.split()[1].decode()
    )
    assert f"ssh-ed25519 {fingerprint}" in caught.value.message
    assert "ssh-keyscan" in caught.value.hint
    assert empty.read_text() == ""  # never added


def test_changed_host_key_is_refused_loudly(
    config_with: Callable[..., Path], module_testhost: TestHost, tmp_path: Path
) -> None:
    other = write_keypair(tmp_path / "other_host_key", "impostor")
    known = tmp_path / "known_hosts"
    known.write_text(f"{module_testhost.ip} {other}\n")
    config = config_with(f"UserKnownHostsFile {known}", drop=("UserKnownHostsFile",))
    with pytest.raises(ConnectError) as caught:
        connect(_spec(), ssh_config=config, known_hosts=[])
    assert caught.value.exit_code == 4
    assert f"THE HOST KEY FOR {module_testhost.ip} HAS CHANGED" in caught.value.message
    assert "man-in-the-middle" in caught.value.message
    assert f"ssh-keygen -R {module_testhost.ip}" in caught.value.hint
    assert known.read_text() == f"{module_testhost.ip} {other}\n"


def test_a_key_the_host_does_not_know_fails_authentication(
    config_with: Callable[..., Path], module_testhost: TestHost, tmp_path: Path
) -> None:
    write_keypair(tmp_path / "stranger", "stranger")
    config = config_with(f"IdentityFile {tmp_path / 'stranger'}", drop=("IdentityFile",))
    with pytest.raises(ConnectError) as caught:
        connect(_spec(), ssh_config=config, known_hosts=[])
    assert caught.value.exit_code == 4
    assert (
        caught.value.message
        == f"root@{module_testhost.ip}:22: authentication failed as 'root' (tried: {tmp_path / 'stranger'})"
    )
    assert "authorized_keys" in caught.value.hint


def test_a_port_with_nothing_listening_is_refused(config_with: Callable[..., Path], module_testhost: TestHost) -> None:
    with pytest.raises(ConnectError) as caught:
        connect(_spec(), ssh_config=config_with("Port 2299"), known_hosts=[])
    assert caught.value.exit_code == 4
    assert caught.value.message == f"root@{module_testhost.ip}:2299: connection refused (nothing listens on port 2299)"
