"""SSH failures that need no test host: real sockets on loopback, real ~/.ssh/config parsing."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.errors import ConfigError, ConnectError, ExitCode
from specops.host.ssh.connection import open_ssh
from specops.host.ssh.resolve import resolve_ssh_target
from specops.host.ssh.target import SshTarget


def _target(port: int, **extra: object) -> SshTarget:
    return SshTarget(alias="box", hostname="127.0.0.1", user="deploy", port=port, identity_files=(), **extra)  # type: ignore[arg-type]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server
    finally:
        server.close()


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def test_config_is_applied_like_openssh(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "Host llm-one\n  HostName 10.0.0.7\n  User deploy\n  Port 2222\n  IdentityFile ~/keys/a\n"
        "  IdentitiesOnly yes\n  UserKnownHostsFile /x/kh1 /x/kh2\n  ConnectTimeout 4\n"
    )
    target = resolve_ssh_target("llm-one", config)
    assert target.address == "deploy@10.0.0.7:2222"
    assert target.identities_only and target.connect_timeout == 4.0
    assert target.known_hosts_files == ("/x/kh1", "/x/kh2")
    assert resolve_ssh_target("root@llm-one:22", config).address == "root@10.0.0.7:22"


def test_an_unreachable_jump_host_is_named_in_the_error(tmp_path: Path) -> None:
    port = _free_port()
    config = tmp_path / "config"
    config.write_text(
        f"Host gpu\n  HostName 10.0.0.8\n  ProxyJump jumper\nHost jumper\n  HostName 127.0.0.1\n  Port {port}\n"
    )
    with pytest.raises(ConnectError) as caught:
        open_ssh(resolve_ssh_target("gpu", config))
    assert caught.value.message.startswith("gpu: jump host jumper (")
    assert f"127.0.0.1:{port}) failed: connection refused" in caught.value.message


def test_a_broken_ssh_config_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("Host x\n  Match\n")
    with pytest.raises(ConfigError, match=str(config)):
        resolve_ssh_target("x", config)


def test_connection_refused_names_the_target() -> None:
    port = _free_port()
    with pytest.raises(ConnectError) as caught:
        open_ssh(_target(port), known_hosts=[])
    assert caught.value.exit_code == ExitCode.UNREACHABLE
    assert caught.value.message == f"deploy@127.0.0.1:{port}: connection refused (nothing listens on port {port})"
    assert "sshd" in caught.value.hint


def test_a_silent_server_times_out_at_the_connect_timeout(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    began = time.monotonic()
    with pytest.raises(
        ConnectError, match=f"deploy@127.0.0.1:{port}: SSH handshake failed: no SSH handshake within 1s"
    ):
        open_ssh(_target(port), known_hosts=[], connect_timeout=1)
    assert time.monotonic() - began < 5


def test_a_non_ssh_server_is_a_handshake_error(listener: socket.socket) -> None:
    def speak_http() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=speak_http)
    thread.start()
    with pytest.raises(
        ConnectError, match="SSH handshake failed: the server did not answer with an SSH banner"
    ) as caught:
        open_ssh(_target(listener.getsockname()[1]), known_hosts=[], connect_timeout=2)
    thread.join()
    assert "paramiko" not in caught.value.message.lower()
