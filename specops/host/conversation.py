"""A Host whose commands run as requests over ONE exec on the host: a deploy's whole conversation.

    with conversation(host, conversation_argv(spec.python), lifetime_s=CONVERSATION_TIMEOUT_S) as talk:
        talk.run(["systemctl", "show", unit, "-p", "ActiveState"])   # a request, not a new exec
        talk.put(env_text, env_file, mode=0o600)                      # the atomic put, as a request too

Why: every exec pays a channel and the host's login shell (0.15-0.3 s where root's .bashrc runs pyenv or conda
init, common on GPU hosts). A deploy's thirty-odd commands (lock, unit, manifest, guard, switch, restart, the
readiness polls, the audit line) cost one round trip each instead; its readiness polls can then come every
fraction of a second, so a crash is named as soon as its journal line is written. The runner on the host
(specops/remote/runner.py) gives each command the same environment, working directory, exit codes and
deadline as an exec through the login shell would, so callers cannot tell the difference.

What stays a separate exec: `stream` (the push, which has its own conversation), and any command while
another thread's request is still running for longer than BUSY_WAIT_S (the lock's heartbeat never queues
behind a slow probe). A host whose interpreter cannot start the runner is driven exec by exec, as before.
If the conversation dies mid-request (the runner was killed), that request fails the way a lost connection
does, and later commands go back to one exec each.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from specops.errors import ConnectError, RemoteTimeout, SpecopsError
from specops.host.base import (
    DEFAULT_TIMEOUT_S,
    KILL_AFTER_S,
    Host,
    HostBase,
    Result,
    Tunnel,
    checked,
    checked_argv,
    display_command,
    reveal,
    shorten,
)

if TYPE_CHECKING:
    from specops.host.process import RunningCommand

RUNNER_VERSION = 1
START_TIMEOUT_S = 30.0  # for the runner's first line: the login shell and the interpreter's start
REPLY_SLACK_S = KILL_AFTER_S + 10.0  # past a command's own limit, before the client stops waiting for it
BUSY_WAIT_S = 2.0


class ConversationLost(ConnectError):
    """The runner on the host stopped answering mid-request: that command's outcome is unknown."""


@contextmanager
def conversation(host: Host, argv: Sequence[str], *, lifetime_s: float) -> Iterator[Host]:
    """`host` with its commands sent over one exec of `argv` (the runner); where the runner cannot start, its
    commands go to `host` one exec each. A transport may provide its own (`RecordingHost.conversation` records
    instead of running)."""
    own = getattr(host, "conversation", None)
    if own is not None:
        with own(argv, lifetime_s=lifetime_s) as talk:
            yield talk
        return
    talk = start(host, argv, lifetime_s)
    try:
        yield talk
    finally:
        talk.close()


def start(host: Host, argv: Sequence[str], lifetime_s: float) -> ConversationHost:
    """The runner started; its greeting is read before the first request, so the host's login shell and the
    interpreter start while the caller goes on (e.g. starts the push session, another login shell)."""
    return ConversationHost(host, host.stream(argv, timeout=lifetime_s))


def greeted(command: RunningCommand) -> bool:
    """Whether the runner said it is ready (no such interpreter, a broken venv: it never does)."""
    greeting = command.read_line_until(time.monotonic() + START_TIMEOUT_S)
    try:
        hello = json.loads(greeting or b"")
    except ValueError:
        return False
    return isinstance(hello, dict) and hello.get("runner") == RUNNER_VERSION


class ConversationHost(HostBase):
    """The Host the core sees during a conversation: `run` (and so `put`/`get`) are requests on one exec."""

    def __init__(self, host: Host, command: RunningCommand) -> None:
        self.name = host.name
        self.host = host
        self._command: RunningCommand | None = command
        self._greeted = False
        self._busy = threading.Lock()

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        words = checked_argv(argv, env)
        if self._command is None or not self._busy.acquire(timeout=BUSY_WAIT_S):
            return self.host.run(words, input=input, timeout=timeout, check=check, env=env)
        try:
            if not self._greeted and self._command is not None:
                self._greeted = True
                self._greet(self._command)
            if self._command is None:  # it never started, or died while this request waited
                return self.host.run(words, input=input, timeout=timeout, check=check, env=env)
            result = self._exchange(self._command, words, input or b"", timeout, env)
        finally:
            self._busy.release()
        return checked(result, self.name, check)

    def _greet(self, command: RunningCommand) -> None:
        """Read the runner's first line; without it (or interrupted meanwhile) the conversation is given up."""
        try:
            ready = greeted(command)
        except BaseException:
            self._drop()
            raise
        if not ready:
            self._drop()

    def _exchange(
        self, command: RunningCommand, words: tuple[str, ...], data: bytes, timeout: float,
        env: Mapping[str, str] | None,
    ) -> Result:  # fmt: skip
        started = time.monotonic()
        request: dict[str, Any] = {"argv": [reveal(word) for word in words], "timeout": timeout, "input": len(data)}
        if env:
            request["env"] = {name: reveal(value) for name, value in env.items()}
        try:
            if not command.write(json.dumps(request).encode("utf-8") + b"\n" + data):
                raise self._lost(words, "it stopped reading")
            until = started + timeout + REPLY_SLACK_S
            header = self._header(command.read_line_until(until), words, timeout)
            out = command.read_exact(header["out"], until)
            err = command.read_exact(header["err"], until)
        except BaseException:  # a lost connection, a timeout, Ctrl-C: this request's reply may still come, and
            self._drop()  # would be read as the next one's, so the conversation is given up
            raise
        if out is None or err is None or len(out) < header["out"] or len(err) < header["err"]:
            self._drop()
            raise self._lost(words, "its reply was cut short")
        if header.get("timed_out"):
            raise RemoteTimeout(shorten(display_command(words)), timeout, host=self.name)
        return Result(words, int(header["rc"]), out, err, time.monotonic() - started)

    def _header(self, line: bytes | None, words: tuple[str, ...], timeout: float) -> dict[str, Any]:
        if line is None:
            raise RemoteTimeout(shorten(display_command(words)), timeout, host=self.name)
        try:
            header = json.loads(line)
        except ValueError:
            header = None
        if not isinstance(header, dict) or not all(isinstance(header.get(k), int) for k in ("rc", "out", "err")):
            raise self._lost(words, "it ended" if not line else "its reply was not understood")
        return header

    def _lost(self, words: tuple[str, ...], why: str) -> ConversationLost:
        return ConversationLost(
            f"{self.name}: the command conversation stopped while running `{shorten(display_command(words))}`: "
            f"{why}; whether that command ran is unknown",
            hint=f"`specops status {self.name}` shows the host as it is now",
        )

    def _drop(self) -> None:
        """Forget a conversation that failed mid-request; later commands run as plain execs."""
        command, self._command = self._command, None
        if command is not None:
            command.close()

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        return self.host.stream(argv, timeout=timeout, env=env)

    def open_tunnel(self, remote_host: str, remote_port: int) -> Tunnel:
        return self.host.open_tunnel(remote_host, remote_port)

    def close(self) -> None:
        """End the conversation (EOF: the runner exits); the connection itself stays open for its owner."""
        with self._busy:
            command, self._command = self._command, None
        if command is None:
            return
        try:
            command.close_input()
            command.read_exact(1, time.monotonic() + 2.0)  # its EOF: the runner has exited
        except SpecopsError:
            pass
        finally:
            command.close()
