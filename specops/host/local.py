"""LocalHost: the Host protocol on this machine, by subprocess (`specops doctor --local`, and tests).

It behaves like SshHost where the caller can tell: a missing program is exit 127, and a file that cannot be
executed exit 126, with a shell-like message (not a Python exception); a timeout kills the whole process
group (sshd kills the session's group too) and raises RemoteTimeout; put() is the same atomic
temp-file-and-rename as over SSH.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

from specops.errors import ConnectError
from specops.host.base import (
    DEFAULT_TIMEOUT_S,
    HostBase,
    Tunnel,
    checked_argv,
    reveal,
)
from specops.host.process import POLL_S, FinishedPipe, RunningCommand

COMMAND_NOT_FOUND = 127
CANNOT_EXECUTE = 126


class LocalHost(HostBase):
    """This machine as a Host; `name` is what errors call it (default "localhost")."""

    def __init__(self, name: str = "localhost") -> None:
        self.name = name

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        """The command started with pipes and handed back running; past `timeout` its group is killed."""
        words = checked_argv(argv, env)
        started = time.monotonic()
        environment = {**os.environ, **{name: reveal(value) for name, value in (env or {}).items()}}
        pipe = subprocess.PIPE
        try:
            process = subprocess.Popen([reveal(word) for word in words], stdin=pipe, stdout=pipe, stderr=pipe,
                                       env=environment, start_new_session=True)  # fmt: skip
        except OSError as error:  # as a shell reports it: not found (127), or found but not executable (126)
            missing = isinstance(error, FileNotFoundError | NotADirectoryError)
            message = f"{words[0]}: {error.strerror or error}\n".encode()
            pipe_ = FinishedPipe(COMMAND_NOT_FOUND if missing else CANNOT_EXECUTE, message)
            return RunningCommand(pipe_, words, host=self.name, timeout=timeout, grace=0.0, started=started)
        return RunningCommand(_ProcessPipe(process), words, host=self.name, timeout=timeout, grace=0.0,
                              started=started)  # fmt: skip

    def open_tunnel(self, remote_host: str, remote_port: int) -> Tunnel:
        """A plain TCP connection: on the local machine "the host's port" is just a local port."""
        try:
            return socket.create_connection((remote_host, remote_port), timeout=10)
        except OSError as error:
            raise ConnectError(
                f"{self.name}: cannot connect to {remote_host}:{remote_port}: {error.strerror or error}",
                hint="is the server listening on that address and port?",
            ) from None

    def close(self) -> None:
        """Nothing to release; present so LocalHost is a drop-in for SshHost."""


class _ProcessPipe:
    """A subprocess's pipes as a process.Pipe: non-blocking writes and polled reads, so a command that stops
    reading or printing never blocks the caller past its deadline; close() kills its process group.

    Each pipe has a lock held across its select and its read or write: close() closes a pipe only between
    them. Without it, a reader that took the descriptor's number just before close() would read (or a writer
    write) whatever file the next command opened under that reused number: a reply stolen from it."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self._process = process
        self._stdin, self._stdout, self._stderr = process.stdin, process.stdout, process.stderr
        self._in_use = {id(stream): threading.Lock() for stream in (self._stdin, self._stdout, self._stderr)}
        os.set_blocking(self._stdin.fileno(), False)

    def send(self, data: bytes, /) -> int:
        with self._in_use[id(self._stdin)]:
            try:
                if not select.select([], [self._stdin], [], POLL_S)[1]:
                    raise TimeoutError
                return os.write(self._stdin.fileno(), data)
            except BlockingIOError:
                raise TimeoutError from None
            except (BrokenPipeError, ValueError):
                return 0  # the command closed its stdin (or close() did)

    def recv(self, size: int, /) -> bytes:
        with self._in_use[id(self._stdout)]:
            return _read_polled(self._stdout, size)

    def recv_stderr(self, size: int, /) -> bytes:
        with self._in_use[id(self._stderr)]:
            return _read_polled(self._stderr, size)

    def shutdown_write(self) -> None:
        with self._in_use[id(self._stdin)]:
            self._stdin.close()

    def wait_exit(self, timeout: float, /) -> int | None:
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        if self._process.poll() is None:
            _kill_group(self._process)  # first: the readers see EOF at once and let go of their pipes
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(5)
        for stream in (self._stdin, self._stdout, self._stderr):
            with self._in_use[id(stream)], contextlib.suppress(OSError):
                stream.close()


def _read_polled(stream: IO[bytes], size: int) -> bytes:
    try:
        ready = select.select([stream], [], [], POLL_S)[0]
        data = os.read(stream.fileno(), size) if ready else None
    except (ValueError, OSError):  # closed: the end of the stream
        return b""
    if data is None:
        raise TimeoutError
    return data


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
