"""A command still running on a host: write its stdin as you go, read its stdout line by line as it comes.

    with host.stream(argv, timeout=300) as command:
        listing = command.read_line()          # the host speaks first...
        command.write(request + tar_block)     # ...the client answers on the same channel, block by block
        command.close_input()
        reply = command.read_line()
        result = command.wait()                # the whole stdout and stderr; CommandFailed on a non-zero exit

Why: a push is a conversation (the host lists its releases, the client answers with a tar built against them),
and every exec channel costs a login shell on the host (~200 ms where root's .bashrc runs pyenv or conda init),
so the conversation runs on ONE channel; and a large tar flows into the channel as tar produces it instead of
being built in memory first. `Host.run` is the one-shot case of the same thing.

Why threads: stdout and stderr share one SSH flow-control window. Reading only stdout while the command fills
stderr (or writing a big stdin while the command already prints) stalls both ends: a deadlock that only shows
with large outputs. One reader thread per output stream, each blocked in a short-timeout read, avoids it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol, Self

from specops.errors import RemoteTimeout
from specops.host.base import TIMED_OUT_CODES, Result, checked, display_command, shorten

CHUNK = 2**20
SEND_CHUNK = 2**16
POLL_S = 0.5


class Pipe(Protocol):
    """The byte ends of one running command as a transport gives them (an SSH channel, a subprocess's pipes).

    `send`, `recv` and `recv_stderr` raise TimeoutError when nothing moved within the poll interval, so the
    caller can look at its deadline; any other failure comes out as the transport's own error (ConnectError).
    """

    def send(self, data: bytes, /) -> int: ...
    def recv(self, size: int, /) -> bytes: ...
    def recv_stderr(self, size: int, /) -> bytes: ...
    def shutdown_write(self) -> None: ...
    def wait_exit(self, timeout: float, /) -> int | None: ...
    def close(self) -> None: ...


class RunningCommand:
    """One exec: stdin written by the caller, stdout and stderr collected by two reader threads.

    `timeout` is the command's own limit (the host enforces it, see base.with_deadline); `grace` is how much
    longer the client waits for the host to act on it before giving up by itself.
    """

    def __init__(
        self, pipe: Pipe, words: tuple[str, ...], *, host: str, timeout: float, grace: float, started: float
    ) -> None:
        self.words, self.host, self.timeout, self.started = words, host, timeout, started
        self.deadline = started + timeout + grace
        self._pipe = pipe
        self._changed = threading.Condition()
        self._stdout, self._stderr = bytearray(), bytearray()
        self._cursor = 0
        self._eof = {"stdout": False, "stderr": False}
        self._error: BaseException | None = None
        self._input_open = True
        self._stop = threading.Event()
        for name, recv, sink in (("stdout", pipe.recv, self._stdout), ("stderr", pipe.recv_stderr, self._stderr)):
            threading.Thread(target=self._drain, args=(name, recv, sink), daemon=True).start()

    def write(self, data: bytes) -> bool:
        """Send `data` to the command's stdin; False once the command no longer reads it (it exited: `wait`
        says how, like EPIPE for ssh). Raises RemoteTimeout past the deadline."""
        view = memoryview(data)
        while view and self._input_open:
            try:
                sent = self._pipe.send(bytes(view[:SEND_CHUNK]))
            except TimeoutError:
                self._check_deadline()
                continue
            except Exception:  # a closed channel ends stdin; wait()/read_line() report the outcome
                self._input_open = False
                break
            if sent == 0:  # the command closed its stdin
                self._input_open = False
                break
            view = view[sent:]
        return self._input_open

    def close_input(self) -> None:
        """EOF on the command's stdin (idempotent)."""
        if self._input_open:
            self._input_open = False
            try:
                self._pipe.shutdown_write()
            except Exception:  # already closed by the other end: nothing left to tell it
                return

    def read_line(self) -> bytes:
        """The next stdout line with its newline; what is left without one at EOF (b"" when nothing is)."""
        with self._changed:
            while True:
                end = self._stdout.find(b"\n", self._cursor)
                if end >= 0 or self._eof["stdout"]:
                    stop = end + 1 if end >= 0 else len(self._stdout)
                    line = bytes(self._stdout[self._cursor : stop])
                    self._cursor = stop
                    return line
                self._raise_if_failed()
                self._check_deadline()
                self._changed.wait(POLL_S)

    def read_exact(self, size: int, until: float) -> bytes | None:
        """The next `size` stdout bytes (fewer at EOF), forgetting what was read before: a conversation that
        lives for a whole deploy keeps no more than its unread replies. None when `until` (monotonic) passes."""
        with self._changed:
            while len(self._stdout) - self._cursor < size and not self._eof["stdout"]:
                self._raise_if_failed()
                if time.monotonic() > until:
                    return None
                self._changed.wait(min(POLL_S, max(0.0, until - time.monotonic())) or 0.001)
            stop = min(len(self._stdout), self._cursor + size)
            data = bytes(self._stdout[self._cursor : stop])
            del self._stdout[:stop]
            self._cursor = 0
            return data

    def read_line_until(self, until: float) -> bytes | None:
        """Like `read_line` (the consumed bytes forgotten, as in `read_exact`), but None when `until` passes."""
        with self._changed:
            while self._stdout.find(b"\n", self._cursor) < 0 and not self._eof["stdout"]:
                self._raise_if_failed()
                if time.monotonic() > until:
                    return None
                self._changed.wait(min(POLL_S, max(0.0, until - time.monotonic())) or 0.001)
            end = self._stdout.find(b"\n", self._cursor)
            return self.read_exact(end + 1 - self._cursor if end >= 0 else len(self._stdout) - self._cursor, until)

    def wait(self, check: bool = True) -> Result:
        """Close stdin, collect everything, return the Result (RemoteTimeout if the host's limit struck).

        A non-zero exit raises CommandFailed, as `Host.run` does, unless `check=False`: a conversation that
        reads the command's own error reply (the release script's JSON) asks for the Result whatever the exit.
        """
        self.close_input()
        with self._changed:
            while not all(self._eof.values()):
                self._raise_if_failed()
                self._check_deadline()
                self._changed.wait(POLL_S)
            self._raise_if_failed()
        exit_code = self._pipe.wait_exit(max(0.0, self.deadline - time.monotonic()))
        duration = time.monotonic() - self.started
        if exit_code is None or (exit_code in TIMED_OUT_CODES and duration >= self.timeout):
            self.close()
            raise self._timeout()
        return checked(
            Result(self.words, exit_code, bytes(self._stdout), bytes(self._stderr), duration), self.host, check
        )

    def close(self) -> None:
        """Stop reading and close the channel (a command still running gets EOF and loses its session)."""
        self._stop.set()
        self._pipe.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _drain(self, name: str, recv: Callable[[int], bytes], sink: bytearray) -> None:
        while not self._stop.is_set():
            try:
                chunk = recv(CHUNK)
            except TimeoutError:
                continue
            except BaseException as error:  # the connection died: the waiting caller raises it
                with self._changed:
                    self._error = self._error or error
                    self._changed.notify_all()
                return
            with self._changed:
                if not chunk:
                    self._eof[name] = True
                    self._changed.notify_all()
                    return
                sink += chunk
                self._changed.notify_all()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def _check_deadline(self) -> None:
        if time.monotonic() > self.deadline:
            self.close()
            raise self._timeout()

    def _timeout(self) -> RemoteTimeout:
        return RemoteTimeout(shorten(display_command(self.words)), self.timeout, host=self.host)


class FinishedPipe:
    """The pipe of a command whose whole output is known up front: a program that could not start (exit 127
    and the shell's message) or a recorded answer (RecordingHost). `received` counts the stdin it was given;
    with `reads_input=False` it refuses stdin like a command that has exited."""

    def __init__(self, exit_code: int, stderr: bytes = b"", stdout: bytes = b"", reads_input: bool = False) -> None:
        self.exit_code, self.reads_input, self.received = exit_code, reads_input, 0
        self._pending = {"stdout": stdout, "stderr": stderr}

    def send(self, data: bytes, /) -> int:
        if not self.reads_input:
            return 0
        self.received += len(data)
        return len(data)

    def recv(self, size: int, /) -> bytes:
        return self._take("stdout", size)

    def recv_stderr(self, size: int, /) -> bytes:
        return self._take("stderr", size)

    def shutdown_write(self) -> None:
        return None

    def wait_exit(self, timeout: float, /) -> int | None:
        return self.exit_code

    def close(self) -> None:
        return None

    def _take(self, name: str, size: int) -> bytes:
        data = self._pending[name]
        self._pending[name] = data[size:]
        return data[:size]
