"""SSH transport: the ONLY module that imports paramiko (a layering test enforces it).

    host = connect(spec)                     # HostSpec: `ssh` resolved through ~/.ssh/config like OpenSSH
    with host:
        result = host.run(["systemctl", "is-active", "sglang"], timeout=10)
        host.put(unit_text.encode(), "/etc/systemd/system/sglang.service")
        tunnel = host.open_tunnel("127.0.0.1", 30000)   # socket-like; carries HTTP to the engine

Security: host keys are checked strictly, for the host and for every jump host, against the known_hosts files
OpenSSH would read (~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts, or what User/GlobalKnownHostsFile in
~/.ssh/config name instead) and its RevokedHostKeys, read as OpenSSH reads them (hostkeys.py); an unknown,
revoked or changed key is refused, never added.
Bastions: a host behind ProxyJump is reached through a direct-tcpip channel of its last jump host, whose ONE
connection per run all hosts behind it share (shared.py); ProxyCommand gives a socket of its own
(proxycommand.py). Keys: ssh-agent and key files in OpenSSH's order (keyorder.py), a passphrase
asked once per key and run (passphrase.py). Everything that is not paramiko lives in those pure modules
and in resolve.py (~/.ssh/config -> SshTarget with its hops).
Speed (docs/performance.md): our own socket with TCP_NODELAY (3 ms per command instead of 43 ms), AES-GCM
first, a large receive window. Every paramiko or socket failure
leaves this module as a ConnectError (exit 4) or RemoteTimeout, never as a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from specops.host.ssh import errors, host_certs, known_hosts
from specops.host.ssh.hostkeys import HostKeyChecker, known_hosts_files
from specops.host.ssh.keyorder import key_order
from specops.host.ssh.paramiko_import import lean_paramiko_import
from specops.host.ssh.passphrase import KeyUnlocker
from specops.host.ssh.prestart import PrestartedCommands
from specops.host.ssh.proxycommand import ProxySocket, proxy_argv, start_proxy
from specops.host.ssh.resolve import resolve_ssh_target
from specops.host.ssh.shared import SharedConnections, register_at_exit
from specops.host.ssh.target import SshTarget

with lean_paramiko_import():
    import paramiko
    import paramiko.agent

if TYPE_CHECKING:
    from specops.host.ssh.target import Reach

# paramiko logs handshake failures with a traceback from its own thread; we raise ConnectError instead. A
# NullHandler keeps Python's last-resort handler from printing them (a configured root logger still sees them).
logging.getLogger("paramiko").addHandler(logging.NullHandler())

CONNECT_TIMEOUT_S = 10.0
KEEPALIVE_S = 15
WINDOW_BYTES = 2**27  # what the host may send before we acknowledge: big outputs and get() stream freely
MAX_PACKET_BYTES = 2**18
NETWORK_SLACK_S = 2.0
RSA_SIGNATURES = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256")}  # an ssh-rsa key signs with these
FAST_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")

__all__ = ["SshHost", "connect", "open_ssh", "resolve_ssh_target", "shared_hops"]


def connect(
    spec: Reach,
    ssh_config: Path | None = None,
    known_hosts: Sequence[Path] | None = None,
    *,
    connect_timeout: float | None = None,
) -> SshHost:
    """Connect to an inventory host (a HostSpec, or the same three settings kept from a validated config).
    `known_hosts` replaces the default files (see hostkeys.known_hosts_files)."""
    target = resolve_ssh_target(spec.ssh, ssh_config, jump=spec.jump)
    return open_ssh(target, name=spec.name, known_hosts=known_hosts, connect_timeout=connect_timeout)


def open_ssh(
    target: SshTarget,
    name: str | None = None,
    known_hosts: Sequence[Path] | None = None,
    connect_timeout: float | None = None,
) -> SshHost:
    """Open an authenticated, host-key-checked connection to a resolved target, through its hops if it has any."""
    timeout = connect_timeout or target.connect_timeout or CONNECT_TIMEOUT_S
    started = time.monotonic()
    sock = _hop_socket(target, known_hosts, timeout, name or target.alias)
    transport = _handshake(target, sock, known_hosts, timeout, started)
    return SshHost(name or target.alias, target, transport, time.monotonic() - started)


def _hop_socket(target: SshTarget, files: Sequence[Path] | None, timeout: float, name: str) -> Any:
    """The byte stream to the target's sshd: a channel through its last jump host, a ProxyCommand, or TCP."""
    if not target.jumps:
        return _proxy_socket(target, timeout) if target.proxy_command else _open_socket(target, timeout)
    chain, last = target.jumps, target.jumps[-1]
    try:
        through = _shared_hop(chain, files, timeout)
    except ConnectError as error:
        raise errors.hop_failed(name, last, error) from None
    try:
        return through.open_channel("direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0), timeout=timeout)
    except paramiko.ChannelException as error:
        raise errors.hop_refused(name, target, last, error.text) from None
    except (paramiko.SSHException, OSError, EOFError) as error:
        raise errors.hop_refused(name, target, last, str(error) or type(error).__name__) from None


def _shared_hop(chain: tuple[SshTarget, ...], files: Sequence[Path] | None, timeout: float) -> paramiko.Transport:
    """The ONE transport per jump host and run (shared.py); a hop's own hops are shared the same way."""
    hop = chain[-1]
    key = tuple(_trust_key(h, files) for h in chain)

    def open_hop() -> paramiko.Transport:
        started = time.monotonic()
        sock = _hop_socket(replace(hop, jumps=chain[:-1]), files, timeout, hop.alias)
        return _handshake(hop, sock, files, timeout, started)

    return shared_hops.get(key, open_hop)


def _trust_key(hop: SshTarget, files: Sequence[Path] | None) -> tuple[object, ...]:
    """What must be equal for two hosts to share a jump host's connection: where, as whom, and whom it trusts."""
    trust = (tuple(known_hosts_files(hop, files)), hop.host_key_alias, hop.revoked_host_keys)
    return (hop.address, hop.identity_files, hop.agent_socket, *trust)


def _handshake(
    target: SshTarget, sock: Any, files: Sequence[Path] | None, timeout: float, started: float
) -> paramiko.Transport:
    """Key exchange, the host key checked against known_hosts, then authentication; any failure is a ConnectError."""
    try:
        checker = HostKeyChecker(target, known_hosts_files(target, files))
    except ConnectError:  # an unreadable known_hosts file: nothing may be left open behind the error
        sock.close()
        raise
    transport = _tuned_transport(sock, known_types=checker.known_types(), certificates=checker.trusts_certificates())
    transport.banner_timeout = max(timeout - (time.monotonic() - started), 1.0)  # ONE timeout: connect + banner
    try:
        transport.start_client(timeout=max(timeout, 30.0))
        host_key = transport.get_remote_server_key()
        certificate = host_key.public_blob.key_blob if host_key.public_blob is not None else None
        checker.check(host_key.asbytes(), host_key.get_name(), certificate, _verify_ca_signature)
        keys = _authenticate(transport, target)
    except ConnectError:
        transport.close()
        raise
    except (paramiko.SSHException, OSError, EOFError) as error:
        failure = _connect_error(transport.get_exception() or error, target, sock, timeout)  # before close ends it
        transport.close()
        raise failure from None
    if not transport.is_authenticated():
        transport.close()
        raise errors.auth_failed(target, keys)
    transport.set_keepalive(KEEPALIVE_S)
    return transport


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


_unlocker = KeyUnlocker()


def _authenticate(transport: paramiko.Transport, target: SshTarget) -> list[str]:
    """Public-key authentication in OpenSSH's order (keyorder.py); returns what it tried, for the error."""
    tried: list[str] = []
    agent = _agent(target)
    agent_keys = list(agent.get_keys()) if agent is not None else []
    described = [(key.asbytes(), f"{key.get_name()} {key.comment or ''}") for key in agent_keys]
    try:
        for candidate in key_order(target, described):
            key: paramiko.PKey | None = (
                agent_keys[candidate.agent_index]
                if candidate.agent_index is not None
                else _load_key(candidate.path or "", target.certificate_files)
            )
            if key is None:
                continue
            tried.append(candidate.label)
            with contextlib.suppress(paramiko.AuthenticationException):
                transport.auth_publickey(target.user, key)
            if transport.is_authenticated():
                break
    finally:
        if agent is not None:
            agent._close()  # type: ignore[attr-defined]  # paramiko's AgentSSH has no public close
    return tried


def _agent(target: SshTarget) -> paramiko.agent.AgentSSH | None:
    """ssh-agent at SSH_AUTH_SOCK or IdentityAgent; an agent that does not answer is skipped, as OpenSSH does."""
    if not target.agent_socket:
        return None
    agent = paramiko.agent.AgentSSH()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(CONNECT_TIMEOUT_S)
        conn.connect(target.agent_socket)
        agent._connect(conn)  # type: ignore[attr-defined]  # (the one way to use a socket other than $SSH_AUTH_SOCK)
    except (OSError, paramiko.SSHException):
        return None
    return agent


def _load_key(path: str, certificates: Sequence[str]) -> paramiko.PKey | None:
    """The key file (asking for its passphrase once per run), with its certificate when one matches."""
    try:
        key: paramiko.PKey = paramiko.PKey.from_path(path)
    except (paramiko.PasswordRequiredException, TypeError):  # cryptography says TypeError for a missing passphrase
        key = _unlocker.unlock(path, functools.partial(_decrypt, path))  # type: ignore[assignment]
    except (paramiko.SSHException, ValueError, OSError):
        return None  # not a key paramiko can read: OpenSSH skips it too
    for certificate in (*certificates, f"{path}-cert.pub"):
        with contextlib.suppress(OSError, ValueError, paramiko.SSHException):
            key.load_certificate(certificate)
            break
    return key


def _decrypt(path: str, passphrase: str) -> paramiko.PKey:
    try:
        return paramiko.PKey.from_path(path, passphrase.encode())  # type: ignore[arg-type]  # bytes, not str
    except (paramiko.SSHException, ValueError, TypeError) as error:
        raise ValueError("wrong passphrase") from error


def _connect_error(error: BaseException, target: SshTarget, sock: Any, timeout: float) -> ConnectError:
    """Every other way connect can fail, as the one ConnectError that tells the operator what happened."""
    if isinstance(sock, ProxySocket) and (status := sock.exit_status()) is not None:
        return errors.proxy_command_exited(target, status, sock.errors())
    if isinstance(sock, ProxySocket) and sock.errors():
        return errors.proxy_command_failed(target, sock.errors())
    if isinstance(error, paramiko.BadAuthenticationType) or "No authentication methods" in str(error):
        return errors.auth_failed(target, [])
    return errors.handshake_failed(target, error, timeout)


def _proxy_socket(target: SshTarget, timeout: float) -> ProxySocket:
    try:
        return start_proxy(proxy_argv(target))
    except (OSError, ValueError) as error:
        raise errors.proxy_command_failed(target, str(error)) from None


def _open_socket(target: SshTarget, timeout: float) -> socket.socket:
    try:
        sock = socket.create_connection((target.hostname, target.port), timeout=timeout)
    except OSError as error:
        raise errors.socket_failed(target, error, timeout) from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # paramiko never sets it: 40 ms per round trip
    return sock


def _verify_ca_signature(ca_blob: bytes, signed: bytes, signature: bytes) -> bool:
    """A certificate authority's signature over a host certificate (paramiko does the cryptography)."""
    try:
        ca = paramiko.PKey.from_type_string(known_hosts.blob_type(ca_blob) or "", ca_blob)
        return bool(ca.verify_ssh_sig(signed, paramiko.Message(signature)))
    except (paramiko.SSHException, ValueError, TypeError, IndexError):
        return False


def _tuned_transport(
    sock: Any, /, *, known_types: Sequence[str] = (), certificates: bool = False
) -> paramiko.Transport:
    transport = paramiko.Transport(sock, default_window_size=WINDOW_BYTES, default_max_packet_size=MAX_PACKET_BYTES)
    options = transport.get_security_options()
    options.ciphers = (
        *(c for c in FAST_CIPHERS if c in options.ciphers),
        *(c for c in options.ciphers if c not in FAST_CIPHERS),
    )
    wanted = [name for known in known_types for name in RSA_SIGNATURES.get(known, (known,))]
    first = [name for name in wanted if name in options.key_types]  # the host's known key, not another type
    order = [*dict.fromkeys(first), *(name for name in options.key_types if name not in first)]
    # with a CA for the host, ask for its certificate first, as OpenSSH does (paramiko lists them last)
    options.key_types = (*(host_certs.certificate_types(order) if certificates else ()), *order)
    return transport


def _close_transport(transport: paramiko.Transport) -> None:
    with contextlib.suppress(Exception):
        transport.close()


shared_hops: SharedConnections[paramiko.Transport] = register_at_exit(
    SharedConnections(close=_close_transport, alive=lambda transport: transport.is_active())
)
