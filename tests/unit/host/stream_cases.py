"""What `Host.stream` must do on every real transport (LocalHost here, SshHost in tests/e2e): shared cases.

Each case drives a real command through a conversation and asserts what the caller sees.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from specops.errors import CommandFailed, RemoteTimeout
from specops.host.base import Host

# The host speaks first, waits for an answer, then reads a byte stream to EOF: the shape of a push.
DIALOG = (
    "import sys, hashlib\n"
    "print('hello from the host', flush=True)\n"
    "request = sys.stdin.buffer.readline()\n"
    "print('got ' + request.decode().strip(), flush=True)\n"
    "digest = hashlib.sha256(sys.stdin.buffer.read()).hexdigest()\n"
    "sys.stderr.write('done\\n')\n"
    "print(digest)\n"
    "sys.exit(4)\n"
)


def conversation(host: Host, python: str) -> None:
    payload = bytes(range(256)) * 8192  # 2 MiB, every byte value
    with host.stream([python, "-c", DIALOG], timeout=60) as command:
        assert command.read_line() == b"hello from the host\n"
        assert command.write(b"tar please\n")
        assert command.read_line() == b"got tar please\n"
        for start in range(0, len(payload), 300_000):  # written block by block, as tar produces it
            assert command.write(payload[start : start + 300_000])
        command.close_input()
        assert command.read_line() == hashlib.sha256(payload).hexdigest().encode() + b"\n"
        assert command.read_line() == b""  # EOF
        result = command.wait(check=False)
    assert result.exit_code == 4
    assert result.stderr == b"done\n"
    assert result.stdout.startswith(b"hello from the host\ngot tar please\n")  # the whole stdout, lines read or not


def write_to_a_command_that_exited(host: Host) -> None:
    with host.stream(["sh", "-c", "echo bye; exit 7"], timeout=30) as command:
        assert command.read_line() == b"bye\n"
        time.sleep(0.3)
        accepted = True
        for _ in range(64):  # more than any pipe or window buffers: the refusal has to show
            accepted = command.write(b"x" * 65536)
            if not accepted:
                break
        assert not accepted
        with pytest.raises(CommandFailed, match="exited with 7"):
            command.wait()
        assert command.wait(check=False).exit_code == 7


def read_line_past_the_deadline(host: Host) -> None:
    began = time.monotonic()
    with pytest.raises(RemoteTimeout), host.stream(["sh", "-c", "sleep 30"], timeout=1) as command:
        assert command.read_line() == b""  # over SSH the host's own `timeout` ends it first: EOF, then...
        command.wait()  # ...the exit status says it was killed
    assert time.monotonic() - began < 10
