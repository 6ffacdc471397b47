"""SSH transport: the ONLY module that imports paramiko (a layering test enforces it).

    host = connect(spec)                     # HostSpec: `ssh` resolved through ~/.ssh/config like OpenSSH
    with host:
        result = host.run(["systemctl", "is-active", "sglang"], timeout=10)
        host.put(unit_text.encode(), "/etc/systemd/system/sglang.service")
        tunnel = host.open_tunnel("127.0.0.1", 30000)   # socket-like; carries HTTP to the engine

Security: host keys are checked strictly against ~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts and the
UserKnownHostsFile(s) of ~/.ssh/config, read as OpenSSH reads them (host/known_hosts.py); an unknown, revoked
or changed key is refused, never added (Fabric's AutoAddPolicy is the anti-pattern), and the key types known for
the host are asked for first, as OpenSSH does. Speed (docs/performance.md): our own socket with TCP_NODELAY
(3 ms per command instead of 43 ms), AES-GCM first, a large receive window. Every paramiko or socket failure
leaves this module as a ConnectError (exit 4) or RemoteTimeout, never as a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import paramiko

from specops.errors import ConfigError, ConnectError
from specops.host import host_certs, known_hosts, ssh_errors
from specops.host.base import (
    DEFAULT_TIMEOUT_S,
    KILL_AFTER_S,
    HostBase,
    Tunnel,
    checked_argv,
    wire_command,
    with_deadline,
    with_env,
)
from specops.host.process import POLL_S, RunningCommand
from specops.host.target import SshTarget, split_ssh_spec

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec

# paramiko logs handshake failures with a traceback from its own thread; we raise ConnectError instead. A
# NullHandler keeps Python's last-resort handler from printing them (a configured root logger still sees them).
logging.getLogger("paramiko").addHandler(logging.NullHandler())

DEFAULT_SSH_CONFIG = Path("~/.ssh/config")
DEFAULT_KNOWN_HOSTS = (Path("~/.ssh/known_hosts"), Path("/etc/ssh/ssh_known_hosts"))
CONNECT_TIMEOUT_S = 10.0
KEEPALIVE_S = 15
WINDOW_BYTES = 2**27  # what the host may send before we acknowledge: big outputs and get() stream freely
MAX_PACKET_BYTES = 2**18
NETWORK_SLACK_S = 2.0
RSA_SIGNATURES = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256")}  # an ssh-rsa key signs with these
FAST_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


def resolve_ssh_target(spec: str, ssh_config: Path | None = None) -> SshTarget:
    """Apply ~/.ssh/config to an inventory `ssh` value; explicit user/port in the value win."""
    user, host, port = split_ssh_spec(spec)
    config_path = (ssh_config or DEFAULT_SSH_CONFIG).expanduser()
    options: dict[str, Any] = {}
    if config_path.is_file():
        try:
            options = dict(paramiko.SSHConfig.from_path(str(config_path)).lookup(host))
        except (paramiko.SSHException, OSError, ValueError) as error:
            raise ConfigError([f"{config_path}: {error}"], hint="`ssh -G HOST` shows how OpenSSH reads it") from None
    identity = options.get("identityfile", [])
    timeout = options.get("connecttimeout")
    return SshTarget(
        alias=spec,
        hostname=str(options.get("hostname", host)),
        user=user or str(options.get("user") or getpass.getuser()),
        port=port or int(str(options.get("port", 22))),
        identity_files=tuple(os.path.expanduser(str(p)) for p in (identity if isinstance(identity, list) else [])),
        known_hosts_files=tuple(os.path.expanduser(p) for p in str(options.get("userknownhostsfile", "")).split()),
        proxy_jump=str(options["proxyjump"]) if "proxyjump" in options else None,
        proxy_command=str(options["proxycommand"]) if options.get("proxycommand", "none") != "none" else None,
        identities_only=str(options.get("identitiesonly", "no")).lower() == "yes",
        connect_timeout=float(timeout) if timeout else None,
    )


def connect(
    spec: HostSpec,
    ssh_config: Path | None = None,
    known_hosts: Sequence[Path] | None = None,
    *,
    connect_timeout: float | None = None,
) -> SshHost:
    """Connect to an inventory host. `known_hosts` replaces the default files; config ones always apply."""
    target = resolve_ssh_target(spec.ssh, ssh_config)
    return open_ssh(target, name=spec.name, known_hosts=known_hosts, connect_timeout=connect_timeout)


def open_ssh(
    target: SshTarget,
    name: str | None = None,
    known_hosts: Sequence[Path] | None = None,
    connect_timeout: float | None = None,
) -> SshHost:
    """Open an authenticated, host-key-checked connection to a resolved target."""
    if target.proxy_jump or target.proxy_command:
        raise ssh_errors.proxy_unsupported(target)
    timeout = connect_timeout or target.connect_timeout or CONNECT_TIMEOUT_S
    files = [*(known_hosts if known_hosts is not None else DEFAULT_KNOWN_HOSTS), *map(Path, target.known_hosts_files)]
    client = paramiko.SSHClient()
    policy = _KnownHostsPolicy(target, files)
    client.set_missing_host_key_policy(policy)  # no keys are loaded into paramiko: every key goes to the policy
    started = time.monotonic()
    sock = _open_socket(target, timeout)
    remaining = max(timeout - (time.monotonic() - started), 1.0)  # ONE timeout for TCP connect + banner
    keys = [path for path in target.identity_files if os.path.isfile(path)]
    key_files: Any = keys or None  # paramiko takes a list; its type stubs say str
    try:
        client.connect(
            target.hostname, port=target.port, username=target.user, key_filename=key_files,
            allow_agent=not target.identities_only, look_for_keys=not target.identities_only,
            timeout=remaining + 1, banner_timeout=remaining, auth_timeout=max(timeout, 30.0), sock=sock,
            transport_factory=functools.partial(_tuned_transport, known_types=policy.known_types(),
                                                certificates=policy.trusts_certificates()),
        )  # fmt: skip
    except ConnectError:  # the known_hosts policy refused the host key
        client.close()
        raise
    except paramiko.AuthenticationException as error:
        client.close()
        raise _connect_error(error, target, keys, timeout) from None
    except (paramiko.SSHException, OSError, EOFError) as error:
        cause = _transport_error(client) or error  # paramiko's "No existing session" hides the real cause
        client.close()
        raise _connect_error(cause, target, keys, timeout) from None
    transport = client.get_transport()
    assert transport is not None  # connect() succeeded
    transport.set_keepalive(KEEPALIVE_S)
    return SshHost(name or target.alias, target, client, time.monotonic() - started)


class SshHost(HostBase):
    """A Host over one SSH connection; every run/put/get is its own exec channel on it."""

    def __init__(self, name: str, target: SshTarget, client: paramiko.SSHClient, connect_s: float = 0.0) -> None:
        self.name = name
        self.target = target
        self.connect_s = connect_s  # connect + handshake + auth, for `--verbose` and benchmarks
        self._client = client

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        """Start the command on its own exec channel and hand it back running (see host/process.py)."""
        words = checked_argv(argv, env)
        started = time.monotonic()
        channel = self._open_session()
        try:
            channel.settimeout(POLL_S)
            channel.exec_command(wire_command(with_deadline(with_env(words, env), timeout)))
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
            raise ssh_errors.tunnel_refused(self.name, remote_host, remote_port, error.text) from None
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise self._lost(error) from None

    def close(self) -> None:
        self._client.close()

    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise self._lost(ConnectionError("the connection is closed"))
        return transport

    def _open_session(self) -> paramiko.Channel:
        try:
            return self._transport().open_session(timeout=CONNECT_TIMEOUT_S)
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise self._lost(error) from None

    def _lost(self, error: BaseException) -> ConnectError:
        return ssh_errors.connection_lost(self.name, self.target, error)


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


class _KnownHostsPolicy(paramiko.MissingHostKeyPolicy):
    """Decides every host key from known_hosts as OpenSSH would (specops/host/known_hosts.py): accepts only a
    listed key, refuses an unknown, changed or revoked one, and never adds anything."""

    def __init__(self, target: SshTarget, files: Sequence[Path]) -> None:
        self.target = target
        try:
            self.entries, self.loaded = known_hosts.read_files(files)
        except OSError as error:
            raise ConnectError(str(error)) from None

    def known_types(self) -> list[str]:
        return known_hosts.known_types(self.entries, known_hosts.lookup_name(self.target.hostname, self.target.port))

    def trusts_certificates(self) -> bool:
        name = known_hosts.lookup_name(self.target.hostname, self.target.port)
        return known_hosts.trusts_certificates(self.entries, name)

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        name = known_hosts.lookup_name(self.target.hostname, self.target.port)
        blob = key.asbytes()  # the plain key, also when the host sent a certificate
        key_type = known_hosts.blob_type(blob) or key.get_name()
        cert = key.public_blob.key_blob if key.public_blob is not None else None  # the host's certificate
        verdict = host_certs.decide(self.entries, name, self.target.hostname, (key_type, blob, cert), time.time(),
                                    _verify_ca_signature)  # fmt: skip
        if verdict.status != "trusted":
            presented = (key_type, known_hosts.fingerprint(blob))
            raise ssh_errors.host_key_refused(self.target, verdict, presented, self.loaded)  # out of connect()


def _connect_error(error: BaseException, target: SshTarget, keys: list[str], timeout: float) -> ConnectError:
    """Every other way connect can fail, as the one ConnectError that tells the operator what happened."""
    if isinstance(error, paramiko.PasswordRequiredException):
        return ssh_errors.auth_failed(target, keys, encrypted=True)
    if isinstance(error, paramiko.AuthenticationException) or "No authentication methods" in str(error):
        return ssh_errors.auth_failed(target, keys)
    return ssh_errors.handshake_failed(target, error, timeout)


def _transport_error(client: paramiko.SSHClient) -> BaseException | None:
    transport = client.get_transport()
    return transport.get_exception() if transport is not None else None


def _open_socket(target: SshTarget, timeout: float) -> socket.socket:
    try:
        sock = socket.create_connection((target.hostname, target.port), timeout=timeout)
    except OSError as error:
        raise ssh_errors.socket_failed(target, error, timeout) from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # paramiko never sets it: 40 ms per round trip
    return sock


def _verify_ca_signature(ca_blob: bytes, signed: bytes, signature: bytes) -> bool:
    """A certificate authority's signature over a host certificate (paramiko does the cryptography)."""
    try:
        ca = paramiko.PKey.from_type_string(known_hosts.blob_type(ca_blob) or "", ca_blob)
        return bool(ca.verify_ssh_sig(signed, paramiko.Message(signature)))
    except (paramiko.SSHException, ValueError, TypeError, IndexError):
        return False


def _tuned_transport(sock: Any, /, *, known_types: Sequence[str] = (), certificates: bool = False,
                     disabled_algorithms: Any = None, **_: Any) -> paramiko.Transport:  # fmt: skip
    transport = paramiko.Transport(
        sock,
        default_window_size=WINDOW_BYTES,
        default_max_packet_size=MAX_PACKET_BYTES,
        disabled_algorithms=disabled_algorithms,
    )
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
