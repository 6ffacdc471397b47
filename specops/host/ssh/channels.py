"""Running commands over an open SSH connection: SshHost, the Host whose every run/put/get/stream is its own
exec channel, and whose tunnels are direct-tcpip channels.

Why apart from connection.py: connecting (sockets, hops, handshake, host keys, keys) happens once per host and
run, and fails before anything ran; what happens here happens for every command, and a failure here means a
connection that WAS up went away (`connection_lost`, exit 4), or a tunnel the host refused. Every paramiko or
socket failure leaves this module as that ConnectError or a RemoteTimeout, never as a traceback.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from specops.errors import ConnectError
from specops.host.base import (
    DEFAULT_TIMEOUT_S,
    KILL_AFTER_S,
    HostBase,
    Result,
    Tunnel,
    checked_argv,
    wire_command,
    with_deadline,
    with_env,
)
from specops.host.become import CHECK_TIMEOUT_S, Become, Escalation
from specops.host.process import POLL_S, RunningCommand
from specops.host.ssh import errors
from specops.host.ssh.paramiko_import import lean_paramiko_import
from specops.host.ssh.prestart import PrestartedCommands
from specops.host.ssh.target import SshTarget

with lean_paramiko_import():
    import paramiko

CONNECT_TIMEOUT_S = 10.0  # a connection, and a new channel on one, must be open within this
NETWORK_SLACK_S = 2.0

__all__ = ["CONNECT_TIMEOUT_S", "SshHost"]


class SshHost(HostBase):
    """A Host over one SSH connection; every run/put/get is its own exec channel on it."""

    def __init__(self, name: str, target: SshTarget, transport: paramiko.Transport, connect_s: float = 0.0) -> None:
        self.name = name
        self.target = target
        self.connect_s = connect_s  # connect + handshake + auth (+ the hops), for `--verbose` and benchmarks
        self.escalation: Escalation | None = None  # set by become(): every command then runs through sudo
        self._transport_ = transport
        self._prestarted = PrestartedCommands()

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        """Start the command on its own exec channel and hand it back running (see host/process.py); with
        `become`, the whole command line (deadline included) runs through sudo (host/become.py). The same command
        started early by `prestart` is handed over instead (prestart.py)."""
        words = checked_argv(argv, env)
        early = self._prestarted.take(words, timeout) if env is None else None
        if early is not None:
            return early
        line = with_deadline(with_env(words, env), timeout)
        preamble = b""
        if self.escalation is not None:
            line, preamble = self.escalation.wrap(line)
        command = self._start(words, line, timeout)
        if preamble:  # sudo's password: the first line of stdin, before anything the caller writes
            command.write(preamble)
        return command

    def prestart(self, argv: Sequence[str], *, timeout: float) -> None:
        """Start `argv` now, for the first `stream` of the same command (prestart.py)."""
        self._prestarted.add(checked_argv(argv), timeout, self.stream(argv, timeout=timeout))

    def become(self, become: Become) -> None:
        """Act through sudo from now on: asks the host once how (NOPASSWD or the run's password), raising
        BecomeError (exit 4) naming the host and the fix when it cannot."""
        escalation = Escalation(become, f"{self.name} ({self.target.address})", self.target.user)
        escalation.establish(self._run_as_login)
        self.escalation = escalation

    def _run_as_login(self, argv: Sequence[str], input: bytes | None) -> Result:
        words = checked_argv(argv)
        with self._start(words, with_deadline(words, CHECK_TIMEOUT_S), CHECK_TIMEOUT_S) as command:
            if input:
                command.write(input)
            return command.wait(check=False)

    def _start(self, words: tuple[str, ...], line: Sequence[str], timeout: float) -> RunningCommand:
        started = time.monotonic()
        channel = self._open_session()
        try:
            channel.settimeout(POLL_S)
            channel.exec_command(wire_command(line))
        except (paramiko.SSHException, OSError, EOFError) as error:
            channel.close()
            raise self._lost(error) from None
        pipe = _ChannelPipe(channel, self._lost)
        grace = KILL_AFTER_S + NETWORK_SLACK_S  # the host's own `timeout` acts first
        return RunningCommand(pipe, words, host=self.name, timeout=timeout, grace=grace, started=started)

    def open_tunnel(self, remote_host: str, remote_port: int) -> Tunnel:
        """A direct-tcpip channel: bytes to `remote_host:remote_port` as seen FROM the host (usually
        127.0.0.1 and the engine's port), so HTTP reaches a server that listens only on the host's loopback."""
        transport = self._transport()
        try:
            return transport.open_channel(
                "direct-tcpip", (remote_host, remote_port), ("127.0.0.1", 0), timeout=CONNECT_TIMEOUT_S
            )
        except paramiko.ChannelException as error:
            raise errors.tunnel_refused(self.name, remote_host, remote_port, error.text) from None
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise self._lost(error) from None

    def close(self) -> None:
        """Closes this host's connection (and its channel through a jump host); the jump host stays for others."""
        self._prestarted.close_all()
        self._transport_.close()

    def _transport(self) -> paramiko.Transport:
        transport = self._transport_
        if not transport.is_active():
            raise self._lost(ConnectionError("the connection is closed"))
        return transport

    def _open_session(self) -> paramiko.Channel:
        try:
            return self._transport().open_session(timeout=CONNECT_TIMEOUT_S)
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise self._lost(error) from None

    def _lost(self, error: BaseException) -> ConnectError:
        return errors.connection_lost(self.name, self.target, error)


class _ChannelPipe:
    """A paramiko exec channel as a process.Pipe: poll timeouts stay TimeoutError, everything else that can go
    wrong on the connection becomes the ConnectError naming the host (never a paramiko traceback)."""

    def __init__(self, channel: paramiko.Channel, lost: Callable[[BaseException], ConnectError]) -> None:
        self._channel, self._lost = channel, lost

    def send(self, data: bytes, /) -> int:
        return int(self._call(self._channel.send, data))

    def recv(self, size: int, /) -> bytes:
        return bytes(self._call(self._channel.recv, size))

    def recv_stderr(self, size: int, /) -> bytes:
        return bytes(self._call(self._channel.recv_stderr, size))

    def shutdown_write(self) -> None:
        self._call(self._channel.shutdown_write)

    def wait_exit(self, timeout: float, /) -> int | None:
        return self._channel.exit_status if self._channel.status_event.wait(timeout) else None

    def close(self) -> None:
        """Closing twice, or after the connection went (Ctrl-C while the reader threads and the deploy's
        cleanup close at once), is not an error: paramiko then finds its transport already unlinked from the
        channel and raises AttributeError from inside `Channel.close`."""
        with contextlib.suppress(paramiko.SSHException, OSError, EOFError, AttributeError):
            self._channel.close()

    def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        try:
            return method(*args)
        except TimeoutError:
            raise
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise self._lost(error) from None
