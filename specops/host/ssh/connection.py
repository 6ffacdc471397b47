"""Connecting over SSH: a resolved target's socket (TCP, a ProxyCommand, or a channel through its last jump host),
the key exchange, the host key checked, authentication; `connect(spec)` hands back the SshHost (channels.py).

    host = connect(spec)                     # HostSpec: `ssh` resolved through ~/.ssh/config like OpenSSH
    with host:
        result = host.run(["systemctl", "is-active", "sglang"], timeout=10)
        host.put(unit_text.encode(), "/etc/systemd/system/sglang.service")
        tunnel = host.open_tunnel("127.0.0.1", 30000)   # socket-like; carries HTTP to the engine

paramiko is imported only here, in auth.py (the keys) and in channels.py (running commands); a layering test
enforces it. Everything else in specops/host/ssh/ is pure.
Security: host keys are checked strictly, for the host and for every jump host, against the known_hosts files
OpenSSH would read (~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts, or what User/GlobalKnownHostsFile in
~/.ssh/config name instead) and its RevokedHostKeys, read as OpenSSH reads them (hostkeys.py); an unknown,
revoked or changed key is refused, never added.
Bastions: a host behind ProxyJump is reached through a direct-tcpip channel of its last jump host, whose ONE
connection per run all hosts behind it share (shared.py); ProxyCommand gives a socket of its own
(proxycommand.py). Keys: ssh-agent and key files in OpenSSH's order (auth.py, keyorder.py), a passphrase
asked once per key and run (passphrase.py). Targets come from resolve.py (~/.ssh/config -> SshTarget with its
hops).
Speed (docs/performance.md): our own socket with TCP_NODELAY (3 ms per command instead of 43 ms), AES-GCM
first, a large receive window. Every paramiko or socket failure while connecting leaves this module as a
ConnectError (exit 4), never as a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specops.errors import ConnectError
from specops.host.ssh import errors, host_certs, known_hosts
from specops.host.ssh.auth import authenticate
from specops.host.ssh.channels import CONNECT_TIMEOUT_S, SshHost
from specops.host.ssh.hostkeys import HostKeyChecker, known_hosts_files
from specops.host.ssh.paramiko_import import lean_paramiko_import
from specops.host.ssh.proxycommand import ProxySocket, proxy_argv, start_proxy
from specops.host.ssh.resolve import resolve_ssh_target
from specops.host.ssh.shared import SharedConnections, register_at_exit
from specops.host.ssh.target import SshTarget

with lean_paramiko_import():
    import paramiko

if TYPE_CHECKING:
    from specops.host.ssh.target import Reach

# paramiko logs handshake failures with a traceback from its own thread; we raise ConnectError instead. A
# NullHandler keeps Python's last-resort handler from printing them (a configured root logger still sees them).
logging.getLogger("paramiko").addHandler(logging.NullHandler())

KEEPALIVE_S = 15
WINDOW_BYTES = 2**27  # what the host may send before we acknowledge: big outputs and get() stream freely
MAX_PACKET_BYTES = 2**18
RSA_SIGNATURES = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256")}  # an ssh-rsa key signs with these
FAST_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")

__all__ = ["connect", "open_ssh", "shared_hops"]


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
        keys = authenticate(transport, target)
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
