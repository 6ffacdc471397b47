"""LocalHost: the Host protocol on this machine, with real processes and files."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from specops.errors import CommandFailed, ConnectError, ExitCode, RemoteTimeout
from specops.host.local import LocalHost


def test_check_false_returns_exit_code_stdout_stderr() -> None:
    result = LocalHost().run(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert result.argv == ("sh", "-c", "echo out; echo err >&2; exit 3")
    assert result.duration_s > 0


def test_a_non_zero_exit_raises_command_failed_by_default_carrying_the_result() -> None:
    with pytest.raises(CommandFailed) as caught:
        LocalHost("box").run(["sh", "-c", "echo partial; echo 'disk full' >&2; exit 2"])
    assert caught.value.message.splitlines() == [
        "box: `sh -c 'echo partial; echo '\"'\"'disk full'\"'\"' >&2; exit 2'` exited with 2",
        "  | disk full",
    ]
    assert caught.value.exit_code == ExitCode.REMOTE_FAILED
    assert caught.value.hint.startswith("the `|` lines are what the command printed on the host")
    assert (caught.value.result.exit_code, caught.value.result.stdout) == (2, b"partial\n")
    assert LocalHost().run(["true"]).ok


def test_missing_program_is_exit_127_like_a_shell() -> None:
    result = LocalHost().run(["specops-no-such-tool", "--version"], check=False)
    assert result.exit_code == 127
    assert "specops-no-such-tool" in result.stderr_text
    with pytest.raises(CommandFailed, match="exited with 127"):
        LocalHost().run(["specops-no-such-tool", "--version"])


def test_a_file_that_cannot_be_executed_is_exit_126_like_a_shell(tmp_path: Path) -> None:
    script = tmp_path / "no-x-bit.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    shell = subprocess.run(["sh", "-c", str(script)], capture_output=True, check=False)
    result = LocalHost().run([str(script)], check=False)
    assert result.exit_code == shell.returncode == 126
    assert result.stdout == b"" and "Permission denied" in result.stderr_text


def test_input_and_env_reach_the_process() -> None:
    result = LocalHost().run(
        ["sh", "-c", 'cat; printf %s "$TOKEN_NAME"'], input=b"from stdin\n", env={"TOKEN_NAME": "v"}
    )
    assert result.stdout == b"from stdin\nv"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child-pid"
    began = time.monotonic()
    with pytest.raises(RemoteTimeout, match=r"did not finish within 0\.5s"):
        LocalHost().run(["sh", "-c", f"sleep 300 & echo $! > {marker}; wait"], timeout=0.5)
    assert time.monotonic() - began < 5
    child = int(marker.read_text())
    time.sleep(0.1)
    alive = subprocess.run(["ps", "-o", "stat=", "-p", str(child)], capture_output=True, text=True).stdout.strip()
    assert alive in ("", "Z"), f"the background child {child} survived the timeout ({alive})"


def test_put_is_atomic_with_mode_and_get_reads_it_back(tmp_path: Path) -> None:
    target = tmp_path / "unit.service"
    target.write_text("old")
    old_inode = target.stat().st_ino
    host = LocalHost()
    host.put(b"new contents\n", str(target), mode=0o600)
    assert host.get(str(target)) == b"new contents\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.stat().st_ino != old_inode  # replaced by rename, never rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unit.service"]  # no temp file left


def test_put_into_a_missing_directory_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(CommandFailed, match="exited with"):
        LocalHost().put(b"x", str(tmp_path / "missing" / "f"))


def test_get_of_a_missing_file_fails_with_cats_message(tmp_path: Path) -> None:
    with pytest.raises(CommandFailed, match="No such file"):
        LocalHost().get(str(tmp_path / "nope"))


def test_open_tunnel_is_a_plain_connection() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(conn.recv(100).upper())

    thread = threading.Thread(target=answer)
    thread.start()
    with LocalHost() as host:
        tunnel = host.open_tunnel("127.0.0.1", port)
        tunnel.sendall(b"ping")
        assert tunnel.recv(100) == b"PING"
        tunnel.close()
    thread.join()
    server.close()
    with pytest.raises(ConnectError, match=f"cannot connect to 127.0.0.1:{port}"):
        LocalHost().open_tunnel("127.0.0.1", port)


def test_umask_does_not_widen_the_put_mode(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        LocalHost().put(b"secret", str(tmp_path / "env"), mode=0o600)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "env").stat().st_mode) == 0o600
